#include "gpu/device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <unistd.h>

#include "gpu/buffer.h"
#include "gpu/error.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_collector.h"
#include "gpu/shaders.h"

namespace vkllm::gpu {

struct Context::PipelineSlot {
    std::once_flag once;
    std::unique_ptr<Pipeline> pipeline;
    std::atomic<bool> ready{false};  // pipeline is set (release after it is written)
};

namespace {

std::atomic<uint64_t> g_validation_errors{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        bool error = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        if (error) g_validation_errors.fetch_add(1);
        std::fprintf(stderr, "vkllm: validation %s: %s\n", error ? "error" : "warning", data->pMessage);
    }
    return VK_FALSE;
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

std::string version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

// Drivers pack their versions differently; decode the known schemes.
std::string driver_version_string(uint32_t vendor, uint32_t v) {
    if (vendor == 0x10DE)  // NVIDIA: 10.8.8.6 bits
        return std::to_string(v >> 22) + "." + std::to_string((v >> 14) & 0xff) + "." +
               std::to_string((v >> 6) & 0xff) + "." + std::to_string(v & 0x3f);
    return version_string(v);
}

const char* device_type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
    }
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return !std::strcmp(e.extensionName, name); });
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice pd) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
    return exts;
}

// Whether matvec takes the int8 dot path: "1" where the device has the instruction at all (even
// emulated, as lavapipe's), "0" never, otherwise where the device says it is accelerated.
bool choose_integer_dot_matvec(const Capabilities& c, const std::string& wanted) {
    if (wanted == "0") return false;
    if (wanted == "1") return c.integer_dot_product;
    if (!wanted.empty())
        throw std::runtime_error("VKLLM_INTEGER_DOT='" + wanted + "' is not 0 or 1");
    return c.integer_dot_accelerated;
}

// The fp16 x fp16 -> fp32 shapes at subgroup scope that VK_NV_cooperative_matrix lists for `pd`.
std::vector<CooperativeMatrixShape> nv_coopmat_shapes(VkInstance instance, VkPhysicalDevice pd) {
    auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    std::vector<CooperativeMatrixShape> shapes;
    uint32_t n = 0;
    if (!list || list(pd, &n, nullptr) != VK_SUCCESS) return shapes;
    std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    if (list(pd, &n, props.data()) != VK_SUCCESS) return shapes;
    for (const VkCooperativeMatrixPropertiesNV& p : props)
        if (p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            p.scope == VK_SCOPE_SUBGROUP_NV)
            shapes.push_back({p.MSize, p.NSize, p.KSize});
    return shapes;
}

