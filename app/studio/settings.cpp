// The studio's settings, panels by name and command line.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "settings.h"

namespace vkllm::studio {

using nlohmann::json;

// ---- Panels by name ----

const char* panel_name(int panel) {
    static const char* names[PanelCount] = {"chat", "attention", "activations", "experts", "lens", "architecture", "telemetry"};
    return panel >= 0 && panel < PanelCount ? names[panel] : "?";
}

std::array<bool, PanelCount> parse_panels(const std::string& list) {
    std::array<bool, PanelCount> open{};
    if (list == "all") {
        open.fill(true);
        return open;
    }
    std::stringstream ss(list);
    std::string name;
    while (std::getline(ss, name, ',')) {
        if (name.empty()) continue;
        int found = -1;
        for (int p = 0; p < PanelCount; ++p)
            if (name == panel_name(p)) found = p;
        if (found < 0)
            throw std::invalid_argument("--panels: unknown panel '" + name +
                                        "' (all, chat, attention, activations, experts, lens, architecture, telemetry)");
        open[size_t(found)] = true;
    }
    return open;
}


// ---- Settings ----

json settings_json(const Settings& s) {
    const SamplerParams& p = s.generation.sampler;
    json open = json::object();
    for (int i = 0; i < PanelCount; ++i) open[panel_name(i)] = s.open[size_t(i)];
    return {{"dark", s.dark},
            {"ui_scale", s.ui_scale},
            {"max_tokens", s.generation.max_tokens},
            {"system_prompt", s.generation.system},
            {"sampler",
             {{"temperature", p.temperature},
              {"top_k", p.top_k},
              {"top_p", p.top_p},
              {"min_p", p.min_p},
              {"repeat_penalty", p.repeat_penalty},
              {"presence_penalty", p.presence_penalty},
              {"frequency_penalty", p.frequency_penalty},
              {"repeat_last_n", p.repeat_last_n},
              {"seed", p.seed}}},
            {"panels", open},
            {"log_scale", s.log_scale},
            {"color_mode", s.color_mode},
            {"color_layer", s.color_layer},
            {"recent_models", s.recent_models}};
}

Settings settings_from_json(const json& j) {
    Settings s;
    auto get = [&](const json& o, const char* key, auto& into) {
        if (o.is_object() && o.contains(key)) {
            try {
                into = o.at(key).get<std::decay_t<decltype(into)>>();
            } catch (const json::exception&) {  // a wrong type keeps the default
            }
        }
    };
    get(j, "dark", s.dark);
    get(j, "ui_scale", s.ui_scale);
    get(j, "max_tokens", s.generation.max_tokens);
    get(j, "system_prompt", s.generation.system);
    if (j.contains("sampler")) {
        const json& p = j["sampler"];
        SamplerParams& sp = s.generation.sampler;
        get(p, "temperature", sp.temperature);
        get(p, "top_k", sp.top_k);
        get(p, "top_p", sp.top_p);
        get(p, "min_p", sp.min_p);
        get(p, "repeat_penalty", sp.repeat_penalty);
        get(p, "presence_penalty", sp.presence_penalty);
        get(p, "frequency_penalty", sp.frequency_penalty);
        get(p, "repeat_last_n", sp.repeat_last_n);
        get(p, "seed", sp.seed);
        try {
            validate(sp);
        } catch (const std::exception&) {
            sp = SamplerParams{};
        }
    }
    if (j.contains("panels"))
        for (int i = 0; i < PanelCount; ++i) get(j["panels"], panel_name(i), s.open[size_t(i)]);
    get(j, "log_scale", s.log_scale);
    get(j, "color_mode", s.color_mode);
    get(j, "color_layer", s.color_layer);
    get(j, "recent_models", s.recent_models);
    s.ui_scale = std::clamp(s.ui_scale, 0.0f, 4.0f);
    s.generation.max_tokens = std::clamp(s.generation.max_tokens, 1, 4096);
    return s;
}

// ---- Command line ----

std::string usage() {
    return "usage: vkllm-studio [-m MODEL.gguf] [--device D] [options]\n"
           "  -m, --model PATH     a GGUF model (default: the built-in model)\n"
           "  --device D           the engine's device, by index or name\n"
           "  --ctx N              the context in tokens (default: the model's, at most 2048)\n"
           "headless proof:\n"
           "  --prompt TEXT        send TEXT once the model is loaded\n"
           "  -n N                 tokens to generate (default 32)\n"
           "  --panels all|LIST    panels to open: chat,attention,activations,experts,lens,architecture,telemetry\n"
           "  --screenshot OUT.png the window once the answer is complete\n"
           "  --export OUT.json    the probes (vkllm probe's shape) and every panel's numbers\n"
           "  --script FILE        commands, one a line, at most 16 MiB (see docs/studio.md)\n"
           "  --exit               quit when done (exit status 0 on success)\n"
           "  --temp T, --seed S   sampler overrides (--temp 0: greedy)\n"
           "  --size WxH           window size (default 1600x1000)\n"
           "  --theme dark|light   the colour theme (saved, like the View menu's choice)\n"
           "  --scale S            the UI scale, 0.75 to 4 (saved; default: the monitor's)\n"
           "  --config-dir DIR     where studio.json lives (default $XDG_CONFIG_HOME/vkllm)\n"
           "  --engine-nice N      the engine's CPU priority below the UI's, 0 (the same) to 19 (default 10)\n"
           "  --draw events|continuous  frames on events only (default with a window) or one after\n"
           "                       another (default of a headless run)\n";
}

namespace {

constexpr int64_t kMaxPredict = std::numeric_limits<int>::max();  // -n, as the CLI's
constexpr int64_t kMaxWindow = 16384;                              // --size, either side

// The command line's numbers, checked as the CLI's options are (app/cli/options.cpp): the whole
// value must be the number, within the option's range; a message names the option.
int64_t integer_value(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || std::isspace(static_cast<unsigned char>(text[0])))
        throw std::invalid_argument("option " + flag + " expects an integer in " + range + ", got '" + text + "'");
    if (errno == ERANGE || v < lo || v > hi)
        throw std::invalid_argument("option " + flag + " is out of its range " + range + ", got " + text);
    return v;
}

double real_value(const std::string& flag, const std::string& text, double lo, double hi) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || std::isspace(static_cast<unsigned char>(text[0])))
        throw std::invalid_argument("option " + flag + " expects a number, got '" + text + "'");
    if (!std::isfinite(v)) throw std::invalid_argument("option " + flag + " must be a finite number, got " + text);
    if (v < lo || v > hi) {
        std::ostringstream range;
        range << "[" << lo << ", " << hi << "]";
        throw std::invalid_argument("option " + flag + " is out of its range " + range.str() + ", got " + text);
    }
    return v;
}

}  // namespace

