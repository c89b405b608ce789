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
    if (g_app && count > 0) g_app->open_model(paths[0]);
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
    ini_path_ = config_dir_ + "/imgui.ini";
    ImGui::GetIO().IniFilename = ini_path_.c_str();
    ImGui::GetIO().ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
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
    // ImGui keeps a pointer to ini_path_'s characters and writes the file once more when the
    // window destroys its context; ini_path_ dies before window_ (member order), so the
    // pointer must not outlive it.
    if (window_ && ImGui::GetCurrentContext()) ImGui::GetIO().IniFilename = nullptr;
    window_.reset();
}

void StudioApp::load_settings() {
    const std::string path = config_dir_ + "/studio.json";
    std::error_code absent;
    if (!fs::exists(path, absent)) return;
    try {
        settings = settings_from_json(json::parse(app::read_input(path, app::kSmallFileMax, "settings file")));
    } catch (const json::exception& e) {
        message = "studio.json ignored: " + std::string(e.what());
    } catch (const app::InputError& e) {
        message = "studio.json ignored: " + std::string(e.what());
    }
}

void StudioApp::save_settings() {
    std::ofstream out(config_dir_ + "/studio.json");
    out << app::json_text(settings_json(settings), 2) << "\n";
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
        window_->fonts_changed();
    }
    applied_scale_ = scale;
    applied_dark_ = settings.dark;
}

void StudioApp::open_model(const std::string& path) {
    worker.stop();
    worker.load_file(path, options.device);
    std::erase(settings.recent_models, path);
    settings.recent_models.insert(settings.recent_models.begin(), path);
    if (settings.recent_models.size() > 8) settings.recent_models.resize(8);
    message = "opening " + path;
}

void StudioApp::send_input() {
    std::string text = input;
    if (text.empty()) return;
    worker.send(text, settings.generation);
    input[0] = 0;
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
                                                                                         frame_ms_generating.end())}};
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
    if (!probes_sent_ || !(s == applied_probes_)) {
        worker.set_probes(s);
        applied_probes_ = s;
        probes_sent_ = true;
    }
}

// ---- Headless driving ----

void StudioApp::run_script_line(const std::string& line) {
    std::stringstream ss(line);
    std::string cmd;
    ss >> cmd;
    std::string rest;
    std::getline(ss >> std::ws, rest);
    auto ints = [&](int n) {
        std::stringstream in(rest);
        std::vector<int64_t> v(static_cast<size_t>(n));
        for (int64_t& x : v)
            if (!(in >> x)) throw std::runtime_error("script: '" + line + "' needs " + std::to_string(n) + " numbers");
        return v;
    };
    if (cmd == "load") open_model(rest);
    else if (cmd == "send") worker.send(rest, settings.generation);
    else if (cmd == "regenerate") worker.regenerate(settings.generation);
    else if (cmd == "edit") {
        std::stringstream in(rest);
        int index = 0;
        in >> index;
        std::string text;
        std::getline(in >> std::ws, text);
        worker.edit_and_rerun(index, text, settings.generation);
    } else if (cmd == "clear") worker.clear_chat();
    else if (cmd == "tokens") settings.generation.max_tokens = int(ints(1)[0]);
    else if (cmd == "panels") settings.open = parse_panels(rest);
    else if (cmd == "layer") sel_layer = int(ints(1)[0]);
    else if (cmd == "head") sel_head = int(ints(1)[0]);
    else if (cmd == "zero-weight") {  // LAYER ROW COL [EXPERT]
        std::stringstream in(rest);
        WeightRef w;
        w.tensor = "ffn_down";
        if (!(in >> w.layer >> w.row >> w.col)) throw std::runtime_error("script: zero-weight LAYER ROW COL [EXPERT]");
        if (in >> w.expert) w.tensor = "ffn_down_exps";
        worker.zero_weight(w);
    } else if (cmd == "mean") {
        const auto v = ints(2);
        worker.set_activation_to_mean(int(v[0]), int(v[1]));
    } else if (cmd == "restore") worker.restore_interventions();
    else if (cmd == "measure-probes") worker.measure_probe_cost();
    else if (cmd == "screenshot") {  // PATH [PANEL]
        std::stringstream in(rest);
        in >> screenshot_path;
        std::string panel;
        in >> panel;
        screenshot_panel = panel.empty() ? -1 : -2;
        for (int p = 0; p < PanelCount; ++p)
            if (panel == panel_name(p)) screenshot_panel = p;
        if (screenshot_panel == -2) throw std::runtime_error("script: screenshot: unknown panel '" + panel + "'");
        if (screenshot_panel >= 0) settings.open[size_t(screenshot_panel)] = true;
        want_screenshot = true;
    } else if (cmd == "export") export_to(rest);
    else if (cmd == "export-csv") {  // PANEL PATH
        std::stringstream in(rest);
        std::string panel, path;
        in >> panel >> path;
        const auto open = parse_panels(panel);
        for (int p = 0; p < PanelCount; ++p)
            if (open[size_t(p)]) export_csv(p, path);
    }
    else if (cmd == "theme") settings.dark = rest != "light";
    else throw std::runtime_error("script: unknown command '" + cmd + "'");
}

