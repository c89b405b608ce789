// The studio's UI: its settings, the view-models of the newest worker state, the panels, and
// the frame loop (interactive or headless).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine_worker.h"
#include "settings.h"
#include "studio_export.h"
#include "view_models.h"
#include "vulkan_window.h"

namespace vkllm::studio {

class VulkanWindow;
// The ImGui window title of a panel.
const char* panel_title(int panel);





class StudioApp {
public:
    explicit StudioApp(const StudioOptions& o);
    ~StudioApp();
    int run();  // the frame loop; returns the exit status

    // ---- For the panels ----
    EngineWorker worker;
    Settings settings;
    StudioOptions options;
    std::shared_ptr<const WorkerState> state;
    ViewModels vm;
    // Selections shared between panels
    int sel_layer = 0, sel_head = 0;
    int hover_pos = -1;          // a token hovered in the chat (the expert path, attention to it)
    int picked_key = -1;         // "what attends to this token"
    int lens_position = -1;
    bool want_screenshot = false;
    std::string screenshot_path;
    int screenshot_panel = -1;   // >= 0: crop the screenshot to this panel
    std::string message;         // a line for the status bar (exports, errors)
    char input[4096] = {};
    int editing = -1;
    char edit_buffer[4096] = {};
    bool file_dialog_open = false;
    std::string dialog_dir;
    char dialog_path[1024] = {};
    std::vector<double> frame_ms;          // every frame's time
    std::vector<double> frame_ms_generating;

    void send_input();
    void open_model(const std::string& path);
    void focus_layer(int layer);          // the architecture view's click
    std::string token_text(int position) const;  // the context token at a position, for labels
    void export_to(const std::string& path);
    void export_csv(int panel, const std::string& path);
    void apply_probe_selection();

private:
    void draw_frame();
    void draw_menu();
    void draw_status_bar();
    void draw_file_dialog();
    void handle_shortcuts();
    void apply_theme(float scale);
    void load_settings();
    void save_settings();
    bool headless_step();  // advances --prompt / --script; true when the run is over
    void run_script_line(const std::string& line);
    Image crop_to_panel(const Image& full, int panel) const;

    std::unique_ptr<VulkanWindow> window_;
    std::string config_dir_, ini_path_;
    float applied_scale_ = 0;
    bool applied_dark_ = true;
    ProbeSelection applied_probes_{};
    bool probes_sent_ = false;
    // Headless driving
    std::vector<std::string> script_;
    size_t script_pos_ = 0;
    int settle_frames_ = 0;
    bool quit_ = false;
    int exit_status_ = 0;
};

// Panels (panels_*.cpp)
void draw_chat_panel(StudioApp& app);
void draw_attention_panel(StudioApp& app);
void draw_activations_panel(StudioApp& app);
void draw_experts_panel(StudioApp& app);
void draw_lens_panel(StudioApp& app);
void draw_architecture_panel(StudioApp& app);
void draw_telemetry_panel(StudioApp& app);

}  // namespace vkllm::studio
