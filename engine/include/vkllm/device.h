// Vulkan devices as a front-end sees them: what each one is and what it can do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkllm {

// One memory heap of a device.
struct MemoryHeapInfo {
    uint64_t size = 0;
    uint64_t budget = 0;  // what the driver says this process may use; 0 when it does not say
    bool device_local = false;
};

// A device and its capability record (what the engine's kernels choose their variants from).
struct DeviceInfo {
    int index = 0;                 // position in Vulkan's enumeration order (--device INDEX)
    std::string name;              // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
    std::string vendor;            // "NVIDIA", "AMD", "Intel", "Apple", "ARM", "Qualcomm", "Mesa", or the id in hex
    uint32_t vendor_id = 0, device_id = 0;
    std::string type;              // "discrete", "integrated", "virtual", "cpu", "other"
    std::string api_version;       // "1.3.239"
    std::string driver_name, driver_version, driver_info;
    uint64_t device_local_bytes = 0;  // sum of device-local heaps
    std::vector<MemoryHeapInfo> heaps;

    // The capability record.
    uint32_t subgroup_size = 1;
    bool subgroup_arithmetic = false;
    bool subgroup_basic = false, subgroup_shuffle = false, subgroup_ballot = false;
    uint32_t max_shared_memory = 0;            // bytes per workgroup
    uint32_t max_workgroup_invocations = 0;
    uint32_t max_workgroup_size[3] = {0, 0, 0};
    uint32_t max_workgroup_count[3] = {0, 0, 0};
    uint64_t max_storage_buffer_range = 0;     // largest binding in bytes
    uint64_t max_memory_allocation_size = 0;
    uint64_t min_storage_buffer_offset_alignment = 1;
    uint32_t max_push_constants_size = 0;
    bool fp16_arithmetic = false, int8_arithmetic = false;
    bool storage_8bit = false, storage_16bit = false;
    bool integer_dot_product = false, cooperative_matrix = false;
    bool integer_dot_accelerated = false;  // the device says its 4x8-bit signed dot is accelerated
    bool integer_dot_matvec = false;       // quantised matvecs dot in int8 (VKLLM_INTEGER_DOT=0/1 overrides)
    bool timestamps = false;
    float timestamp_period_ns = 1.0f;  // nanoseconds per timestamp tick

    // "native", or "mobile" when VKLLM_LIMITS=mobile clamps the record.
    std::string limits_profile = "native";
    // What the mobile clamp changes on this device, one line each ("max_storage_buffer_range:
    // 2147483648 -> 134217728"); empty when it changes nothing (also when limits_profile is
    // already "mobile": the record is clamped).
    std::vector<std::string> mobile_clamp_changes;

    std::string to_text() const;  // several lines for a person (vkllm info)
    std::string to_json() const;  // one JSON object (vkllm info --json's fields)
};

// Every Vulkan device, with VKLLM_LIMITS applied to its record. Creates no logical device.
// Throws std::runtime_error when Vulkan itself cannot start (no loader, no driver).
std::vector<DeviceInfo> devices();

// Errors the Khronos validation layer reported in this process (VKLLM_VALIDATE=1; 0 without it).
// Front-ends make a run that had any fail (vkllm exits non-zero).
uint64_t validation_error_count();

}  // namespace vkllm
