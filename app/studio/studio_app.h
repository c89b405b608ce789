// The studio's UI: its settings, the view-models of the newest worker state, the panels, and
// the frame loop (interactive or headless).
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conversation_file.h"
#include "engine_worker.h"
#include "frame_log.h"
#include "input_history.h"
#include "model_facts.h"
#include "tile_layout.h"
#include "settings.h"
#include "studio_export.h"
#include "text_fit.h"
#include "view_models.h"
#include "vulkan_window.h"

struct ImFont;

namespace vkllm::studio {

class VulkanWindow;
// The ImGui window title of a panel.
const char* panel_title(int panel);

// Input a script feeds the UI as a person would (one step a frame): characters typed into the
// chat box, a key tapped.
struct SyntheticInput {
    enum class Kind { FocusInput, Wait, Type, KeyDown, KeyUp } kind = Kind::Type;
    std::string text;   // Type
    int key = 0;        // GLFW key
    bool shift = false;
};

enum class FileDialog { None, OpenModel, OpenChat, SaveChat };

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
    // The lens grid (view_models.h) of the state whose version is lens_grid_version, made when
    // the lens panel first draws that state.
    LensGrid lens_grid;
    uint64_t lens_grid_version = ~0ull;
    int lens_grid_cols_followed = 0;  // columns when the grid's zoom last followed the stream
    // The State window (panels_state.cpp), over the tiles: the recurrent layers' state.
    bool state_open = false;
    int state_layer = -1, state_head = 0;
    bool want_screenshot = false;
    std::string screenshot_path;
    int screenshot_panel = -1;   // >= 0: crop the screenshot to this panel
    std::string message;         // a line for the status bar (exports, errors)
    char input[4096] = {};
    InputHistory input_history;
    bool focus_input = false;             // give the chat box the keyboard next frame
    bool input_active = false;            // the chat box has the keyboard
    ImFont* code_font = nullptr;       // monospace, for code blocks (null: the UI font)
    char system_prompt[4096] = {};        // the box; settings.generation.system follows it
    // Tiles
    TileLayout layout = default_layout();
    Tiling tiling;
    int maximised = -1;                   // a panel filling the window, -1: tiled
    int focused_panel = -1;
    int editing = -1;
    char edit_buffer[4096] = {};
    FileDialog dialog_request = FileDialog::None, dialog = FileDialog::None;
    std::string dialog_dir;
    char dialog_path[1024] = {};
    std::string facts_path;               // the file whose facts the Open dialog shows
    std::vector<ModelFact> facts;
    std::string facts_error;
    // A model waiting for the user to agree to drop the conversation ("" with `pending_builtin`:
    // the built-in model).
    std::string pending_model;
    bool pending_builtin = false, confirm_switch = false;
    int switch_answer = 0;                // a script's answer to the question: 1 switch, 2 cancel
    bool asking_to_switch = false;        // the question is on screen (this frame)
    bool context_choice_dismissed = false;  // "stop here" chosen for the current full context
    std::vector<double> frame_ms;          // every frame's time
    std::vector<double> frame_ms_generating;
    FrameLog frame_log;                    // --frame-log: one line per frame (frame_log.h)
    std::string frame_log_path;            // where run() writes it (empty: no log)

    bool send_input();                    // false when nothing was sent (empty, or an answer running)
    void open_model(const std::string& path);  // at once (scripts, the confirmation)
    void open_builtin_model();
    // Asks first when a conversation would be dropped; `path` empty: the built-in model.
    void request_model(const std::string& path);
    void save_chat(const std::string& path);
    void open_chat(const std::string& path);
    std::vector<ChatMessage> conversation() const;  // the system prompt and the turns
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
    void draw_switch_confirmation();
    void follow_worker();        // Recent, a taken-back message, after each published state
    void apply_synthetic_input();
    void handle_shortcuts();
    void apply_theme(float scale);
    void load_settings();
    void save_settings();
    bool headless_step();  // advances --prompt / --script; true when the run is over
    void run_script_line(const std::string& line);
    Image crop_to_panel(const Image& full, int panel) const;

    std::unique_ptr<VulkanWindow> window_;
    std::string config_dir_;
    float applied_scale_ = 0;
    bool applied_dark_ = true;
    ProbeSelection applied_probes_{};
    bool probes_sent_ = false;
    // Headless driving
    std::vector<std::string> script_;
    size_t script_pos_ = 0;
    int settle_frames_ = 0;
    std::deque<SyntheticInput> synthetic_;
    uint64_t seen_load_serial_ = 0, seen_returned_serial_ = 0, seen_version_ = 0;
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
// The State window: a window of its own over the tiles (View > State), its screenshot panel name
// "state" (screenshot_panel kStatePanel).
void draw_state_panel(StudioApp& app);
inline constexpr const char* kStatePanelTitle = "State";
inline constexpr int kStatePanel = PanelCount;

}  // namespace vkllm::studio