Capabilities query_capabilities(VkInstance instance, VkPhysicalDevice pd, uint32_t index) {
    auto exts = device_extensions(pd);
    Capabilities c;
    c.index = int(index);

    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceShaderIntegerDotProductProperties idot_props{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    const bool has_idot = has_extension(exts, "VK_KHR_shader_integer_dot_product");
    const bool has_nv_coopmat = has_extension(exts, "VK_NV_cooperative_matrix");
    VkPhysicalDeviceCooperativeMatrixPropertiesNV nv_coopmat_props{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    subgroup.pNext = &driver;
    driver.pNext = &maint3;
    if (has_idot) maint3.pNext = &idot_props;
    if (has_nv_coopmat) nv_coopmat_props.pNext = std::exchange(subgroup.pNext, &nv_coopmat_props);
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
    vkGetPhysicalDeviceProperties2(pd, &props);
    const VkPhysicalDeviceLimits& lim = props.properties.limits;

    c.name = props.properties.deviceName;
    c.type = device_type_name(props.properties.deviceType);
    c.vendor_id = props.properties.vendorID;
    c.device_id = props.properties.deviceID;
    c.api_version = version_string(props.properties.apiVersion);
    c.driver_version = driver_version_string(c.vendor_id, props.properties.driverVersion);
    c.driver_name = driver.driverName;
    c.driver_info = driver.driverInfo;

    c.subgroup_size = subgroup.subgroupSize;
    bool compute = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
    c.subgroup_basic = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    c.subgroup_arithmetic = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c.subgroup_shuffle = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    c.subgroup_ballot = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);

    c.max_shared_memory = lim.maxComputeSharedMemorySize;
    c.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) {
        c.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
        c.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
    }
    c.max_storage_buffer_range = lim.maxStorageBufferRange;
    c.max_memory_allocation_size = maint3.maxMemoryAllocationSize;
    c.min_storage_buffer_offset_alignment = lim.minStorageBufferOffsetAlignment;
    c.max_push_constants_size = lim.maxPushConstantsSize;
    c.timestamps = lim.timestampComputeAndGraphics;
    c.timestamp_period_ns = lim.timestampPeriod;

    VkPhysicalDeviceCooperativeMatrixFeaturesNV nv_coopmat{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
                                                         has_nv_coopmat ? &nv_coopmat : nullptr};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                         has_idot ? static_cast<void*>(&idot)
                                                  : has_nv_coopmat ? static_cast<void*>(&nv_coopmat) : nullptr};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    c.fp16_arithmetic = f12.shaderFloat16;
    c.int8_arithmetic = f12.shaderInt8;
    c.storage_8bit = f12.storageBuffer8BitAccess;
    c.storage_16bit = f11.storageBuffer16BitAccess;
    c.integer_dot_product = has_idot && idot.shaderIntegerDotProduct;
    c.integer_dot_accelerated = c.integer_dot_product && idot_props.integerDotProduct4x8BitPackedSignedAccelerated;
    c.integer_dot_matvec = choose_integer_dot_matvec(c, env_or("VKLLM_INTEGER_DOT", ""));
    c.cooperative_matrix = has_extension(exts, "VK_KHR_cooperative_matrix");
    // The memory model with device scope: once vulkanMemoryModel is on, every shader that uses
    // Device scope (memoryBarrierBuffer, buffer atomics) needs vulkanMemoryModelDeviceScope too.
    if (has_nv_coopmat && nv_coopmat.cooperativeMatrix && f12.shaderFloat16 && f12.vulkanMemoryModel &&
        f12.vulkanMemoryModelDeviceScope && c.subgroup_basic && (nv_coopmat_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
        c.cooperative_matrix_nv_shapes = nv_coopmat_shapes(instance, pd);
        c.cooperative_matrix_nv = !c.cooperative_matrix_nv_shapes.empty();
    }

    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    bool has_budget = has_extension(exts, "VK_EXT_memory_budget");
    VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                          has_budget ? &budget : nullptr};
    vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
    for (uint32_t i = 0; i < mem.memoryProperties.memoryHeapCount; ++i) {
        MemoryHeapInfo h;
        h.size = mem.memoryProperties.memoryHeaps[i].size;
        h.budget = has_budget ? budget.heapBudget[i] : 0;
        h.device_local = mem.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        c.heaps.push_back(h);
    }
    apply_limits_profile(c, env_or("VKLLM_LIMITS", "native"));
    return c;
}

VkInstance make_instance(bool validate, VkDebugUtilsMessengerEXT* messenger) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkllm";
    app.pEngineName = "vkllm";
    app.apiVersion = VK_API_VERSION_1_2;

    std::vector<const char*> layers, extensions;
    if (validate) {
        uint32_t n = 0;
        vkEnumerateInstanceLayerProperties(&n, nullptr);
        std::vector<VkLayerProperties> props(n);
        vkEnumerateInstanceLayerProperties(&n, props.data());
        bool found = std::any_of(props.begin(), props.end(),
                                 [](const auto& p) { return !std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation"); });
        if (!found)
            throw GpuError(GpuError::Kind::Unsupported, VK_ERROR_LAYER_NOT_PRESENT,
                           "VKLLM_VALIDATE=1 but the Khronos validation layer is not installed "
                           "(install the Debian package 'vulkan-validationlayers')");
        layers.push_back("VK_LAYER_KHRONOS_validation");
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    }
    // Synchronization validation (missing or wrong barriers between dispatches and copies) is
    // on with the layer, unless VKLLM_VALIDATE_SYNC=0.
    const VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync;
    const char* sync_env = std::getenv("VKLLM_VALIDATE_SYNC");
    const bool validate_sync = validate && !(sync_env && std::string(sync_env) == "0");
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    if (validate_sync) info.pNext = &features;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = uint32_t(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = uint32_t(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VkInstance instance = VK_NULL_HANDLE;
    VK_CHECK(vkCreateInstance(&info, nullptr, &instance));

    if (validate) {
        VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        m.pfnUserCallback = on_validation_message;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create) VK_CHECK(create(instance, &m, nullptr, messenger));
    }
    return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
    uint32_t n = 0;
    VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
    std::vector<VkPhysicalDevice> pds(n);
    VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, pds.data()));
    return pds;
}

