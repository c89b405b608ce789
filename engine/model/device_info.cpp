// vkllm::DeviceInfo: a device's capability record (gpu::Capabilities is vkllm::DeviceCapabilities)
// with the vendor's name, the device-local total and the mobile clamp's changes (vkllm info).
#include <functional>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gpu/device.h"
#include "model/model_internal.h"
#include "vkllm/device.h"

namespace vkllm {
namespace {

// PCI vendor ids (and Khronos' ids for vendors without one) as names; unknown ids in hex.
std::string vendor_name(uint32_t id) {
    switch (id) {
        case 0x1002: return "AMD";
        case 0x10DE: return "NVIDIA";
        case 0x8086: return "Intel";
        case 0x106B: return "Apple";
        case 0x13B5: return "ARM";
        case 0x5143: return "Qualcomm";
        case 0x1010: return "Imagination";
        case 0x144D: return "Samsung";
        case 0x14E4: return "Broadcom";
        case 0x10005: return "Mesa";  // VK_VENDOR_ID_MESA: lavapipe and other software drivers
        default: break;
    }
    std::ostringstream s;
    s << "0x" << std::hex << id;
    return s.str();
}

// The capability fields a limits profile may clamp, each rendered as text, so the mobile clamp's
// effect on a device is the list of those whose text changes.
struct ClampField {
    const char* name;
    std::function<std::string(const gpu::Capabilities&)> text;
};

std::vector<ClampField> clamp_fields() {
    auto number = [](auto get) { return [get](const gpu::Capabilities& c) { return std::to_string(get(c)); }; };
    auto flag = [](auto get) { return [get](const gpu::Capabilities& c) { return std::string(get(c) ? "true" : "false"); }; };
    return {
        {"subgroup_size", number([](const gpu::Capabilities& c) { return c.subgroup_size; })},
        {"subgroup_basic", flag([](const gpu::Capabilities& c) { return c.subgroup_basic; })},
        {"subgroup_arithmetic", flag([](const gpu::Capabilities& c) { return c.subgroup_arithmetic; })},
        {"subgroup_shuffle", flag([](const gpu::Capabilities& c) { return c.subgroup_shuffle; })},
        {"subgroup_ballot", flag([](const gpu::Capabilities& c) { return c.subgroup_ballot; })},
        {"max_shared_memory", number([](const gpu::Capabilities& c) { return c.max_shared_memory; })},
        {"max_workgroup_invocations", number([](const gpu::Capabilities& c) { return c.max_workgroup_invocations; })},
        {"max_storage_buffer_range", number([](const gpu::Capabilities& c) { return c.max_storage_buffer_range; })},
        {"max_memory_allocation_size", number([](const gpu::Capabilities& c) { return c.max_memory_allocation_size; })},
        {"fp16_arithmetic", flag([](const gpu::Capabilities& c) { return c.fp16_arithmetic; })},
        {"int8_arithmetic", flag([](const gpu::Capabilities& c) { return c.int8_arithmetic; })},
        {"storage_8bit", flag([](const gpu::Capabilities& c) { return c.storage_8bit; })},
        {"storage_16bit", flag([](const gpu::Capabilities& c) { return c.storage_16bit; })},
        {"integer_dot_product", flag([](const gpu::Capabilities& c) { return c.integer_dot_product; })},
        {"integer_dot_matvec", flag([](const gpu::Capabilities& c) { return c.integer_dot_matvec; })},
        {"cooperative_matrix", flag([](const gpu::Capabilities& c) { return c.cooperative_matrix; })},
        {"cooperative_matrix_nv", flag([](const gpu::Capabilities& c) { return c.cooperative_matrix_nv; })},
        {"timestamps", flag([](const gpu::Capabilities& c) { return c.timestamps; })},
    };
}

std::vector<std::string> mobile_clamp_changes(const gpu::Capabilities& caps) {
    gpu::Capabilities clamped = caps;
    gpu::apply_limits_profile(clamped, "mobile");
    std::vector<std::string> changes;
    for (const ClampField& f : clamp_fields()) {
        const std::string before = f.text(caps), after = f.text(clamped);
        if (before != after) changes.push_back(std::string(f.name) + ": " + before + " -> " + after);
    }
    return changes;
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
const char* yes(bool b) { return b ? "yes" : "no"; }

}  // namespace

DeviceInfo detail::device_info(const gpu::Capabilities& c) {
    DeviceInfo d;
    static_cast<DeviceCapabilities&>(d) = c;
    d.vendor = vendor_name(c.vendor_id);
    d.device_local_bytes = gpu::device_local_bytes(c);
    d.mobile_clamp_changes = mobile_clamp_changes(c);
    return d;
}

std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> out;
    for (const gpu::Capabilities& c : gpu::enumerate_devices()) out.push_back(detail::device_info(c));
    return out;
}

std::string DeviceInfo::to_text() const {
    std::ostringstream s;
    s << "device " << index << ": " << name << " (" << type << ")\n";
    s << "  vendor 0x" << std::hex << vendor_id << " (" << std::dec << vendor << "), device 0x" << std::hex << device_id
      << std::dec << "\n";
    s << "  Vulkan " << api_version << ", driver " << driver_name << " " << driver_version;
    if (!driver_info.empty()) s << " (" << driver_info << ")";
    s << "\n";
    s << "  limits profile: " << limits_profile << "\n";
    s << "  subgroup: size " << subgroup_size << ", basic " << yes(subgroup_basic) << ", arithmetic "
      << yes(subgroup_arithmetic) << ", shuffle " << yes(subgroup_shuffle) << ", ballot " << yes(subgroup_ballot) << "\n";
    s << "  shared memory " << max_shared_memory << " bytes, workgroup invocations " << max_workgroup_invocations
      << ", size " << max_workgroup_size[0] << "x" << max_workgroup_size[1] << "x" << max_workgroup_size[2]
      << ", count " << max_workgroup_count[0] << "x" << max_workgroup_count[1] << "x" << max_workgroup_count[2] << "\n";
    s << "  maxStorageBufferRange " << mib(max_storage_buffer_range) << ", maxMemoryAllocationSize "
      << mib(max_memory_allocation_size) << ", storage offset alignment " << min_storage_buffer_offset_alignment
      << ", push constants " << max_push_constants_size << " bytes\n";
    for (size_t i = 0; i < heaps.size(); ++i) {
        s << "  heap " << i << ": " << mib(heaps[i].size) << (heaps[i].device_local ? " device-local" : " host");
        if (heaps[i].budget) s << ", budget " << mib(heaps[i].budget);
        s << "\n";
    }
    s << "  fp16 arithmetic " << yes(fp16_arithmetic) << ", int8 arithmetic " << yes(int8_arithmetic)
      << ", 8-bit storage " << yes(storage_8bit) << ", 16-bit storage " << yes(storage_16bit) << "\n";
    s << "  integer dot product " << yes(integer_dot_product);
    if (integer_dot_product)
        s << " (" << (integer_dot_accelerated ? "accelerated" : "not accelerated") << "; int8 matvec "
          << (integer_dot_matvec ? "on" : "off") << ")";
    s << ", cooperative matrix " << yes(cooperative_matrix)
      << ", timestamps " << yes(timestamps) << " (period " << timestamp_period_ns << " ns)\n";
    s << "  NV cooperative matrix (tensor-core prompt matmul) " << yes(cooperative_matrix_nv);
    for (size_t i = 0; i < cooperative_matrix_nv_shapes.size(); ++i) {
        const CooperativeMatrixShape& m = cooperative_matrix_nv_shapes[i];
        s << (i ? ", " : ": fp16 -> fp32 ") << m.m << "x" << m.n << "x" << m.k;
    }
    s << "\n";
    if (limits_profile == "mobile") {
        s << "  mobile clamp (VKLLM_LIMITS=mobile): in force\n";
    } else if (mobile_clamp_changes.empty()) {
        s << "  mobile clamp (VKLLM_LIMITS=mobile): changes nothing\n";
    } else {
        s << "  mobile clamp (VKLLM_LIMITS=mobile) changes:\n";
        for (const std::string& c : mobile_clamp_changes) s << "    " << c << "\n";
    }
    return s.str();
}

std::string DeviceInfo::to_json() const {
    // ordered_json keeps the fields in the order `vkllm info --json` has always printed them.
    nlohmann::ordered_json j;
    j["index"] = index;
    j["name"] = name;
    j["type"] = type;
    j["vendor"] = vendor;
    j["vendor_id"] = vendor_id;
    j["device_id"] = device_id;
    j["api_version"] = api_version;
    j["driver_version"] = driver_version;
    j["driver_name"] = driver_name;
    j["driver_info"] = driver_info;
    j["limits_profile"] = limits_profile;
    j["subgroup_size"] = subgroup_size;
    j["subgroup_basic"] = subgroup_basic;
    j["subgroup_arithmetic"] = subgroup_arithmetic;
    j["subgroup_shuffle"] = subgroup_shuffle;
    j["subgroup_ballot"] = subgroup_ballot;
    j["max_shared_memory"] = max_shared_memory;
    j["max_workgroup_invocations"] = max_workgroup_invocations;
    j["max_workgroup_size"] = {max_workgroup_size[0], max_workgroup_size[1], max_workgroup_size[2]};
    j["max_workgroup_count"] = {max_workgroup_count[0], max_workgroup_count[1], max_workgroup_count[2]};
    j["max_storage_buffer_range"] = max_storage_buffer_range;
    j["max_memory_allocation_size"] = max_memory_allocation_size;
    j["min_storage_buffer_offset_alignment"] = min_storage_buffer_offset_alignment;
    j["max_push_constants_size"] = max_push_constants_size;
    j["device_local_bytes"] = device_local_bytes;
    j["heaps"] = nlohmann::ordered_json::array();
    for (const MemoryHeapInfo& h : heaps)
        j["heaps"].push_back({{"size", h.size}, {"budget", h.budget}, {"device_local", h.device_local}});
    j["fp16_arithmetic"] = fp16_arithmetic;
    j["int8_arithmetic"] = int8_arithmetic;
    j["storage_8bit"] = storage_8bit;
    j["storage_16bit"] = storage_16bit;
    j["integer_dot_product"] = integer_dot_product;
    j["integer_dot_accelerated"] = integer_dot_accelerated;
    j["integer_dot_matvec"] = integer_dot_matvec;
    j["cooperative_matrix"] = cooperative_matrix;
    j["cooperative_matrix_nv"] = cooperative_matrix_nv;
    j["cooperative_matrix_nv_shapes"] = nlohmann::ordered_json::array();
    for (const CooperativeMatrixShape& m : cooperative_matrix_nv_shapes)
        j["cooperative_matrix_nv_shapes"].push_back({m.m, m.n, m.k});
    j["timestamps"] = timestamps;
    j["timestamp_period_ns"] = timestamp_period_ns;
    j["mobile_clamp_changes"] = mobile_clamp_changes;
    // Driver strings are not always valid UTF-8; replace what is not rather than throw.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace vkllm
