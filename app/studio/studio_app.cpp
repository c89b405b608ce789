#include "studio_app.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "embedded_model.h"
#include "heatmap.h"
#include "input_file.h"
#include "json_text.h"
#include <imgui.h>
#include <imgui_internal.h>  // FindWindowByName: a panel's rectangle for its screenshot
#include "panel_frame.h"
#include "panel_json.h"
#include "probe_json.h"
#include "vulkan_window.h"

namespace vkllm::studio {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- The app ----

namespace {

StudioApp* g_app = nullptr;  // for GLFW's drop callback

void on_drop(GLFWwindow*, int count, const char** paths) {
    if (g_app && count > 0) g_app->request_model(paths[0]);
}

// `text` cut to `width` pixels with "..." at the end (the whole text goes in a tooltip).
std::string elide(const std::string& text, float width) {
    if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
    const float dots = ImGui::CalcTextSize("...").x;
    size_t n = text.size();
    while (n > 0 && ImGui::CalcTextSize(text.c_str(), text.c_str() + n).x + dots > width) --n;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 characters
    return text.substr(0, n) + "...";
}

std::string default_config_dir() {
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/vkllm";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/vkllm";
    return ".";
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
double percentile_of(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

StudioApp::StudioApp(const StudioOptions& o) : options(o) {
    config_dir_ = o.config_dir.empty() ? default_config_dir() : o.config_dir;
    load_settings();
    if (!o.panels.empty()) settings.open = parse_panels(o.panels);
    if (o.temperature) settings.generation.sampler.temperature = *o.temperature;
    if (o.seed >= 0) settings.generation.sampler.seed = uint64_t(o.seed);
    if (!o.theme.empty()) settings.dark = o.theme == "dark";
    if (o.scale > 0) settings.ui_scale = o.scale;
    snprintf(system_prompt, sizeof system_prompt, "%s", settings.generation.system.c_str());
    const bool headless = !o.prompt.empty() || !o.script.empty();
    if (headless) settings.generation.max_tokens = std::max(o.n_predict, 0);
    if (!o.script.empty()) {
        std::stringstream in(app::read_input(o.script, app::kSmallFileMax, "script"));
        for (std::string line; std::getline(in, line);)
            if (!line.empty() && line[0] != '#') script_.push_back(line);
    }

    WindowOptions wo;
    wo.width = o.width;
    wo.height = o.height;
    wo.vsync = !headless;
    const char* validate = std::getenv("VKLLM_VALIDATE");
    wo.validation = validate && std::string(validate) == "1";
    window_ = std::make_unique<VulkanWindow>(wo);
    g_app = this;
    glfwSetDropCallback(window_->glfw(), on_drop);
    fs::create_directories(config_dir_);
    // The panels are tiles placed by `layout` (saved in studio.json), so ImGui keeps no
    // window positions of its own.
    ImGui::GetIO().IniFilename = nullptr;
    ImGui::GetIO().ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
    // A blinking cursor would need a frame every half second; the studio draws on events only.
    ImGui::GetIO().ConfigInputTextCursorBlink = false;
    worker.set_on_publish([] { VulkanWindow::wake(); });
    // Before the load makes the engine's device, so the driver's threads start at this priority.
    if (o.engine_nice > 0) worker.lower_priority(o.engine_nice);
    if (o.n_ctx > 0) worker.set_context_length(o.n_ctx);
    apply_theme(settings.ui_scale > 0 ? settings.ui_scale : window_->content_scale());

    if (o.model.empty()) {
        const auto bytes = vkllm::cli::embedded_model();
        worker.load_memory(bytes.data(), bytes.size(), std::string("built-in model ") + vkllm::cli::embedded_model_name(),
                           o.device);
    } else {
        worker.load_file(o.model, o.device);
    }
    state = worker.state();
    dialog_dir = fs::current_path().string();
}

StudioApp::~StudioApp() {
    g_app = nullptr;
    worker.stop();
    window_.reset();
}

void StudioApp::load_settings() {
    const std::string path = config_dir_ + "/studio.json";
    std::error_code absent;
    if (!fs::exists(path, absent)) return;
    try {
        const json j = json::parse(app::read_input(path, app::kSmallFileMax, "settings file"));
        settings = settings_from_json(j);
        if (j.is_object() && j.contains("layout")) layout = layout_from_json(j["layout"]);
        if (j.is_object() && j.contains("maximised") && j["maximised"].is_string())
            for (int p = 0; p < PanelCount; ++p)
                if (j["maximised"] == panel_name(p)) maximised = p;
    } catch (const json::exception& e) {
        message = "studio.json ignored: " + std::string(e.what());
    } catch (const app::InputError& e) {
        message = "studio.json ignored: " + std::string(e.what());
    }
}

void StudioApp::save_settings() {
    json j = settings_json(settings);
    j["layout"] = layout_json(layout);
    j["maximised"] = maximised >= 0 ? json(panel_name(maximised)) : json(nullptr);
    std::ofstream out(config_dir_ + "/studio.json");
    out << app::json_text(j, 2) << "\n";
}

void StudioApp::apply_theme(float scale) {
    ImGuiStyle fresh;
    if (settings.dark) ImGui::StyleColorsDark(&fresh);
    else ImGui::StyleColorsLight(&fresh);
    fresh.WindowRounding = 4;
    fresh.FrameRounding = 3;
    fresh.ScaleAllSizes(scale);
    ImGui::GetStyle() = fresh;
    if (scale != applied_scale_) {
        ImGuiIO& io = ImGui::GetIO();
        io.Fonts->Clear();
        const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
        if (fs::exists(font)) io.Fonts->AddFontFromFileTTF(font, std::round(15.0f * scale));
        else {
            ImFontConfig c;
            c.SizePixels = std::round(13.0f * scale);
            io.Fonts->AddFontDefault(&c);
        }
        // Code blocks: DejaVu Sans Mono where it is installed, else the UI font.
        const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
        code_font = fs::exists(mono) ? io.Fonts->AddFontFromFileTTF(mono, std::round(14.0f * scale)) : nullptr;
        window_->fonts_changed();
    }
    applied_scale_ = scale;
    applied_dark_ = settings.dark;
}

void StudioApp::open_model(const std::string& path) {
    worker.stop();
    worker.load_file(path, options.device);
    message = "opening " + path;  // Recent gets it once it opened (follow_worker)
}

void StudioApp::open_builtin_model() {
    worker.stop();
    const auto bytes = vkllm::cli::embedded_model();
    worker.load_memory(bytes.data(), bytes.size(), std::string("built-in model ") + vkllm::cli::embedded_model_name(),
                       options.device);
}

void StudioApp::request_model(const std::string& path) {
    if (state->messages.empty()) {
        if (path.empty()) open_builtin_model();
        else open_model(path);
        return;
    }
    pending_model = path;
    pending_builtin = path.empty();
    confirm_switch = true;
}

std::vector<ChatMessage> StudioApp::conversation() const {
    std::vector<ChatMessage> out;
    if (system_prompt[0]) out.push_back({"system", system_prompt});
    for (const ChatTurn& t : state->messages) out.push_back({t.role, t.text});
    return out;
}

void StudioApp::save_chat(const std::string& path) {
    if (state->messages.empty()) throw std::runtime_error("nothing to save: the conversation is empty");
    app::write_conversation(path, conversation());
    message = "saved the conversation to " + path;
}

void StudioApp::open_chat(const std::string& path) {
    const std::vector<ChatMessage> m = app::read_conversation(path);  // throws naming the file
    std::vector<ChatTurn> turns;
    std::string system;
    for (const ChatMessage& c : m) {
        if (c.role == "system") system = c.content;
        else turns.push_back({c.role, c.content, {}});
    }
    worker.stop();
    snprintf(system_prompt, sizeof system_prompt, "%s", system.c_str());
    settings.generation.system = system_prompt;
    worker.load_conversation(std::move(turns), settings.generation);
    message = "opened " + path;
}

bool StudioApp::send_input() {
    const std::string text = input;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) return false;
    // One answer at a time: a second Enter while one runs sends nothing (and keeps the text).
    if (state->busy || !worker.idle()) {
        message = "an answer is running: wait for it, or press Esc to stop it";
        return false;
    }
    settings.generation.system = system_prompt;
    worker.send(text, settings.generation);
    input_history.add(text);
    input[0] = 0;
    context_choice_dismissed = false;
    return true;
}

void StudioApp::follow_worker() {
    // Recent lists the files that opened; one that failed leaves it.
    if (state->load_serial != seen_load_serial_) {
        seen_load_serial_ = state->load_serial;
        if (!state->last_load_ok) {
            std::erase(settings.recent_models, state->failed_source);
        } else if (!state->loaded_source.empty() && state->loaded_source.rfind("built-in model", 0) != 0) {
            const std::string path = state->loaded_source;
            std::erase(settings.recent_models, path);
            settings.recent_models.insert(settings.recent_models.begin(), path);
            if (settings.recent_models.size() > 8) settings.recent_models.resize(8);
        }
    }
    // A question stopped before its answer began goes back to the box (unless the box has news).
    if (state->returned_serial != seen_returned_serial_) {
        seen_returned_serial_ = state->returned_serial;
        if (!input[0]) snprintf(input, sizeof input, "%s", state->returned_input.c_str());
    }
}

void StudioApp::focus_layer(int layer) {
    sel_layer = layer;
    settings.open[PanelAttention] = settings.open[PanelActivations] = true;
    if (state->info && layer < int(state->info->layers.size()) && state->info->layers[size_t(layer)].ffn.kind == FfnKind::Moe) {
        settings.open[PanelExperts] = true;
        settings.color_layer = layer;
    }
    ImGui::SetWindowFocus("Attention");
}

std::string StudioApp::token_text(int position) const {
    if (position < 0 || position >= int(state->context_pieces.size())) return "?";
    return state->context_pieces[size_t(position)];
}

void StudioApp::export_to(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    json j = export_json(*state, vm);
    j["frames"] = {{"count", frame_ms.size()},
                   {"median_ms", median_of(frame_ms)},
                   {"p95_ms", percentile_of(frame_ms, 0.95)},
                   {"generating_count", frame_ms_generating.size()},
                   {"generating_median_ms", median_of(frame_ms_generating)},
                   {"generating_p95_ms", percentile_of(frame_ms_generating, 0.95)},
                   {"generating_max_ms", frame_ms_generating.empty() ? 0.0
                                                                     : *std::max_element(frame_ms_generating.begin(),
                                                                                         frame_ms_generating.end())},
                   {"engine_nice", state->engine_nice},
                   {"engine_priority_error", state->engine_priority_error}};
    j["chat"] = {{"input", input},
                 {"system", system_prompt},
                 {"sent", input_history.sent()},
                 {"context_used", state->context.size()},
                 {"context_size", state->n_ctx},
                 {"context_full", state->context_full},
                 {"recent_models", settings.recent_models},
                 {"shaders_prepared", state->shaders_prepared},
                 {"asking_to_switch", asking_to_switch},
                 {"prepare_seconds", state->prepare_seconds}};
    json overflows = json::array();
    for (const TextOverflow& o : text_fit_log().overflows)  // the newest frame's
        overflows.push_back({{"where", o.where}, {"needed", o.needed}, {"available", o.available}});
    j["text_fit"] = {{"windows_checked", text_fit_log().windows_checked},
                     {"tables_checked", text_fit_log().tables_checked},
                     {"overflows", overflows}};
    json tiles = json::object();
    for (int p = 0; p < PanelCount; ++p) {
        const Rect& r = tiling.panels[size_t(p)];
        if (!r.empty()) tiles[panel_name(p)] = {r.x, r.y, r.w, r.h};
    }
    j["layout"] = {{"tiles", tiles}, {"maximised", maximised >= 0 ? json(panel_name(maximised)) : json(nullptr)}};
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << app::dump_document(j);
    if (!out) throw std::runtime_error("cannot write " + path);
    message = "exported " + path;
}

void StudioApp::export_csv(int panel, const std::string& path) {
    std::ofstream out(path);
    out << panel_csv(panel, *state, vm);
    if (!out) throw std::runtime_error("cannot write " + path);
    message = "exported " + path;
}

void StudioApp::apply_probe_selection() {
    ProbeSelection s;
    s.attention = settings.open[PanelAttention];
    s.activations = settings.open[PanelActivations];
    s.experts = settings.open[PanelExperts] || settings.color_mode == 2;
    s.lens = settings.open[PanelLens];
    s.timings = settings.open[PanelTelemetry];
    s.residual_full_layer = settings.open[PanelActivations] ? sel_layer : -2;
    s.state = state_open;
    s.state_map_layer = -1;
    if (state_open && state->info && state_layer >= 0 && state_layer < int(state->info->layers.size()) &&
        has_state_map(state->info->layers[size_t(state_layer)]))
        s.state_map_layer = state_layer;
    if (!probes_sent_ || !(s == applied_probes_)) {
        worker.set_probes(s);
        applied_probes_ = s;
        probes_sent_ = true;
    }
}

void StudioApp::handle_shortcuts() {
    ImGuiIO& io = ImGui::GetIO();
    auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
    // Enter sends from the chat box itself (panels_chat.cpp).
    if (pressed(GLFW_KEY_F11)) maximised = maximised >= 0 ? -1 : focused_panel;
    if ((io.KeyCtrl && pressed(GLFW_KEY_R)) || pressed(GLFW_KEY_F5)) worker.regenerate(settings.generation);
    if (pressed(GLFW_KEY_ESCAPE) && state->generating) worker.stop();
    if (io.KeyCtrl && !io.KeyShift && pressed(GLFW_KEY_O)) dialog_request = FileDialog::OpenModel;
    if (io.KeyCtrl && io.KeyShift && pressed(GLFW_KEY_O)) dialog_request = FileDialog::OpenChat;
    if (io.KeyCtrl && io.KeyShift && pressed(GLFW_KEY_S)) dialog_request = FileDialog::SaveChat;
    if (io.KeyCtrl && pressed(GLFW_KEY_L)) worker.clear_chat();
    if (io.KeyCtrl && pressed(GLFW_KEY_T)) settings.dark = !settings.dark;
    if (io.KeyCtrl && !io.KeyShift && pressed(GLFW_KEY_S)) {
        want_screenshot = true;
        screenshot_path = "vkllm-studio-" + std::to_string(std::time(nullptr)) + ".png";
    }
    if (io.KeyCtrl && pressed(GLFW_KEY_E)) export_to("vkllm-studio-" + std::to_string(std::time(nullptr)) + ".json");
    if (io.KeyCtrl && pressed(GLFW_KEY_M)) worker.measure_probe_cost();
    if (io.KeyCtrl && (pressed(GLFW_KEY_EQUAL) || pressed(GLFW_KEY_KP_ADD)))
        settings.ui_scale = std::min(4.0f, (settings.ui_scale > 0 ? settings.ui_scale : applied_scale_) + 0.25f);
    if (io.KeyCtrl && (pressed(GLFW_KEY_MINUS) || pressed(GLFW_KEY_KP_SUBTRACT)))
        settings.ui_scale = std::max(0.75f, (settings.ui_scale > 0 ? settings.ui_scale : applied_scale_) - 0.25f);
    for (int p = 0; p < PanelCount; ++p)
        if (io.KeyCtrl && pressed(GLFW_KEY_1 + p)) settings.open[size_t(p)] = !settings.open[size_t(p)];
}

void StudioApp::draw_menu() {
    if (!ImGui::BeginMainMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open model...", "Ctrl+O")) dialog_request = FileDialog::OpenModel;
        if (ImGui::MenuItem("Built-in model")) request_model("");
        if (ImGui::BeginMenu("Recent", !settings.recent_models.empty())) {
            std::string chosen;
            for (const std::string& p : settings.recent_models)
                if (ImGui::MenuItem(p.c_str())) chosen = p;
            ImGui::EndMenu();
            if (!chosen.empty()) request_model(chosen);
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Open conversation...", "Ctrl+Shift+O")) dialog_request = FileDialog::OpenChat;
        if (ImGui::MenuItem("Save conversation...", "Ctrl+Shift+S", false, !state->messages.empty()))
            dialog_request = FileDialog::SaveChat;
        ImGui::Separator();
        if (ImGui::MenuItem("Screenshot (PNG)", "Ctrl+S")) {
            want_screenshot = true;
            screenshot_path = "vkllm-studio-" + std::to_string(std::time(nullptr)) + ".png";
        }
        if (ImGui::MenuItem("Export numbers (JSON)", "Ctrl+E"))
            export_to("vkllm-studio-" + std::to_string(std::time(nullptr)) + ".json");
        if (ImGui::BeginMenu("Export a panel")) {
            for (int p = 0; p < PanelCount; ++p) {
                const std::string stem = std::string("vkllm-studio-") + panel_name(p) + "-" + std::to_string(std::time(nullptr));
                if (ImGui::MenuItem((std::string(panel_title(p)) + " (CSV)").c_str())) export_csv(p, stem + ".csv");
                if (ImGui::MenuItem((std::string(panel_title(p)) + " (PNG)").c_str())) {
                    settings.open[size_t(p)] = true;
                    want_screenshot = true;
                    screenshot_panel = p;
                    screenshot_path = stem + ".png";
                }
            }
            ImGui::EndMenu();
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Quit", "Ctrl+Q")) quit_ = true;
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Chat")) {
        if (ImGui::MenuItem("Send", "Enter")) send_input();
        if (ImGui::MenuItem("Stop", "Esc", false, state->generating)) worker.stop();
        if (ImGui::MenuItem("Regenerate", "Ctrl+R")) worker.regenerate(settings.generation);
        if (ImGui::MenuItem("Clear", "Ctrl+L")) worker.clear_chat();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        for (int p = 0; p < PanelCount; ++p) {
            const std::string shortcut = "Ctrl+" + std::to_string(p + 1);
            std::string label = panel_name(p);
            label[0] = char(std::toupper(label[0]));
            ImGui::MenuItem(label.c_str(), shortcut.c_str(), &settings.open[size_t(p)]);
        }
        ImGui::MenuItem("State (recurrent layers)", nullptr, &state_open);
        ImGui::Separator();
        if (ImGui::MenuItem("Maximise the focused panel", "F11", maximised >= 0, focused_panel >= 0 || maximised >= 0))
            maximised = maximised >= 0 ? -1 : focused_panel;
        if (ImGui::MenuItem("Reset layout")) {
            layout = default_layout();
            maximised = -1;
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Dark theme", "Ctrl+T", settings.dark)) settings.dark = !settings.dark;
        if (ImGui::MenuItem("Larger", "Ctrl+=")) settings.ui_scale = std::min(4.0f, applied_scale_ + 0.25f);
        if (ImGui::MenuItem("Smaller", "Ctrl+-")) settings.ui_scale = std::max(0.75f, applied_scale_ - 0.25f);
        if (ImGui::MenuItem("Measure the probes' cost", "Ctrl+M")) worker.measure_probe_cost();
        ImGui::EndMenu();
    }
    ImGui::EndMainMenuBar();
}

void StudioApp::draw_status_bar() {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    const float h = ImGui::GetFrameHeight();
    ImGui::SetNextWindowPos(ImVec2(vp->Pos.x, vp->Pos.y + vp->Size.y - h));
    ImGui::SetNextWindowSize(ImVec2(vp->Size.x, h));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6, 2));
    ImGui::Begin("##status", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                     ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove);
    // One line: every part is cut with "..." to the room left (the whole line in a tooltip).
    const std::string model = state->info ? state->info->name + " (" + state->info->arch + ")" : "no model";
    char frame[48];
    snprintf(frame, sizeof frame, "frame %.1f ms", frame_ms.empty() ? 0.0 : frame_ms.back());
    struct Part { std::string text; ImVec4 color; bool disabled; };
    std::vector<Part> parts = {{model + " | " + state->device.name + " | " + state->status, {}, false},
                               {frame, {}, true}};
    if (!state->error.empty()) parts.push_back({state->error, readable(ImVec4(1, 0.35f, 0.3f, 1)), false});
    else if (!state->notice.empty()) parts.push_back({state->notice, readable(ImVec4(1, 0.8f, 0.3f, 1)), false});
    else if (!message.empty()) parts.push_back({message, {}, true});
    std::string whole;
    bool cut = false;
    for (size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        whole += (i ? " | " : "") + p.text;
        if (i) {
            ImGui::SameLine();
            ImGui::TextDisabled("|");
            ImGui::SameLine();
        }
        const float room = ImGui::GetContentRegionAvail().x;
        if (room < ImGui::CalcTextSize("...").x) break;
        // Leave the frame time its room when the status comes first.
        const float keep = i == 0 ? std::min(ImGui::CalcTextSize(frame).x + ui_px(24), room * 0.3f) : 0.0f;
        const std::string shown = elide(p.text, room - keep);
        cut = cut || shown != p.text;
        if (p.disabled) ImGui::TextDisabled("%s", shown.c_str());
        else if (p.color.w > 0) ImGui::TextColored(p.color, "%s", shown.c_str());
        else ImGui::TextUnformatted(shown.c_str());
    }
    if (cut && ImGui::IsWindowHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
        ImGui::TextUnformatted(whole.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    ImGui::End();
    ImGui::PopStyleVar();
}

void StudioApp::draw_file_dialog() {
    static const char* titles[] = {"", "Open a model", "Open a conversation", "Save the conversation"};
    if (dialog_request != FileDialog::None) {
        dialog = dialog_request;
        dialog_request = FileDialog::None;
        dialog_path[0] = 0;
        if (dialog == FileDialog::SaveChat)
            snprintf(dialog_path, sizeof dialog_path, "%s/chat-%ld.json", dialog_dir.c_str(), long(std::time(nullptr)));
        ImGui::OpenPopup(titles[int(dialog)]);
    }
    if (dialog == FileDialog::None) return;
    const char* title = titles[int(dialog)];
    const std::string extension = dialog == FileDialog::OpenModel ? ".gguf" : ".json";
    ImGui::SetNextWindowSize(ImVec2(ui_px(720), ui_px(500)), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal(title)) {
        dialog = FileDialog::None;
        return;
    }
    ImGui::TextWrapped("%s", dialog_dir.c_str());
    if (ImGui::Button("Up")) dialog_dir = fs::path(dialog_dir).parent_path().string();
    ImGui::SameLine();
    ImGui::TextDisabled(dialog == FileDialog::OpenModel ? "GGUF files and folders; or drop a file on the window"
                                                        : "conversations (.json, as vkllm chat's /save writes them)");
    const bool model = dialog == FileDialog::OpenModel;
    const float facts_h = model ? ImGui::GetTextLineHeightWithSpacing() * 9 : 0.0f;
    ImGui::BeginChild("files", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * 2 - facts_h), true);
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (const auto& e : fs::directory_iterator(dialog_dir, fs::directory_options::skip_permission_denied, ec))
        if (e.is_directory(ec) || e.path().extension() == extension) entries.push_back(e);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        if (a.is_directory() != b.is_directory()) return a.is_directory();
        return a.path().filename() < b.path().filename();
    });
    if (ec) ImGui::TextDisabled("cannot list: %s", ec.message().c_str());
    bool chosen = false;
    for (const auto& e : entries) {
        const bool dir = e.is_directory(ec);
        std::string name = e.path().filename().string() + (dir ? "/" : "");
        if (!dir) name += "  (" + bytes_text(e.file_size(ec)) + ")";
        if (ImGui::Selectable(name.c_str(), e.path().string() == dialog_path, ImGuiSelectableFlags_AllowDoubleClick)) {
            if (dir) dialog_dir = e.path().string();
            else snprintf(dialog_path, sizeof dialog_path, "%s", e.path().c_str());
            if (!dir && ImGui::IsMouseDoubleClicked(0)) chosen = true;
        }
    }
    ImGui::EndChild();
    if (model) {
        // The selected file's facts, read from its header (no GPU, nothing loaded).
        if (facts_path != dialog_path) {
            facts_path = dialog_path;
            facts.clear();
            facts_error.clear();
            if (!facts_path.empty() && fs::is_regular_file(facts_path, ec)) {
                try {
                    facts = read_model_facts(facts_path);
                } catch (const std::exception& e) {
                    facts_error = e.what();
                }
            }
        }
        ImGui::BeginChild("facts", ImVec2(0, facts_h), false);
        if (!facts_error.empty()) ImGui::TextColored(readable(ImVec4(1, 0.35f, 0.3f, 1)), "cannot open it: %s", facts_error.c_str());
        else if (facts.empty()) ImGui::TextDisabled("Select a file to see its architecture, size, quantisation and context.");
        else if (ImGui::BeginTable("facts", 2, ImGuiTableFlags_SizingFixedFit)) {
            for (const ModelFact& f : facts) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextDisabled("%s", f.label.c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(f.value.c_str());
            }
            end_table();
        }
        ImGui::EndChild();
    }
    ImGui::SetNextItemWidth(-ui_px(60));
    ImGui::InputText("file", dialog_path, sizeof dialog_path);
    const char* verb = dialog == FileDialog::SaveChat ? "Save" : "Open";
    if ((ImGui::Button(verb) || chosen) && dialog_path[0]) {
        try {
            if (dialog == FileDialog::OpenModel) request_model(dialog_path);
            else if (dialog == FileDialog::OpenChat) open_chat(dialog_path);
            else save_chat(dialog_path);
            ImGui::CloseCurrentPopup();
            dialog = FileDialog::None;
        } catch (const std::exception& e) {
            message = e.what();
        }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) {
        ImGui::CloseCurrentPopup();
        dialog = FileDialog::None;
    }
    if (!message.empty() && dialog != FileDialog::None) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", elide(message, ImGui::GetContentRegionAvail().x).c_str());
    }
    ImGui::EndPopup();
}

void StudioApp::draw_switch_confirmation() {
    if (confirm_switch) {
        ImGui::OpenPopup("Switch the model?");
        confirm_switch = false;
    }
    ImGui::SetNextWindowSize(ImVec2(ui_px(520), 0), ImGuiCond_Appearing);
    asking_to_switch = ImGui::BeginPopupModal("Switch the model?");
    if (!asking_to_switch) return;
    const int answer = switch_answer;
    switch_answer = 0;
    ImGui::TextWrapped("Opening %s drops the conversation (%zu messages). Save it first to keep it.",
                       pending_builtin ? "the built-in model" : pending_model.c_str(), state->messages.size());
    if (ImGui::Button("Save it first...")) {
        ImGui::CloseCurrentPopup();
        dialog_request = FileDialog::SaveChat;
    }
    ImGui::SameLine();
    if (ImGui::Button("Switch") || answer == 1) {
        if (pending_builtin) open_builtin_model();
        else open_model(pending_model);
        ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE) || answer == 2) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

void StudioApp::draw_frame() {
    state = worker.state();
    if (vm.version != state->version) {
        FrameLog::Clock::time_point t = FrameLog::Clock::now();
        vm = compute_view_models(*state, 16);
        frame_log.new_state = state->version;
        frame_log.answer_tokens =
            !state->messages.empty() && state->messages.back().role == "assistant" ? state->messages.back().tokens.size() : 0;
        frame_log.vm = FrameLog::lap(t);
    }
    if (state->version != seen_version_) {
        seen_version_ = state->version;
        follow_worker();
    }
    handle_shortcuts();
    draw_menu();
    // The panels tile the space between the menu and the status bar.
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    const Rect area{vp->WorkPos.x, vp->WorkPos.y, vp->WorkSize.x, vp->WorkSize.y - ImGui::GetFrameHeight()};
    if (maximised >= 0 && !settings.open[size_t(maximised)]) maximised = -1;
    tiling = tile(layout, settings.open, maximised, area, std::round(ui_px(6)));
    draw_splitters(*this);
    using DrawFn = void (*)(StudioApp&);
    const DrawFn draw[PanelCount] = {draw_chat_panel,  draw_attention_panel,    draw_activations_panel, draw_experts_panel,
                                     draw_lens_panel, draw_architecture_panel, draw_telemetry_panel};
    text_fit_log().clear();
    for (int p = 0; p < PanelCount; ++p)
        if (settings.open[size_t(p)] && !tiling.panels[size_t(p)].empty()) {
            FrameLog::Clock::time_point t = FrameLog::Clock::now();
            draw[p](*this);
            frame_log.panel(panel_title(p), FrameLog::lap(t));
        }
    if (state_open) {
        FrameLog::Clock::time_point t = FrameLog::Clock::now();
        draw_state_panel(*this);
        frame_log.panel(kStatePanelTitle, FrameLog::lap(t));
    }
    draw_file_dialog();
    draw_switch_confirmation();
    draw_status_bar();
    std::vector<std::string> names{"##status"};
    for (int p = 0; p < PanelCount; ++p) names.push_back(panel_title(p));
    if (state_open) names.push_back(kStatePanelTitle);
    check_windows(names);
}

const char* panel_title(int panel) {
    static const char* titles[PanelCount] = {"Chat", "Attention", "Activations", "Experts", "Logit lens", "Architecture", "Telemetry"};
    return titles[panel];
}

Image StudioApp::crop_to_panel(const Image& full, int panel) const {
    const ImGuiWindow* w = ImGui::FindWindowByName(panel == kStatePanel ? kStatePanelTitle : panel_title(panel));
    if (!w) return full;
    const float scale = ImGui::GetIO().DisplayFramebufferScale.x;
    const int x0 = std::clamp(int(w->Pos.x * scale), 0, full.width - 1), y0 = std::clamp(int(w->Pos.y * scale), 0, full.height - 1);
    const int x1 = std::clamp(int((w->Pos.x + w->Size.x) * scale), x0 + 1, full.width);
    const int y1 = std::clamp(int((w->Pos.y + w->Size.y) * scale), y0 + 1, full.height);
    Image out;
    out.width = x1 - x0;
    out.height = y1 - y0;
    out.rgba.resize(size_t(out.width) * size_t(out.height) * 4);
    for (int y = 0; y < out.height; ++y)
        std::copy_n(&full.rgba[(size_t(y0 + y) * size_t(full.width) + size_t(x0)) * 4], size_t(out.width) * 4,
                    &out.rgba[size_t(y) * size_t(out.width) * 4]);
    return out;
}

int StudioApp::run() {
    const bool headless = !options.prompt.empty() || !script_.empty() || !options.screenshot.empty() ||
                          !options.export_json.empty();
    const bool continuous = options.draw.empty() ? headless : options.draw == "continuous";
    using Clock = std::chrono::steady_clock;
    Clock::time_point last = Clock::now();
    int busy_frames = 3;  // frames still to draw before sleeping (ImGui settles hover and popups)
    frame_log.open(frame_log_path);
    while (!quit_ && !window_->should_close()) {
        Clock::time_point part = Clock::now();  // the frame log's stopwatch
        // Draw on events only: an idle studio sleeps until input, or until the worker publishes
        // (it wakes the loop, so each generated token is drawn at once). While a command runs
        // without publishing (a model loading, a long prompt evaluated), a few frames a second
        // keep the status bar alive: on a CPU device (lavapipe) a frame's drawing takes a core
        // from the engine for tens of milliseconds. A wake draws two frames (ImGui settles hover
        // and popups in the second).
        // A headless run draws continuously unless told otherwise (--draw events), and then never
        // sleeps longer than a quarter second, so its script goes on without input.
        if (!continuous && !want_screenshot && busy_frames <= 0) {
            window_->wait_events(worker.idle() && !headless ? 0.0 : 0.25);
            busy_frames = 2;
        }
        frame_log.wait = FrameLog::lap(part);
        --busy_frames;
        if (ImGui::IsAnyMouseDown()) busy_frames = std::max(busy_frames, 1);  // a drag follows the mouse
        const float scale = settings.ui_scale > 0 ? settings.ui_scale : window_->content_scale();
        if (scale != applied_scale_ || settings.dark != applied_dark_) apply_theme(scale);
        apply_probe_selection();
        window_->begin_frame();
        frame_log.prep = FrameLog::lap(part);
        if (ImGui::IsKeyPressed(GLFW_KEY_Q) && ImGui::GetIO().KeyCtrl) quit_ = true;
        // A failed action (an export to an unwritable place) is a message in the interactive
        // app; the headless run stops on it.
        try {
            draw_frame();
        } catch (const std::exception& e) {
            if (headless) throw;
            message = e.what();
        }
        frame_log.draw = FrameLog::lap(part) - frame_log.vm;
        const float* bg = &ImGui::GetStyle().Colors[ImGuiCol_WindowBg].x;
        Image image;
        const bool capture = want_screenshot;
        window_->end_frame(bg[0] * 0.8f, bg[1] * 0.8f, bg[2] * 0.8f, capture ? &image : nullptr);
        frame_log.end = FrameLog::lap(part);
        if (capture) {
            want_screenshot = false;
            try {
                if (screenshot_panel >= 0) image = crop_to_panel(image, screenshot_panel);
                write_png(screenshot_path, image);
                message = "screenshot " + screenshot_path;
            } catch (const std::exception& e) {
                if (headless) throw;
                message = e.what();
            }
            screenshot_panel = -1;
            frame_log.shot = FrameLog::lap(part);
        }
        const Clock::time_point now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last).count();
        last = now;
        frame_ms.push_back(ms);
        if (headless) apply_synthetic_input();
        if (state->generating) frame_ms_generating.push_back(ms);
        const bool over = headless && headless_step();
        // The script's step ends this frame's measured time and begins the next one's.
        frame_log.script = FrameLog::lap(part);
        frame_log.write(ms, state->generating);
        if (over) break;
    }
    worker.stop();
    save_settings();
    if (window_->validation_messages() > 0) {
        fprintf(stderr, "vkllm-studio: %d validation messages on the drawing device\n", window_->validation_messages());
        exit_status_ = 1;
    }
    if (!state->error.empty() && headless) {
        fprintf(stderr, "vkllm-studio: %s\n", state->error.c_str());
        exit_status_ = 1;
    }
    return exit_status_;
}

}  // namespace vkllm::studio