// Default choice: the first discrete GPU, else integrated, else virtual, else a CPU driver.
// `from` says where `wanted` came from ("the VKLLM_DEVICE environment variable", "the device
// option"), so an error points at the right place.
uint32_t pick_device(const std::vector<Capabilities>& caps, const std::string& wanted, const std::string& from) {
    if (caps.empty())
        throw GpuError(GpuError::Kind::Unsupported, VK_ERROR_INITIALIZATION_FAILED,
                       "no Vulkan device found (install mesa-vulkan-drivers for a CPU fallback, or a GPU driver)");
    if (!wanted.empty()) {
        bool numeric = std::all_of(wanted.begin(), wanted.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        if (numeric) {
            if (wanted.size() < 9 && std::stoul(wanted) < caps.size()) return uint32_t(std::stoul(wanted));
        } else {
            std::string w = wanted;
            std::transform(w.begin(), w.end(), w.begin(), ::tolower);
            for (const auto& c : caps) {
                std::string n = c.name;
                std::transform(n.begin(), n.end(), n.begin(), ::tolower);
                if (n.find(w) != std::string::npos) return c.index;
            }
        }
        std::string list;
        for (const auto& c : caps) list += "\n  " + std::to_string(c.index) + ": " + c.name;
        throw GpuError(GpuError::Kind::Unsupported, VK_ERROR_INITIALIZATION_FAILED,
                       "no Vulkan device matches '" + wanted + "' (from " + from + "); devices are:" + list);
    }
    for (const char* type : {"discrete", "integrated", "virtual", "cpu", "other"})
        for (const auto& c : caps)
            if (c.type == type) return c.index;
    return 0;
}

}  // namespace

uint64_t validation_error_count() { return g_validation_errors.load(); }

void apply_limits_profile(Capabilities& c, const std::string& profile) {
    if (profile.empty() || profile == "native") return;
    if (profile != "mobile")
        throw std::runtime_error("VKLLM_LIMITS='" + profile + "' is not a known profile (use 'mobile' or 'native')");
    c.limits_profile = "mobile";
    c.max_storage_buffer_range = std::min<uint64_t>(c.max_storage_buffer_range, 128ull << 20);
    c.max_shared_memory = std::min<uint32_t>(c.max_shared_memory, 16u << 10);
    c.fp16_arithmetic = false;
    c.int8_arithmetic = false;
    c.integer_dot_product = false;
    c.integer_dot_accelerated = false;
    c.integer_dot_matvec = false;
    c.cooperative_matrix = false;
    c.cooperative_matrix_nv = false;
    c.cooperative_matrix_nv_shapes.clear();
    c.subgroup_arithmetic = false;
    c.subgroup_shuffle = false;
}

uint64_t device_local_bytes(const Capabilities& caps) {
    uint64_t total = 0;
    for (const auto& h : caps.heaps)
        if (h.device_local) total += h.size;
    return total;
}

std::vector<Capabilities> enumerate_devices() {
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkInstance instance = make_instance(false, &messenger);
    std::vector<Capabilities> out;
    try {
        auto pds = physical_devices(instance);
        for (uint32_t i = 0; i < pds.size(); ++i) out.push_back(query_capabilities(instance, pds[i], i));
    } catch (...) {
        vkDestroyInstance(instance, nullptr);
        throw;
    }
    vkDestroyInstance(instance, nullptr);
    return out;
}

std::unique_ptr<Context> Context::create(const ContextOptions& options) {
    std::unique_ptr<Context> ctx(new Context());
    bool validate = options.validate >= 0 ? options.validate == 1 : env_or("VKLLM_VALIDATE", "0") == "1";
    ctx->create_instance(validate);
    auto pds = physical_devices(ctx->instance_);
    std::vector<Capabilities> caps;
    for (uint32_t i = 0; i < pds.size(); ++i) caps.push_back(query_capabilities(ctx->instance_, pds[i], i));
    const bool from_env = options.device.empty();
    uint32_t index = pick_device(caps, from_env ? env_or("VKLLM_DEVICE", "") : options.device,
                                 from_env ? "the VKLLM_DEVICE environment variable" : "the device option");
    ctx->physical_ = pds[index];
    ctx->caps_ = caps[index];
    if (!options.limits.empty()) apply_limits_profile(ctx->caps_, options.limits);
    if (options.integer_dot >= 0)
        ctx->caps_.integer_dot_matvec = choose_integer_dot_matvec(ctx->caps_, options.integer_dot ? "1" : "0");
    ctx->create_device(index);
    if (options.pipeline_cache) ctx->load_pipeline_cache();
    return ctx;
}

