#include "super_report.h"

#include <cstdio>

#include "json_text.h"
#include "model_file.h"
#include "vkllm/gguf.h"

namespace vkllm::cli {
namespace {

nlohmann::json massive_json(const MassiveValue& m) {
    return {{"layer", m.layer}, {"token", m.token}, {"channel", m.channel}, {"value", m.value}};
}

nlohmann::json layer_json(const LayerActivation& a) {
    return {{"layer", a.layer},          {"max", massive_json(a.max)}, {"median_abs", a.median_abs},
            {"ratio", a.ratio},          {"sun_massive", a.sun_massive}, {"robust_z", a.robust_z},
            {"mad_outlier", a.mad_outlier}};
}

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, format, a, b, c);
    return buf;
}

void append_layer_table(std::string& out, const std::vector<LayerActivation>& layers) {
    out += "  layer     max|x|  token  channel  median|x|      ratio   robust z  Sun  MAD\n";
    for (const LayerActivation& a : layers) {
        char line[160];
        std::snprintf(line, sizeof line, "  %5s %10.3f %6d %8d %10.4f %10.1f %10.1f  %-3s  %s\n",
                      a.layer < 0 ? "embd" : std::to_string(a.layer).c_str(), double(a.max.value), a.max.token,
                      a.max.channel, double(a.median_abs), double(a.ratio), double(a.robust_z),
                      a.sun_massive ? "yes" : "-", a.mad_outlier ? "yes" : "-");
        out += line;
    }
}

}  // namespace

nlohmann::json super_report_json(const SuperWeightReport& r) {
    nlohmann::json j;
    j["text"] = r.text;
    j["tokens"] = r.tokens;
    j["passes"] = r.passes;
    j["thresholds"] = {{"sun_abs", kSunMassiveAbs}, {"sun_ratio", kSunMassiveRatio}, {"mad_z", kMadThreshold}};
    nlohmann::json sw = nlohmann::json::array();
    for (const SuperWeight& s : r.super_weights)
        sw.push_back({{"layer", s.layer},
                      {"tensor", s.tensor},
                      {"expert", s.expert},
                      {"row", s.row},
                      {"col", s.col},
                      {"value", s.value},
                      {"weight_ratio", s.weight_ratio},
                      {"token", s.token},
                      {"in_abs", s.in_abs},
                      {"in_ratio", s.in_ratio},
                      {"out_abs", s.out_abs},
                      {"out_ratio", s.out_ratio},
                      {"activation", massive_json(s.activation)},
                      {"activation_ratio", s.activation_ratio},
                      {"activation_after_zeroing", s.activation_after_zeroing}});
    j["super_weights"] = sw;
    j["massive_activations"] = nlohmann::json::array();
    for (const LayerActivation& a : r.layers) j["massive_activations"].push_back(layer_json(a));
    j["massive_activations_after_zeroing"] = nlohmann::json::array();
    for (const LayerActivation& a : r.layers_after) j["massive_activations_after_zeroing"].push_back(layer_json(a));
    j["attention_sinks"] = nlohmann::json::array();
    for (const SinkMass& s : r.sinks)
        j["attention_sinks"].push_back({{"layer", s.layer}, {"head", s.head}, {"first_token_mass", s.first_token_mass}});
    return j;
}

std::string super_report_text(const SuperWeightReport& r, const Model& model) {
    std::string out = "text: " + quoted_one_line(r.text) + " (" + std::to_string(r.tokens.size()) + " tokens, " +
                      std::to_string(r.passes) + " forward passes)\n";
    if (r.super_weights.empty()) {
        out += "super weights: none (no ffn_down weight writes a massive activation)\n";
    } else {
        out += "super weights (down_proj.weight[row, col]: row = hidden channel, col = FFN channel):\n";
        for (const SuperWeight& s : r.super_weights) {
            out += "  layer " + std::to_string(s.layer) + " " + s.tensor +
                   (s.expert >= 0 ? " expert " + std::to_string(s.expert) : "") + " [" + std::to_string(s.row) + ", " +
                   std::to_string(s.col) + "] = " + fmt("%.5g", s.value) + fmt(" (%.1fx the median |w|)", s.weight_ratio) +
                   "\n    on token " + std::to_string(s.token) + " " +
                   quoted_one_line(model.piece(r.tokens[size_t(s.token)], true), 16) +
                   fmt(": |input| %.4g (%.0fx median), |output| %.4g", s.in_abs, s.in_ratio, s.out_abs) +
                   fmt(" (%.0fx median)\n", s.out_ratio) +
                   fmt("    residual after the layer: %.4g (%.0fx the median |x|); with it zeroed: %.4g\n",
                       s.activation.value, s.activation_ratio, s.activation_after_zeroing);
        }
    }
    out += "residual stream per layer (Sun: |x| > 100 and > 1000x median; MAD: robust z > 50):\n";
    append_layer_table(out, r.layers);
    if (!r.super_weights.empty()) {
        out += "with the super weights zeroed:\n";
        append_layer_table(out, r.layers_after);
    }
    if (!r.sinks.empty()) {
        out += "attention-sink mass (mean probability on the first token, queries at positions >= 1):\n";
        int layer = -2;
        for (const SinkMass& s : r.sinks) {
            if (s.layer != layer) {
                if (layer != -2) out += "\n";
                out += "  layer " + std::to_string(s.layer) + ":";
                layer = s.layer;
            }
            out += fmt(" %.2f", s.first_token_mass);
        }
        out += "\n";
    }
    return out;
}

int inspect_super(const std::string& path, bool json) {
    auto file = open_model_file(path);
    auto model = Model::load(*file);
    const SuperWeightReport report = find_super_weights(*model);
    if (json) std::printf("%s\n", app::json_text(super_report_json(report), 2).c_str());
    else std::fputs(super_report_text(report, *model).c_str(), stdout);
    return 0;
}

}  // namespace vkllm::cli