bool StudioApp::headless_step() {
    // Everything waits for the worker: each command runs once the previous one has finished
    // and the UI has drawn its result for a few frames.
    if (!worker.idle() || want_screenshot) {
        settle_frames_ = 0;
        return false;
    }
    if (++settle_frames_ < 3) return false;
    settle_frames_ = 0;
    if (!state->error.empty()) throw std::runtime_error(state->error);
    if (!options.prompt.empty()) {
        worker.send(options.prompt, settings.generation);
        options.prompt.clear();
        return false;
    }
    if (script_pos_ < script_.size()) {
        run_script_line(script_[script_pos_++]);
        return false;
    }
    // Done: the final screenshot and export, then exit.
    if (!options.screenshot.empty()) {
        want_screenshot = true;
        screenshot_path = options.screenshot;
        options.screenshot.clear();
        return false;
    }
    if (!options.export_json.empty()) {
        export_to(options.export_json);
        options.export_json.clear();
    }
    return options.exit_when_done;
}

// ---- Frame ----

void StudioApp::handle_shortcuts() {
    ImGuiIO& io = ImGui::GetIO();
    auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
    if (io.KeyCtrl && pressed(GLFW_KEY_ENTER)) send_input();
    if ((io.KeyCtrl && pressed(GLFW_KEY_R)) || pressed(GLFW_KEY_F5)) worker.regenerate(settings.generation);
    if (pressed(GLFW_KEY_ESCAPE) && state->generating) worker.stop();
    if (io.KeyCtrl && pressed(GLFW_KEY_O)) file_dialog_open = true;
    if (io.KeyCtrl && pressed(GLFW_KEY_L)) worker.clear_chat();
    if (io.KeyCtrl && pressed(GLFW_KEY_T)) settings.dark = !settings.dark;
    if (io.KeyCtrl && pressed(GLFW_KEY_S)) {
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
        if (ImGui::MenuItem("Open model...", "Ctrl+O")) file_dialog_open = true;
        if (ImGui::MenuItem("Built-in model")) {
            worker.stop();
            const auto bytes = vkllm::cli::embedded_model();
            worker.load_memory(bytes.data(), bytes.size(),
                               std::string("built-in model ") + vkllm::cli::embedded_model_name(), options.device);
        }
        if (ImGui::BeginMenu("Recent", !settings.recent_models.empty())) {
            for (const std::string& p : settings.recent_models)
                if (ImGui::MenuItem(p.c_str())) open_model(p);
            ImGui::EndMenu();
        }
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
        if (ImGui::MenuItem("Send", "Ctrl+Enter")) send_input();
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
    const std::string model = state->info ? state->info->name + " (" + state->info->arch + ")" : "no model";
    ImGui::Text("%s | %s | %s", model.c_str(), state->device.name.c_str(), state->status.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("| frame %.1f ms", frame_ms.empty() ? 0.0 : frame_ms.back());
    if (!state->error.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(readable(ImVec4(1, 0.35f, 0.3f, 1)), "| %s", state->error.c_str());
    } else if (!state->notice.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(readable(ImVec4(1, 0.8f, 0.3f, 1)), "| %s", state->notice.c_str());
    } else if (!message.empty()) {
        ImGui::SameLine();
        ImGui::TextDisabled("| %s", message.c_str());
    }
    ImGui::End();
    ImGui::PopStyleVar();
}

void StudioApp::draw_file_dialog() {
    if (file_dialog_open) {
        ImGui::OpenPopup("Open a model");
        file_dialog_open = false;
    }
    ImGui::SetNextWindowSize(ImVec2(ui_px(640), ui_px(440)), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Open a model")) return;
    ImGui::TextWrapped("%s", dialog_dir.c_str());
    if (ImGui::Button("Up")) dialog_dir = fs::path(dialog_dir).parent_path().string();
    ImGui::SameLine();
    ImGui::TextDisabled("GGUF files and folders; or drop a file on the window");
    ImGui::BeginChild("files", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * 2), true);
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (const auto& e : fs::directory_iterator(dialog_dir, fs::directory_options::skip_permission_denied, ec))
        if (e.is_directory(ec) || e.path().extension() == ".gguf") entries.push_back(e);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        if (a.is_directory() != b.is_directory()) return a.is_directory();
        return a.path().filename() < b.path().filename();
    });
    if (ec) ImGui::TextDisabled("cannot list: %s", ec.message().c_str());
    for (const auto& e : entries) {
        const bool dir = e.is_directory(ec);
        const std::string name = e.path().filename().string() + (dir ? "/" : "");
        if (ImGui::Selectable(name.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
            if (dir) dialog_dir = e.path().string();
            else snprintf(dialog_path, sizeof dialog_path, "%s", e.path().c_str());
            if (!dir && ImGui::IsMouseDoubleClicked(0)) {
                open_model(dialog_path);
                ImGui::CloseCurrentPopup();
            }
        }
    }
    ImGui::EndChild();
    ImGui::InputText("file", dialog_path, sizeof dialog_path);
    if (ImGui::Button("Open") && dialog_path[0]) {
        open_model(dialog_path);
        ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

void StudioApp::draw_frame() {
    state = worker.state();
    if (vm.version != state->version) vm = compute_view_models(*state, 16);
    handle_shortcuts();
    draw_menu();
    // Default layout (first run; imgui.ini keeps the user's): chat on the left, the views around.
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    const float top = vp->WorkPos.y, W = vp->WorkSize.x, H = vp->WorkSize.y - ImGui::GetFrameHeight();
    struct Box { float x, y, w, h; };
    const Box boxes[PanelCount] = {
        {0.00f, 0.00f, 0.28f, 1.00f},  // chat
        {0.28f, 0.00f, 0.40f, 0.62f},  // attention
        {0.68f, 0.00f, 0.32f, 0.36f},  // activations
        {0.68f, 0.36f, 0.32f, 0.30f},  // experts
        {0.28f, 0.62f, 0.18f, 0.38f},  // lens
        {0.46f, 0.62f, 0.22f, 0.38f},  // architecture
        {0.68f, 0.66f, 0.32f, 0.34f},  // telemetry
    };
    using DrawFn = void (*)(StudioApp&);
    const DrawFn draw[PanelCount] = {draw_chat_panel,  draw_attention_panel,    draw_activations_panel, draw_experts_panel,
                                     draw_lens_panel, draw_architecture_panel, draw_telemetry_panel};
    for (int p = 0; p < PanelCount; ++p) {
        if (!settings.open[size_t(p)]) continue;
        const Box& b = boxes[p];
        ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + b.x * W, top + b.y * H), ImGuiCond_FirstUseEver);
        ImGui::SetNextWindowSize(ImVec2(b.w * W, b.h * H), ImGuiCond_FirstUseEver);
        draw[p](*this);
    }
    draw_file_dialog();
    draw_status_bar();
}

const char* panel_title(int panel) {
    static const char* titles[PanelCount] = {"Chat", "Attention", "Activations", "Experts", "Logit lens", "Architecture", "Telemetry"};
    return titles[panel];
}

Image StudioApp::crop_to_panel(const Image& full, int panel) const {
    const ImGuiWindow* w = ImGui::FindWindowByName(panel_title(panel));
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
    using Clock = std::chrono::steady_clock;
    Clock::time_point last = Clock::now();
    while (!quit_ && !window_->should_close()) {
        // Idle and nothing to drive: sleep until an event (or 50 ms, for the worker's news).
        if (!headless && worker.idle() && !want_screenshot) glfwWaitEventsTimeout(0.05);
        const float scale = settings.ui_scale > 0 ? settings.ui_scale : window_->content_scale();
        if (scale != applied_scale_ || settings.dark != applied_dark_) apply_theme(scale);
        apply_probe_selection();
        window_->begin_frame();
        if (ImGui::IsKeyPressed(GLFW_KEY_Q) && ImGui::GetIO().KeyCtrl) quit_ = true;
        // A failed action (an export to an unwritable place) is a message in the interactive
        // app; the headless run stops on it.
        try {
            draw_frame();
        } catch (const std::exception& e) {
            if (headless) throw;
            message = e.what();
        }
        const float* bg = &ImGui::GetStyle().Colors[ImGuiCol_WindowBg].x;
        Image image;
        const bool capture = want_screenshot;
        window_->end_frame(bg[0] * 0.8f, bg[1] * 0.8f, bg[2] * 0.8f, capture ? &image : nullptr);
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
        }
        const Clock::time_point now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last).count();
        last = now;
        frame_ms.push_back(ms);
        if (state->generating) frame_ms_generating.push_back(ms);
        if (headless && headless_step()) break;
    }
    worker.stop();
    save_settings();
    ImGui::SaveIniSettingsToDisk(ini_path_.c_str());
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
