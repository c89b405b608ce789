// Text and JSON renderings of the capability record (vkllm info).
#include <sstream>

#include "gpu/device.h"

namespace vkllm::gpu {
namespace {

std::string mib(uint64_t bytes) {
    std::ostringstream s;
    s << (bytes >> 20) << " MiB";
    return s.str();
}

std::string json_string(const std::string& v) {
    std::string out = "\"";
    for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out += c;
    }
    return out + "\"";
}

const char* yes(bool b) { return b ? "yes" : "no"; }
const char* jbool(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string Capabilities::to_text() const {
    std::ostringstream s;
    s << "device " << index << ": " << name << " (" << type << ")\n";
    s << "  vendor 0x" << std::hex << vendor_id << ", device 0x" << device_id << std::dec << "\n";
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
    s << "  integer dot product " << yes(integer_dot_product) << ", cooperative matrix " << yes(cooperative_matrix)
      << ", timestamps " << yes(timestamps) << " (period " << timestamp_period_ns << " ns)\n";
    return s.str();
}

std::string Capabilities::to_json() const {
    std::ostringstream s;
    s << "{\"index\": " << index << ", \"name\": " << json_string(name) << ", \"type\": " << json_string(type)
      << ", \"vendor_id\": " << vendor_id << ", \"device_id\": " << device_id
      << ", \"api_version\": " << json_string(api_version) << ", \"driver_version\": " << json_string(driver_version)
      << ", \"driver_name\": " << json_string(driver_name) << ", \"driver_info\": " << json_string(driver_info)
      << ", \"limits_profile\": " << json_string(limits_profile) << ", \"subgroup_size\": " << subgroup_size
      << ", \"subgroup_basic\": " << jbool(subgroup_basic) << ", \"subgroup_arithmetic\": " << jbool(subgroup_arithmetic)
      << ", \"subgroup_shuffle\": " << jbool(subgroup_shuffle) << ", \"subgroup_ballot\": " << jbool(subgroup_ballot)
      << ", \"max_shared_memory\": " << max_shared_memory
      << ", \"max_workgroup_invocations\": " << max_workgroup_invocations << ", \"max_workgroup_size\": ["
      << max_workgroup_size[0] << ", " << max_workgroup_size[1] << ", " << max_workgroup_size[2]
      << "], \"max_workgroup_count\": [" << max_workgroup_count[0] << ", " << max_workgroup_count[1] << ", "
      << max_workgroup_count[2] << "], \"max_storage_buffer_range\": " << max_storage_buffer_range
      << ", \"max_memory_allocation_size\": " << max_memory_allocation_size
      << ", \"min_storage_buffer_offset_alignment\": " << min_storage_buffer_offset_alignment
      << ", \"max_push_constants_size\": " << max_push_constants_size << ", \"heaps\": [";
    for (size_t i = 0; i < heaps.size(); ++i)
        s << (i ? ", " : "") << "{\"size\": " << heaps[i].size << ", \"budget\": " << heaps[i].budget
          << ", \"device_local\": " << jbool(heaps[i].device_local) << "}";
    s << "], \"fp16_arithmetic\": " << jbool(fp16_arithmetic) << ", \"int8_arithmetic\": " << jbool(int8_arithmetic)
      << ", \"storage_8bit\": " << jbool(storage_8bit) << ", \"storage_16bit\": " << jbool(storage_16bit)
      << ", \"integer_dot_product\": " << jbool(integer_dot_product)
      << ", \"cooperative_matrix\": " << jbool(cooperative_matrix) << ", \"timestamps\": " << jbool(timestamps)
      << ", \"timestamp_period_ns\": " << timestamp_period_ns << "}";
    return s.str();
}

}  // namespace vkllm::gpu
