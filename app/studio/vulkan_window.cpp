#include "vulkan_window.h"

#include "key_event_queue.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#define GLFW_INCLUDE_NONE
#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace vkllm::studio {

namespace {

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(int(r)) + ")");
}

void check_imgui(VkResult r) {
    if (r < 0) fprintf(stderr, "vkllm-studio: ImGui's Vulkan backend: VkResult %d\n", int(r));
}

bool has_layer(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vkEnumerateInstanceLayerProperties(&n, layers.data());
    for (const VkLayerProperties& l : layers)
        if (std::strcmp(l.layerName, name) == 0) return true;
    return false;
}

// Keys and characters from GLFW wait in a queue and reach ImGui's GLFW backend a frame's worth at
// a time, before each NewFrame (key_event_queue.h says why and how much).
GLFWkeyfun g_imgui_key_callback = nullptr;
GLFWcharfun g_imgui_char_callback = nullptr;
GLFWwindow* g_key_window = nullptr;
KeyEventQueue g_keys(GLFW_PRESS, GLFW_RELEASE);

void key_callback(GLFWwindow*, int key, int scancode, int action, int mods) { g_keys.push_key(key, scancode, action, mods); }
void char_callback(GLFWwindow*, unsigned int c) { g_keys.push_char(c); }

void deliver_keys_for_frame() {
    g_keys.deliver_frame([](const KeyEvent& e) {
        if (e.kind == KeyEvent::Kind::Key) {
            if (g_imgui_key_callback) g_imgui_key_callback(g_key_window, e.key, e.scancode, e.action, e.mods);
        } else if (g_imgui_char_callback) {
            g_imgui_char_callback(g_key_window, e.codepoint);
        }
    });
}

}  // namespace

