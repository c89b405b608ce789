#include "activation_report.h"

#include <string>

namespace vkllm::cli {

bool is_massive(const ResidualStat& s) {
    return s.max_abs > kMassiveAbs && s.max_abs > kMassiveRatio * s.median_abs;
}

namespace {

// The token at a position, quoted, with control characters escaped.
std::string token_label(const std::vector<int32_t>& tokens, int index, const Model& model) {
    if (index < 0 || index >= int(tokens.size())) return "?";
    std::string out = "\"";
    for (char c : model.piece(tokens[size_t(index)], /*render_special=*/true)) {
        if (c == '\n') out += "\\n";
        else if (c == '"') out += "\\\"";
        else out += c;
    }
    return out + "\"";
}

}  // namespace

void print_activation_report(std::FILE* out, const std::vector<ResidualStat>& stats, const std::vector<int32_t>& tokens,
                             int first_pos, const Model& model) {
    std::fprintf(out, "vkllm: residual stream over %zu tokens (positions %d-%d), after each layer:\n", tokens.size(),
                 first_pos, first_pos + int(tokens.size()) - 1);
    std::fprintf(out, "  layer     max|x|  position  token            channel   median|x|   max/median\n");
    int massive = 0;
    for (const ResidualStat& s : stats) {
        const std::string layer = s.layer < 0 ? "embd" : std::to_string(s.layer);
        const double ratio = s.median_abs > 0 ? double(s.max_abs) / double(s.median_abs) : 0.0;
        const std::string label = token_label(tokens, s.token - first_pos, model);
        std::fprintf(out, "  %5s %10.3f  %8d  %-16s %7d  %10.4f  %10.1fx%s\n", layer.c_str(), double(s.max_abs), s.token,
                     label.c_str(), s.channel, double(s.median_abs), ratio, is_massive(s) ? "  MASSIVE" : "");
        massive += is_massive(s);
    }
    if (massive == 0)
        std::fprintf(out, "vkllm: no massive activations (none above %.0f and %.0fx the median)\n", double(kMassiveAbs),
                     double(kMassiveRatio));
    else
        std::fprintf(out, "vkllm: massive activations (above %.0f and %.0fx the median) after %d of %zu layers\n",
                     double(kMassiveAbs), double(kMassiveRatio), massive, stats.size());
}

}  // namespace vkllm::cli
