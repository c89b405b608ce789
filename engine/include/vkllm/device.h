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

// A cooperative-matrix product shape: A is m x k, B k x n, the accumulator m x n.
struct CooperativeMatrixShape {
    uint32_t m = 0, n = 0, k = 0;
};

// A device's capability record: what the engine's kernels choose their variants from. The
// engine's Vulkan layer fills it (its gpu::Capabilities is this record); DeviceInfo, below, is
// the record with what a person reads beside it.
struct DeviceCapabilities {
    int index = 0;                 // position in Vulkan's enumeration order (--device INDEX)
    std::string name;              // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
    uint32_t vendor_id = 0, device_id = 0;
    std::string type;              // "discrete", "integrated", "virtual", "cpu", "other"
    std::string api_version;       // "1.3.239"
    std::string driver_name, driver_version, driver_info;  // the version vendor-decoded when known
    std::vector<MemoryHeapInfo> heaps;

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
    bool fp16_arithmetic = false;   // shaderFloat16
    bool int8_arithmetic = false;   // shaderInt8
    bool storage_8bit = false;      // storageBuffer8BitAccess
    bool storage_16bit = false;     // storageBuffer16BitAccess
    bool integer_dot_product = false;      // VK_KHR_shader_integer_dot_product with shaderIntegerDotProduct
    bool integer_dot_accelerated = false;  // the device says its 4x8-bit signed dot is accelerated
    // Quantised matvecs with 8-bit activations dot in int8 (shaders/matvec.comp INT_DOT): where
    // the device accelerates it, or where VKLLM_INTEGER_DOT=1 asks (0: never).
    bool integer_dot_matvec = false;
    bool cooperative_matrix = false;       // VK_KHR_cooperative_matrix
    // VK_NV_cooperative_matrix (NVIDIA's tensor cores) with what the tensor-core matmul needs
    // beside it (shaderFloat16, the Vulkan memory model, subgroup basics), and the fp16 x fp16 ->
    // fp32 shapes at subgroup scope the device lists, in its order of preference; empty without.
    bool cooperative_matrix_nv = false;
    std::vector<CooperativeMatrixShape> cooperative_matrix_nv_shapes;
    bool timestamps = false;
    float timestamp_period_ns = 1.0f;  // nanoseconds per timestamp tick

    // "native", or "mobile" when VKLLM_LIMITS=mobile clamps the record.
    std::string limits_profile = "native";
};

// A device as a front-end shows it: its capability record, the vendor's name, the sum of its
// device-local heaps, and what the mobile clamp would change.
struct DeviceInfo : DeviceCapabilities {
    std::string vendor;            // "NVIDIA", "AMD", "Intel", "Apple", "ARM", "Qualcomm", "Mesa", or the id in hex
    uint64_t device_local_bytes = 0;  // sum of device-local heaps

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
