// The studio's window: GLFW, its own Vulkan instance and device for drawing (the engine keeps
// its compute device), a swapchain ImGui draws into, and read-back of a drawn frame for
// screenshots. One frame in flight: simple, and the UI's work per frame is small.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

struct GLFWwindow;

namespace vkllm::studio {

struct Image {
    int width = 0, height = 0;
    std::vector<uint8_t> rgba;  // [height][width][4]
};

struct WindowOptions {
    std::string title = "vkllm studio";
    int width = 1600, height = 1000;
    bool vsync = true;        // FIFO; false: the fastest present mode (headless timing)
    bool validation = false;  // Khronos validation layer on the drawing instance
};

class VulkanWindow {
public:
    explicit VulkanWindow(const WindowOptions& o);  // throws std::runtime_error naming what failed
    ~VulkanWindow();
    VulkanWindow(const VulkanWindow&) = delete;
    VulkanWindow& operator=(const VulkanWindow&) = delete;

    GLFWwindow* glfw() const { return window_; }
    bool should_close() const;
    float content_scale() const;  // HiDPI: 1 on a 96-dpi screen
    // Starts an ImGui frame (after polling events; recreates the swapchain after a resize).
    void begin_frame();
    // Renders ImGui's draw data and presents it; with `capture`, also reads the frame back.
    void end_frame(float clear_r, float clear_g, float clear_b, Image* capture = nullptr);
    // The font atlas changed (fonts added, scale changed): upload it before the next frame.
    void fonts_changed() { fonts_dirty_ = true; }
    // Sleeps until an input event, a wake() from any thread, or `timeout_s` seconds (<= 0: no limit);
    // returns at once while taps from an earlier burst still wait to reach ImGui.
    void wait_events(double timeout_s);
    static void wake();  // thread-safe
    // Validation messages of severity warning or error seen so far (0 without validation).
    int validation_messages() const { return validation_messages_; }

private:
    void create_swapchain();
    void destroy_swapchain();
    void upload_fonts();

    GLFWwindow* window_ = nullptr;
    WindowOptions options_;
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkSurfaceKHR surface_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkSemaphore acquired_ = VK_NULL_HANDLE, rendered_ = VK_NULL_HANDLE;
    VkRenderPass render_pass_ = VK_NULL_HANDLE;
    VkSurfaceFormatKHR format_{};
    VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
    VkExtent2D extent_{};
    std::vector<VkImage> images_;
    std::vector<VkImageView> views_;
    std::vector<VkFramebuffer> framebuffers_;
    uint32_t min_images_ = 2;
    bool rebuild_ = false;
    bool imgui_ready_ = false;
    bool fonts_dirty_ = true;
    int validation_messages_ = 0;
    friend VkBool32 on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT*, void*);
};

// Writes an RGBA image as PNG; throws std::runtime_error when it cannot.
void write_png(const std::string& path, const Image& image);
// Pixel variance of the image's luminance (0 for a blank image).
double luminance_variance(const Image& image);

}  // namespace vkllm::studio