void Context::create_instance(bool validate) {
    validation_ = validate;
    instance_ = make_instance(validate, &messenger_);
}

void Context::create_device(uint32_t) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, families.data());
    // Prefer a compute-only family (often a dedicated async-compute queue), else any with compute.
    int chosen = -1;
    for (uint32_t i = 0; i < n && chosen < 0; ++i)
        if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            chosen = int(i);
    for (uint32_t i = 0; i < n && chosen < 0; ++i)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) chosen = int(i);
    if (chosen < 0) throw_unsupported("device '" + caps_.name + "' has no compute queue");
    queue_family_ = uint32_t(chosen);
    if (families[queue_family_].timestampValidBits == 0) caps_.timestamps = false;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = queue_family_;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;

    std::vector<const char*> extensions;
    auto exts = device_extensions(physical_);
    if (has_extension(exts, "VK_EXT_memory_budget")) extensions.push_back("VK_EXT_memory_budget");

    // Features the ops use where the record says they exist: 16-bit storage (the F16 KV cache),
    // the integer dot product (matvec's int8 path).
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    idot.shaderIntegerDotProduct = VK_TRUE;
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    storage16.storageBuffer16BitAccess = caps_.storage_16bit ? VK_TRUE : VK_FALSE;
    if (caps_.integer_dot_matvec) {
        extensions.push_back("VK_KHR_shader_integer_dot_product");
        storage16.pNext = &idot;
    }
    // NVIDIA's cooperative matrices (the tensor-core matmul, matmul.comp COOPMAT) with the fp16
    // arithmetic and Vulkan memory model their SPIR-V declares (Float16, VulkanMemoryModel).
    VkPhysicalDeviceCooperativeMatrixFeaturesNV nv_coopmat{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    nv_coopmat.cooperativeMatrix = VK_TRUE;
    VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
                                                      &nv_coopmat};
    float16.shaderFloat16 = VK_TRUE;
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
                                                           &float16};
    memory_model.vulkanMemoryModel = VK_TRUE;
    memory_model.vulkanMemoryModelDeviceScope = VK_TRUE;
    void* features = &storage16;
    if (caps_.cooperative_matrix_nv) {
        extensions.push_back("VK_NV_cooperative_matrix");
        nv_coopmat.pNext = &storage16;
        features = &memory_model;
    }

    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = features;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &q;
    info.enabledExtensionCount = uint32_t(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VK_CHECK(vkCreateDevice(physical_, &info, nullptr, &device_));
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_props_);

    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool.queueFamilyIndex = queue_family_;
    VK_CHECK(vkCreateCommandPool(device_, &pool, nullptr, &one_off_pool_));
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CHECK(vkCreateFence(device_, &fence, nullptr, &one_off_fence_));
}

// The pipeline cache persists compiled shaders between runs, keyed by device and driver so a
// driver update never loads a stale cache.
void Context::load_pipeline_cache() {
    std::string base = env_or("XDG_CACHE_HOME", env_or("HOME", "/tmp") + "/.cache");
    char key[128];
    std::snprintf(key, sizeof key, "pipelines-%04x-%04x-%s.bin", caps_.vendor_id, caps_.device_id,
                  caps_.driver_version.c_str());
    pipeline_cache_path_ = base + "/vkllm/" + key;
    // The cache is optional: anything but a readable regular file (a directory, a device, a
    // read error) is ignored and the pipelines are compiled afresh.
    std::vector<char> data;
    std::error_code ec;
    if (std::filesystem::is_regular_file(pipeline_cache_path_, ec)) {
        try {
            std::ifstream f(pipeline_cache_path_, std::ios::binary);
            if (f) data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
            if (f.bad()) data.clear();
        } catch (const std::exception&) {
            data.clear();
        }
    }
    VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    // The header holds the vendor, device and cache UUID; drivers reject a mismatching cache.
    if (data.size() >= 32) {
        info.initialDataSize = data.size();
        info.pInitialData = data.data();
    }
    if (vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_) != VK_SUCCESS) {
        info.initialDataSize = 0;
        info.pInitialData = nullptr;
        VK_CHECK(vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_));
    }
    // The pipelines earlier runs created on this device (optional like the cache: unreadable
    // means none).
    std::error_code list_ec;
    if (std::filesystem::is_regular_file(pipeline_list_path(), list_ec)) {
        std::ifstream list(pipeline_list_path());
        for (std::string line; std::getline(list, line);)
            if (!line.empty()) known_pipelines_.insert(line);
    }
}

