// The studio's settings (persisted in studio.json), its panels by name and its command line.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine_worker.h"
#include "thread_priority.h"

namespace vkllm::studio {

enum PanelId { PanelChat, PanelAttention, PanelActivations, PanelExperts, PanelLens, PanelArchitecture, PanelTelemetry, PanelCount };
const char* panel_name(int panel);  // "chat", "attention", ...
// "all" or a comma-separated list of panel names; throws std::invalid_argument naming an unknown one.
std::array<bool, PanelCount> parse_panels(const std::string& list);

struct StudioOptions {
    std::string model;          // -m; empty: the built-in model
    std::string device;         // --device
    std::string prompt;         // --prompt: sent once the model is loaded
    int n_predict = 32;         // -n
    std::string panels = "";    // --panels (empty: as the settings have them)
    std::string screenshot;     // --screenshot OUT.png
    std::string export_json;    // --export OUT.json
    std::string script;         // --script FILE: one command per line
    bool exit_when_done = false;  // --exit
    std::optional<float> temperature;  // --temp (absent: the settings' value; <= 0: greedy)
    int64_t seed = -1;          // --seed (-1: the settings' value)
    std::string theme;          // --theme dark|light (empty: the settings' theme)
    float scale = 0;            // --scale S: the UI scale (0: the settings' or the monitor's)
    int n_ctx = 0;              // --ctx: the context in tokens (0: the model's, at most 2048)
    int width = 1600, height = 1000;
    std::string config_dir;     // --config-dir (default: $XDG_CONFIG_HOME/vkllm)
    int engine_nice = kEngineNice;  // --engine-nice: the engine thread's nice value (0: the UI's)
    // --draw events|continuous: frames on events only (the window's default), or every frame
    // drawn at once (the headless run's default, which measures the worst case).
    std::string draw;
};
// Parses the command line; throws std::invalid_argument with a message for the user (the exit
// status is then 2, as the CLI's for a bad option). Every number is checked as the CLI checks
// it: a value that is not wholly a number, is NaN or infinite, or is out of the option's range
// is an error naming the option, never a silent fallback.
StudioOptions parse_options(int argc, char** argv);
std::string usage();

// What the user chose: persisted in studio.json.
struct Settings {
    bool dark = true;
    float ui_scale = 0;  // 0: the monitor's content scale
    GenerationSettings generation;
    std::array<bool, PanelCount> open{true, true, true, true, true, true, true};
    bool log_scale = true;
    int color_mode = 1;  // 0 plain, 1 surprisal, 2 expert at `color_layer`
    int color_layer = 0;
    std::vector<std::string> recent_models;
};
nlohmann::json settings_json(const Settings& s);
Settings settings_from_json(const nlohmann::json& j);  // missing keys keep their defaults

}  // namespace vkllm::studio
