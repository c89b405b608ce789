// vkllm-studio driven without a person (--script, --prompt): the script's commands, one per
// frame when the app is idle, and the keys and text they type fed to ImGui as a keyboard would.
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <imgui.h>
#include "heatmap.h"
#include "linked_text.h"
#include "studio_app.h"

namespace vkllm::studio {

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
    else if (cmd == "state") {  // on | off | LAYER [HEAD]: the State window, its layer and map head
        if (rest == "on" || rest == "off") {
            state_open = rest == "on";
        } else {
            std::stringstream in(rest);
            if (!(in >> state_layer)) throw std::runtime_error("script: state on|off|LAYER [HEAD]");
            in >> state_head;
            state_open = true;
        }
    }
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
        if (panel == "state") screenshot_panel = kStatePanel, state_open = true;
        if (screenshot_panel == -2) throw std::runtime_error("script: screenshot: unknown panel '" + panel + "'");
        if (screenshot_panel >= 0 && screenshot_panel < PanelCount) settings.open[size_t(screenshot_panel)] = true;
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
    else if (cmd == "type") {  // TEXT: typed into the chat box, as keys would
        // The box takes the keyboard a frame after it is asked to.
        for (auto k : {SyntheticInput::Kind::FocusInput, SyntheticInput::Kind::Wait, SyntheticInput::Kind::Wait})
            synthetic_.push_back({k});
        synthetic_.push_back({SyntheticInput::Kind::Type, rest});
    } else if (cmd == "key") {  // enter | shift+enter | up | down | escape: one tap
        std::string k = rest;
        const bool shift = k.rfind("shift+", 0) == 0;
        if (shift) k = k.substr(6);
        const int key = k == "enter" ? GLFW_KEY_ENTER : k == "up" ? GLFW_KEY_UP : k == "down" ? GLFW_KEY_DOWN
                        : k == "escape" ? GLFW_KEY_ESCAPE : -1;
        if (key < 0) throw std::runtime_error("script: key wants enter, shift+enter, up, down or escape, got '" + rest + "'");
        for (auto k : {SyntheticInput::Kind::FocusInput, SyntheticInput::Kind::Wait, SyntheticInput::Kind::Wait})
            synthetic_.push_back({k});
        synthetic_.push_back({SyntheticInput::Kind::KeyDown, "", key, shift});
        synthetic_.push_back({SyntheticInput::Kind::KeyUp, "", key, shift});
    } else if (cmd == "system") snprintf(system_prompt, sizeof system_prompt, "%s", rest.c_str());
    else if (cmd == "save-chat") save_chat(rest);
    else if (cmd == "open-chat") open_chat(rest);
    else if (cmd == "context-shift") worker.shift_context(settings.generation);
    else if (cmd == "open-model") request_model(rest);  // as the menu: asks when a conversation would be dropped
    else if (cmd == "switch-model") {                    // yes | no: the answer to that question
        if (rest != "yes" && rest != "no") throw std::runtime_error("script: switch-model yes|no");
        switch_answer = rest == "yes" ? 1 : 2;
    }
    else if (cmd == "context-stop") context_choice_dismissed = true;
    else if (cmd == "maximise") {  // PANEL | none
        maximised = -1;
        for (int p = 0; p < PanelCount; ++p)
            if (rest == panel_name(p)) maximised = p;
        if (maximised < 0 && rest != "none") throw std::runtime_error("script: maximise: unknown panel '" + rest + "'");
    } else if (cmd == "reset-layout") {
        layout = default_layout();
        maximised = -1;
    } else if (cmd == "drag-splitter") {  // INDEX PIXELS
        const auto v = ints(2);
        if (v[0] < 0 || v[0] >= int64_t(tiling.splitters.size())) throw std::runtime_error("script: no splitter " + rest);
        drag_splitter(layout, tiling.splitters[size_t(v[0])], float(v[1]), ui_px(120));
    } else if (cmd == "zoom") {  // MAP X0 X1 Y0 Y1: the visible fractions of a map's columns and rows
        std::stringstream in(rest);
        std::string map;
        double x0, x1, y0, y1;
        if (!(in >> map >> x0 >> x1 >> y0 >> y1) || !(x0 < x1 && y0 < y1 && x0 >= 0 && y0 >= 0 && x1 <= 1 && y1 <= 1))
            throw std::runtime_error("script: zoom MAP X0 X1 Y0 Y1 with 0 <= X0 < X1 <= 1 and 0 <= Y0 < Y1 <= 1");
        request_map_zoom(map, x0, x1, y0, y1);
    } else if (cmd == "link") {  // POSITION [mean] | none: pin the linked text view on a token
        std::stringstream in(rest);
        std::string what, mean;
        in >> what >> mean;
        if (what == "none") pin_linked_token(-1, false);
        else {
            int pos = -1;
            try { pos = std::stoi(what); } catch (const std::exception&) {}
            if (pos < 0 || (!mean.empty() && mean != "mean")) throw std::runtime_error("script: link POSITION [mean] | none");
            pin_linked_token(pos, mean == "mean");
        }
    } else throw std::runtime_error("script: unknown command '" + cmd + "'");
}

bool StudioApp::headless_step() {
    // Everything waits for the worker: each command runs once the previous one has finished
    // and the UI has drawn its result for a few frames.
    if (!worker.idle() || want_screenshot || !synthetic_.empty()) {
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

void StudioApp::apply_synthetic_input() {
    ImGuiIO& io = ImGui::GetIO();
    if (synthetic_.empty()) return;
    const SyntheticInput in = synthetic_.front();
    synthetic_.pop_front();
    switch (in.kind) {
    case SyntheticInput::Kind::FocusInput: focus_input = true; break;
    case SyntheticInput::Kind::Wait: break;
    case SyntheticInput::Kind::Type: io.AddInputCharactersUTF8(in.text.c_str()); break;
    case SyntheticInput::Kind::KeyDown:
        io.KeysDown[in.key] = true;
        io.KeyShift = in.shift;
        break;
    case SyntheticInput::Kind::KeyUp:
        io.KeysDown[in.key] = false;
        io.KeyShift = false;
        break;
    }
}

}  // namespace vkllm::studio