std::string Context::pipeline_list_path() const { return pipeline_cache_path_ + ".pipelines"; }

bool Context::compiled_new_pipelines() const {
    std::lock_guard<std::mutex> lock(pipelines_mutex_);
    return !new_pipelines_.empty();
}

// The pipeline list grows by this run's new keys, written as the cache is (temporary, rename).
void Context::save_pipeline_list() {
    std::lock_guard<std::mutex> lock(pipelines_mutex_);
    if (new_pipelines_.empty() || pipeline_cache_path_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(pipeline_cache_path_).parent_path(), ec);
    std::set<std::string> all = known_pipelines_;
    all.insert(new_pipelines_.begin(), new_pipelines_.end());
    const std::string list_tmp = pipeline_list_path() + ".tmp." + std::to_string(::getpid());
    bool list_ok = false;
    try {
        std::ofstream f(list_tmp);
        for (const std::string& key : all) f << key << '\n';
        f.close();
        list_ok = !f.fail();
    } catch (const std::exception&) {
        list_ok = false;
    }
    if (list_ok) std::filesystem::rename(list_tmp, pipeline_list_path(), ec);
    if (!list_ok || ec) std::filesystem::remove(list_tmp, ec);
}

void Context::save_pipeline_cache() {
    save_pipeline_list();
    if (!pipeline_cache_) return;
    size_t size = 0;
    if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
    std::vector<char> data(size);
    if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS) return;
    // Written to a temporary file of this process and renamed over the cache only when every
    // byte reached the disk: a full disk or an odd path keeps the previous cache as it was. A
    // cache that cannot be written only costs start-up time, so failures are silent.
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(pipeline_cache_path_).parent_path(), ec);
    const std::string tmp = pipeline_cache_path_ + ".tmp." + std::to_string(::getpid());
    bool ok = false;
    try {
        std::ofstream f(tmp, std::ios::binary);
        if (f) {
            f.write(data.data(), std::streamsize(size));
            f.flush();
            f.close();
            ok = !f.fail();
        }
    } catch (const std::exception&) {
        ok = false;
    }
    // A directory in the cache file's place is left alone (rename would fail on it anyway).
    bool renamed = false;
    if (ok && !std::filesystem::is_directory(pipeline_cache_path_, ec)) {
        std::filesystem::rename(tmp, pipeline_cache_path_, ec);
        renamed = !ec;
    }
    if (!renamed) std::filesystem::remove(tmp, ec);

}

Context::~Context() {
    if (device_) {
        vkDeviceWaitIdle(device_);
        pipelines_.clear();
        constants_.clear();
        save_pipeline_cache();
        if (pipeline_cache_) vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
        if (one_off_fence_) vkDestroyFence(device_, one_off_fence_, nullptr);
        if (one_off_pool_) vkDestroyCommandPool(device_, one_off_pool_, nullptr);
        vkDestroyDevice(device_, nullptr);
    }
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance_, messenger_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

struct Context::ConstantSlot {
    std::vector<uint8_t> bytes;
    Buffer buffer;
};

const Buffer& Context::constant_buffer(const std::string& key, std::span<const uint8_t> bytes) {
    if (bytes.empty()) throw std::invalid_argument("constant buffer '" + key + "' is empty");
    std::lock_guard<std::mutex> lock(constants_mutex_);
    auto it = constants_.find(key);
    if (it != constants_.end()) {
        const ConstantSlot& slot = *it->second;
        if (!std::equal(bytes.begin(), bytes.end(), slot.bytes.begin(), slot.bytes.end()))
            throw std::invalid_argument("constant buffer '" + key + "' was created with other bytes (" +
                                        std::to_string(slot.bytes.size()) + " then " +
                                        std::to_string(bytes.size()) + ")");
        return slot.buffer;
    }
    auto slot = std::make_unique<ConstantSlot>();
    slot->bytes.assign(bytes.begin(), bytes.end());
    // Storage bindings are read in whole 32-bit words: the buffer is zero-padded to one.
    std::vector<uint8_t> padded((bytes.size() + 3) / 4 * 4, 0);
    std::copy(bytes.begin(), bytes.end(), padded.begin());
    slot->buffer = Buffer(*this, padded.size(), Memory::Device);
    slot->buffer.upload(padded.data(), padded.size());
    const Buffer& b = slot->buffer;
    constants_.emplace(key, std::move(slot));
    return b;
}

uint32_t Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
    for (VkMemoryPropertyFlags want : {required | preferred, required})
        for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
            if ((type_bits & (1u << i)) && (memory_props_.memoryTypes[i].propertyFlags & want) == want) return i;
    throw GpuError(GpuError::Kind::Unsupported, VK_ERROR_FEATURE_NOT_PRESENT,
                   "device '" + caps_.name + "' has no memory type with the required properties");
}