VkBool32 on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                               const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        static_cast<VulkanWindow*>(user)->validation_messages_++;
        fprintf(stderr, "vkllm-studio: validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

VulkanWindow::VulkanWindow(const WindowOptions& o) : options_(o) {
    glfwSetErrorCallback([](int code, const char* text) { fprintf(stderr, "vkllm-studio: GLFW %d: %s\n", code, text); });
    if (!glfwInit()) throw std::runtime_error("GLFW could not start (is there a display? set DISPLAY or run under Xvfb)");
    if (!glfwVulkanSupported()) throw std::runtime_error("GLFW finds no Vulkan loader");
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
    window_ = glfwCreateWindow(o.width, o.height, o.title.c_str(), nullptr, nullptr);
    if (!window_) throw std::runtime_error("GLFW could not open a window");

    // Instance
    uint32_t n_ext = 0;
    const char** glfw_ext = glfwGetRequiredInstanceExtensions(&n_ext);
    std::vector<const char*> extensions(glfw_ext, glfw_ext + n_ext);
    std::vector<const char*> layers;
    const bool validate = o.validation && has_layer("VK_LAYER_KHRONOS_validation");
    if (validate) {
        layers.push_back("VK_LAYER_KHRONOS_validation");
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkllm-studio";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    ici.enabledExtensionCount = uint32_t(extensions.size());
    ici.ppEnabledExtensionNames = extensions.data();
    ici.enabledLayerCount = uint32_t(layers.size());
    ici.ppEnabledLayerNames = layers.data();
    check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance (drawing)");
    if (validate) {
        VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mci.pfnUserCallback = on_validation_message;
        mci.pUserData = this;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        if (create) check(create(instance_, &mci, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
    check(glfwCreateWindowSurface(instance_, window_, nullptr, &surface_), "glfwCreateWindowSurface");

    // A device with a queue that draws and presents to the surface (discrete first).
    uint32_t n_dev = 0;
    vkEnumeratePhysicalDevices(instance_, &n_dev, nullptr);
    std::vector<VkPhysicalDevice> devices(n_dev);
    vkEnumeratePhysicalDevices(instance_, &n_dev, devices.data());
    int best_rank = -1;
    for (VkPhysicalDevice d : devices) {
        uint32_t n_q = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(d, &n_q, nullptr);
        std::vector<VkQueueFamilyProperties> qs(n_q);
        vkGetPhysicalDeviceQueueFamilyProperties(d, &n_q, qs.data());
        for (uint32_t i = 0; i < n_q; ++i) {
            VkBool32 present = VK_FALSE;
            vkGetPhysicalDeviceSurfaceSupportKHR(d, i, surface_, &present);
            if (!(qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) || !present) continue;
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(d, &p);
            const int rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 3
                             : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                                                                                      : 1;
            if (rank > best_rank) best_rank = rank, physical_ = d, queue_family_ = i;
            break;
        }
    }
    if (!physical_) throw std::runtime_error("no Vulkan device can draw to this window");
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = queue_family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    const char* device_ext[] = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = 1;
    dci.ppEnabledExtensionNames = device_ext;
    check(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice (drawing)");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

    VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 16};
    VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    dpci.maxSets = 16;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &pool_size;
    check(vkCreateDescriptorPool(device_, &dpci, nullptr, &descriptor_pool_), "vkCreateDescriptorPool");
    VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpci.queueFamilyIndex = queue_family_;
    check(vkCreateCommandPool(device_, &cpci, nullptr, &command_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = command_pool_;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device_, &cbai, &cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    fci.flags = VK_FENCE_CREATE_SIGNALED_BIT;
    check(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    check(vkCreateSemaphore(device_, &sci, nullptr, &acquired_), "vkCreateSemaphore");
    check(vkCreateSemaphore(device_, &sci, nullptr, &rendered_), "vkCreateSemaphore");

    // Surface format: 8-bit UNORM BGRA or RGBA (ImGui's colours are meant for a UNORM target).
    uint32_t n_fmt = 0;
    vkGetPhysicalDeviceSurfaceFormatsKHR(physical_, surface_, &n_fmt, nullptr);
    std::vector<VkSurfaceFormatKHR> formats(n_fmt);
    vkGetPhysicalDeviceSurfaceFormatsKHR(physical_, surface_, &n_fmt, formats.data());
    if (formats.empty()) throw std::runtime_error("the window's surface offers no format");
    format_ = formats[0];
    for (const VkSurfaceFormatKHR& f : formats)
        if (f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) {
            format_ = f;
            break;
        }

    VkAttachmentDescription color{};
    color.format = format_.format;
    color.samples = VK_SAMPLE_COUNT_1_BIT;
    color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    color.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    color.finalLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
    VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription subpass{};
    subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    subpass.colorAttachmentCount = 1;
    subpass.pColorAttachments = &ref;
    VkSubpassDependency dep{};
    dep.srcSubpass = VK_SUBPASS_EXTERNAL;
    dep.dstSubpass = 0;
    dep.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    dep.dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    dep.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    VkRenderPassCreateInfo rpci{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rpci.attachmentCount = 1;
    rpci.pAttachments = &color;
    rpci.subpassCount = 1;
    rpci.pSubpasses = &subpass;
    rpci.dependencyCount = 1;
    rpci.pDependencies = &dep;
    check(vkCreateRenderPass(device_, &rpci, nullptr, &render_pass_), "vkCreateRenderPass");

    create_swapchain();

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui_ImplGlfw_InitForVulkan(window_, true);
    g_key_window = window_;
    g_imgui_key_callback = glfwSetKeyCallback(window_, key_callback);
    g_imgui_char_callback = glfwSetCharCallback(window_, char_callback);
    ImGui_ImplVulkan_InitInfo ii{};
    ii.Instance = instance_;
    ii.PhysicalDevice = physical_;
    ii.Device = device_;
    ii.QueueFamily = queue_family_;
    ii.Queue = queue_;
    ii.DescriptorPool = descriptor_pool_;
    ii.MinImageCount = min_images_;
    ii.ImageCount = uint32_t(images_.size());
    ii.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
    ii.CheckVkResultFn = check_imgui;
    ImGui_ImplVulkan_Init(&ii, render_pass_);
    imgui_ready_ = true;
}

VulkanWindow::~VulkanWindow() {
    if (device_) vkDeviceWaitIdle(device_);
    if (imgui_ready_) {
        ImGui_ImplVulkan_Shutdown();
        ImGui_ImplGlfw_Shutdown();
        ImGui::DestroyContext();
        g_keys.clear();  // taps still queued belonged to this window
        g_key_window = nullptr;
    }
    if (device_) {
        destroy_swapchain();
        vkDestroyRenderPass(device_, render_pass_, nullptr);
        vkDestroySemaphore(device_, acquired_, nullptr);
        vkDestroySemaphore(device_, rendered_, nullptr);
        vkDestroyFence(device_, fence_, nullptr);
        vkDestroyCommandPool(device_, command_pool_, nullptr);
        vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
        vkDestroyDevice(device_, nullptr);
    }
    if (surface_) vkDestroySurfaceKHR(instance_, surface_, nullptr);
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance_, messenger_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
    if (window_) glfwDestroyWindow(window_);
    glfwTerminate();
}

void VulkanWindow::create_swapchain() {
    VkSurfaceCapabilitiesKHR caps;
    check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(physical_, surface_, &caps), "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
    int w = 0, h = 0;
    glfwGetFramebufferSize(window_, &w, &h);
    extent_ = caps.currentExtent.width != UINT32_MAX ? caps.currentExtent : VkExtent2D{uint32_t(w), uint32_t(h)};
    extent_.width = std::clamp(extent_.width, caps.minImageExtent.width, caps.maxImageExtent.width);
    extent_.height = std::clamp(extent_.height, caps.minImageExtent.height, caps.maxImageExtent.height);
    if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT))
        throw std::runtime_error("the window's swapchain images cannot be read back (no TRANSFER_SRC usage)");

    uint32_t n_modes = 0;
    vkGetPhysicalDeviceSurfacePresentModesKHR(physical_, surface_, &n_modes, nullptr);
    std::vector<VkPresentModeKHR> modes(n_modes);
    vkGetPhysicalDeviceSurfacePresentModesKHR(physical_, surface_, &n_modes, modes.data());
    VkPresentModeKHR mode = VK_PRESENT_MODE_FIFO_KHR;
    if (!options_.vsync)
        for (VkPresentModeKHR want : {VK_PRESENT_MODE_IMMEDIATE_KHR, VK_PRESENT_MODE_MAILBOX_KHR})
            if (std::find(modes.begin(), modes.end(), want) != modes.end()) {
                mode = want;
                break;
            }
    min_images_ = std::max(2u, caps.minImageCount);
    if (caps.maxImageCount) min_images_ = std::min(min_images_, caps.maxImageCount);

    VkSwapchainCreateInfoKHR sci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    sci.surface = surface_;
    sci.minImageCount = min_images_;
    sci.imageFormat = format_.format;
    sci.imageColorSpace = format_.colorSpace;
    sci.imageExtent = extent_;
    sci.imageArrayLayers = 1;
    sci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    sci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
    sci.preTransform = caps.currentTransform;
    sci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
    sci.presentMode = mode;
    sci.clipped = VK_TRUE;
    check(vkCreateSwapchainKHR(device_, &sci, nullptr, &swapchain_), "vkCreateSwapchainKHR");
    uint32_t n = 0;
    vkGetSwapchainImagesKHR(device_, swapchain_, &n, nullptr);
    images_.resize(n);
    vkGetSwapchainImagesKHR(device_, swapchain_, &n, images_.data());
    for (VkImage image : images_) {
        VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
        vci.image = image;
        vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
        vci.format = format_.format;
        vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        VkImageView view;
        check(vkCreateImageView(device_, &vci, nullptr, &view), "vkCreateImageView");
        views_.push_back(view);
        VkFramebufferCreateInfo fci{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
        fci.renderPass = render_pass_;
        fci.attachmentCount = 1;
        fci.pAttachments = &view;
        fci.width = extent_.width;
        fci.height = extent_.height;
        fci.layers = 1;
        VkFramebuffer fb;
        check(vkCreateFramebuffer(device_, &fci, nullptr, &fb), "vkCreateFramebuffer");
        framebuffers_.push_back(fb);
    }
}

void VulkanWindow::destroy_swapchain() {
    for (VkFramebuffer fb : framebuffers_) vkDestroyFramebuffer(device_, fb, nullptr);
    for (VkImageView v : views_) vkDestroyImageView(device_, v, nullptr);
    framebuffers_.clear();
    views_.clear();
    images_.clear();
    if (swapchain_) vkDestroySwapchainKHR(device_, swapchain_, nullptr);
    swapchain_ = VK_NULL_HANDLE;
}

bool VulkanWindow::should_close() const { return glfwWindowShouldClose(window_); }

float VulkanWindow::content_scale() const {
    float x = 1, y = 1;
    glfwGetWindowContentScale(window_, &x, &y);
    return std::max(x, 1.0f);
}

void VulkanWindow::upload_fonts() {
    check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkResetCommandBuffer(cmd_, 0);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    ImGui_ImplVulkan_CreateFontsTexture(cmd_);
    check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    check(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit (fonts)");
    check(vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
    ImGui_ImplVulkan_DestroyFontUploadObjects();
}

void VulkanWindow::begin_frame() {
    glfwPollEvents();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window_, &w, &h);
    if (rebuild_ || (w > 0 && h > 0 && (uint32_t(w) != extent_.width || uint32_t(h) != extent_.height))) {
        vkDeviceWaitIdle(device_);
        destroy_swapchain();
        create_swapchain();
        ImGui_ImplVulkan_SetMinImageCount(min_images_);
        rebuild_ = false;
    }
    if (fonts_dirty_) {
        upload_fonts();
        fonts_dirty_ = false;
    }
    deliver_keys_for_frame();
    ImGui_ImplVulkan_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
}

void VulkanWindow::wait_events(double timeout_s) {
    // Keys still queued from a burst of taps are input the next frame must take: no sleep.
    if (!g_keys.empty()) glfwPollEvents();
    else if (timeout_s > 0) glfwWaitEventsTimeout(timeout_s);
    else glfwWaitEvents();
}

void VulkanWindow::wake() { glfwPostEmptyEvent(); }

void VulkanWindow::end_frame(float r, float g, float b, Image* capture) {
    ImGui::Render();
    ImDrawData* draw = ImGui::GetDrawData();
    if (draw->DisplaySize.x <= 0 || draw->DisplaySize.y <= 0) return;  // minimised

    check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    uint32_t index = 0;
    VkResult acquired = vkAcquireNextImageKHR(device_, swapchain_, UINT64_MAX, acquired_, VK_NULL_HANDLE, &index);
    if (acquired == VK_ERROR_OUT_OF_DATE_KHR) {
        rebuild_ = true;
        return;
    }
    if (acquired != VK_SUBOPTIMAL_KHR) check(acquired, "vkAcquireNextImageKHR");
    check(vkResetFences(device_, 1, &fence_), "vkResetFences");

    vkResetCommandBuffer(cmd_, 0);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    VkClearValue clear{};
    clear.color = {{r, g, b, 1.0f}};
    VkRenderPassBeginInfo rpbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    rpbi.renderPass = render_pass_;
    rpbi.framebuffer = framebuffers_[index];
    rpbi.renderArea.extent = extent_;
    rpbi.clearValueCount = 1;
    rpbi.pClearValues = &clear;
    vkCmdBeginRenderPass(cmd_, &rpbi, VK_SUBPASS_CONTENTS_INLINE);
    ImGui_ImplVulkan_RenderDrawData(draw, cmd_);
    vkCmdEndRenderPass(cmd_);

    // Read-back: the presentable image to a host buffer and back to presentable.
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    const VkDeviceSize bytes = VkDeviceSize(extent_.width) * extent_.height * 4;
    if (capture) {
        VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bci.size = bytes;
        bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        check(vkCreateBuffer(device_, &bci, nullptr, &buffer), "vkCreateBuffer (screenshot)");
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(device_, buffer, &req);
        VkPhysicalDeviceMemoryProperties mp;
        vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
        uint32_t type = UINT32_MAX;
        const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
            if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
                type = i;
                break;
            }
        if (type == UINT32_MAX) throw std::runtime_error("no host-visible memory for the screenshot");
        VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = type;
        check(vkAllocateMemory(device_, &mai, nullptr, &memory), "vkAllocateMemory (screenshot)");
        check(vkBindBufferMemory(device_, buffer, memory, 0), "vkBindBufferMemory");

        VkImageMemoryBarrier to_src{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
        to_src.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
        to_src.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        to_src.oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
        to_src.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
        to_src.srcQueueFamilyIndex = to_src.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        to_src.image = images_[index];
        to_src.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                             nullptr, 0, nullptr, 1, &to_src);
        VkBufferImageCopy region{};
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {extent_.width, extent_.height, 1};
        vkCmdCopyImageToBuffer(cmd_, images_[index], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, &region);
        VkImageMemoryBarrier to_present = to_src;
        to_present.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        to_present.dstAccessMask = 0;
        to_present.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
        to_present.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
        vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, nullptr,
                             0, nullptr, 1, &to_present);
        VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
        to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        to_host.srcQueueFamilyIndex = to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        to_host.buffer = buffer;
        to_host.size = VK_WHOLE_SIZE;
        vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1,
                             &to_host, 0, nullptr);
    }
    check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");

    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &acquired_;
    si.pWaitDstStageMask = &wait_stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &rendered_;
    check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");

    VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    pi.waitSemaphoreCount = 1;
    pi.pWaitSemaphores = &rendered_;
    pi.swapchainCount = 1;
    pi.pSwapchains = &swapchain_;
    pi.pImageIndices = &index;
    const VkResult presented = vkQueuePresentKHR(queue_, &pi);
    if (presented == VK_ERROR_OUT_OF_DATE_KHR || presented == VK_SUBOPTIMAL_KHR) rebuild_ = true;
    else check(presented, "vkQueuePresentKHR");

    if (capture) {
        check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences (screenshot)");
        void* data = nullptr;
        check(vkMapMemory(device_, memory, 0, bytes, 0, &data), "vkMapMemory (screenshot)");
        capture->width = int(extent_.width);
        capture->height = int(extent_.height);
        capture->rgba.resize(size_t(bytes));
        std::memcpy(capture->rgba.data(), data, size_t(bytes));
        vkUnmapMemory(device_, memory);
        const bool bgra = format_.format == VK_FORMAT_B8G8R8A8_UNORM || format_.format == VK_FORMAT_B8G8R8A8_SRGB;
        for (size_t i = 0; i < capture->rgba.size(); i += 4) {
            if (bgra) std::swap(capture->rgba[i], capture->rgba[i + 2]);
            capture->rgba[i + 3] = 255;
        }
        vkDestroyBuffer(device_, buffer, nullptr);
        vkFreeMemory(device_, memory, nullptr);
    }
}

void write_png(const std::string& path, const Image& image) {
    if (image.width <= 0 || image.height <= 0) throw std::runtime_error("no image to write to " + path);
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    if (!stbi_write_png(path.c_str(), image.width, image.height, 4, image.rgba.data(), image.width * 4))
        throw std::runtime_error("cannot write the PNG " + path);
}

double luminance_variance(const Image& image) {
    const size_t n = size_t(image.width) * size_t(image.height);
    if (n == 0) return 0;
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t* p = &image.rgba[i * 4];
        const double y = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
        sum += y, sum2 += y * y;
    }
    const double mean = sum / double(n);
    return sum2 / double(n) - mean * mean;
}

}  // namespace vkllm::studio