StudioOptions parse_options(int argc, char** argv) {
    StudioOptions o;
    auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("option " + std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    auto integer = [&](int& i, int64_t lo, int64_t hi) {
        const std::string flag = argv[i];
        return integer_value(flag, value(i), lo, hi);
    };
    auto real = [&](int& i, double lo, double hi) {
        const std::string flag = argv[i];
        return real_value(flag, value(i), lo, hi);
    };
    constexpr double kHuge = std::numeric_limits<double>::max();
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-m" || a == "--model") o.model = value(i);
        else if (a == "--device") o.device = value(i);
        else if (a == "--prompt" || a == "-p") o.prompt = value(i);
        else if (a == "-n") o.n_predict = int(integer(i, 0, kMaxPredict));
        else if (a == "--ctx" || a == "-c") o.n_ctx = int(integer(i, 8, 1 << 20));
        else if (a == "--panels") {
            o.panels = value(i);
            parse_panels(o.panels);  // reject unknown names now
        } else if (a == "--screenshot") o.screenshot = value(i);
        else if (a == "--export") o.export_json = value(i);
        else if (a == "--script") o.script = value(i);
        else if (a == "--exit") o.exit_when_done = true;
        else if (a == "--temp") o.temperature = float(real(i, -kHuge, kHuge));  // finite; <= 0: greedy, as the CLI's
        else if (a == "--seed") o.seed = integer(i, -1, std::numeric_limits<int64_t>::max());
        else if (a == "--config-dir") o.config_dir = value(i);
        else if (a == "--engine-nice") o.engine_nice = int(integer(i, 0, 19));
        else if (a == "--draw") {
            o.draw = value(i);
            if (o.draw != "events" && o.draw != "continuous")
                throw std::invalid_argument("--draw wants events or continuous, got " + o.draw);
        }
        else if (a == "--theme") {
            o.theme = value(i);
            if (o.theme != "dark" && o.theme != "light") throw std::invalid_argument("--theme wants dark or light, got " + o.theme);
        } else if (a == "--scale") o.scale = float(real(i, 0.75, 4.0));
        else if (a == "--size") {
            const std::string v = value(i);
            const size_t x = v.find('x');
            if (x == std::string::npos) throw std::invalid_argument("option --size wants WIDTHxHEIGHT, got '" + v + "'");
            o.width = int(integer_value("--size (its width)", v.substr(0, x), 320, kMaxWindow));
            o.height = int(integer_value("--size (its height)", v.substr(x + 1), 240, kMaxWindow));
        } else if (a == "-h" || a == "--help") throw std::invalid_argument("");
        else throw std::invalid_argument("unknown option " + a);
    }
    if (o.exit_when_done && o.prompt.empty() && o.script.empty())
        throw std::invalid_argument("--exit needs --prompt or --script (something to do before exiting)");
    return o;
}

}  // namespace vkllm::studio