bool log_pipelines() {
    static const bool log = env_or("VKLLM_LOG_PIPELINES", "0") == "1";
    return log;
}

const Pipeline& Context::pipeline(const std::string& shader, uint32_t n_buffers, uint32_t push_bytes,
                                  const std::vector<uint32_t>& spec_constants) {
    return pipeline(PipelineRequest{shader, n_buffers, push_bytes, spec_constants});
}

const Pipeline& Context::pipeline(const PipelineRequest& request) {
    const std::string key = request.key();
    std::shared_ptr<PipelineSlot> slot;
    {
        std::lock_guard<std::mutex> lock(pipelines_mutex_);
        auto it = pipelines_.find(key);
        if (it != pipelines_.end()) slot = it->second;
    }
    if (slot && slot->ready.load(std::memory_order_acquire)) return *slot->pipeline;
    if (PipelineCollector* collector = PipelineCollector::active(*this)) return collector->placeholder(request);
    if (!slot) {
        std::lock_guard<std::mutex> lock(pipelines_mutex_);
        slot = pipelines_.try_emplace(key, std::make_shared<PipelineSlot>()).first->second;
    }
    // A creation that throws leaves the slot empty; the next caller tries again.
    std::call_once(slot->once, [&] {
        slot->pipeline = std::make_unique<Pipeline>(*this, request.shader, request.n_buffers, request.push_bytes,
                                                    request.spec_constants);
        note_created(request);
        slot->ready.store(true, std::memory_order_release);
    });
    return *slot->pipeline;
}

// Known to earlier runs by name, specialization and code (FNV-1a of the SPIR-V words).
std::string Context::listed_name(const PipelineRequest& request) {
    const EmbeddedShader* spv = find_shader(request.shader);
    if (!spv) return request.key();
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < spv->size / 4; ++i) hash = (hash ^ spv->code[i]) * 1099511628211ull;
    char hex[20];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return request.key() + " " + hex;
}

void Context::note_created(const PipelineRequest& request) {
    const std::string listed = listed_name(request);
    std::lock_guard<std::mutex> lock(pipelines_mutex_);
    const bool is_new = !known_pipelines_.count(listed);
    if (is_new) new_pipelines_.push_back(listed);
    if (log_pipelines()) std::fprintf(stderr, "vkllm: pipeline %s%s\n", request.key().c_str(), is_new ? " (new)" : "");
}

size_t Context::pipeline_count() const {
    std::lock_guard<std::mutex> lock(pipelines_mutex_);
    size_t n = 0;
    for (const auto& [key, slot] : pipelines_) n += slot->ready.load(std::memory_order_acquire) ? 1 : 0;
    return n;
}

bool Context::created_before(const PipelineRequest& request) const {
    return known_pipelines_.count(listed_name(request)) > 0;  // set at creation, only read after
}

bool Context::compiles_at_first_dispatch() const { return caps_.driver_name == "llvmpipe"; }

ContextOptions Context::sibling_options() const {
    ContextOptions o;
    o.device = std::to_string(caps_.index);
    o.validate = 0;
    o.limits = caps_.limits_profile;
    o.integer_dot = caps_.integer_dot_matvec ? 1 : 0;
    o.pipeline_cache = false;
    return o;
}

void Context::submit(const VkSubmitInfo& info, VkFence fence) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    VK_CHECK(vkQueueSubmit(queue_, 1, &info, fence));
}

VkCommandBuffer Context::begin_one_off() {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = one_off_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VK_CHECK(vkAllocateCommandBuffers(device_, &alloc, &cb));
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VK_CHECK(vkBeginCommandBuffer(cb, &begin));
    return cb;
}

void Context::end_one_off(VkCommandBuffer cb) {
    VK_CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb;
    VK_CHECK(vkResetFences(device_, 1, &one_off_fence_));
    this->submit(submit, one_off_fence_);
    VK_CHECK(vkWaitForFences(device_, 1, &one_off_fence_, VK_TRUE, UINT64_MAX));
    vkFreeCommandBuffers(device_, one_off_pool_, 1, &cb);
}

}  // namespace vkllm::gpu
