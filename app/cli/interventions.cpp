#include "interventions.h"

#include <cmath>
#include <sstream>

#include "options.h"

namespace vkllm::cli {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
    if (!text.empty() && text.back() == sep) parts.push_back("");
    return parts;
}

int64_t parse_int(const std::string& option, const std::string& item, const std::string& text, int64_t min) {
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size() || v < min)
        throw UsageError(option + " '" + item + "': '" + text + "' is not an integer >= " + std::to_string(min));
    return v;
}

}  // namespace

std::vector<WeightRef> parse_zero_weights(const std::string& text) {
    std::vector<WeightRef> refs;
    for (const std::string& item : split(text, ',')) {
        const std::vector<std::string> f = split(item, ':');
        if (f.size() != 4 && f.size() != 5)
            throw UsageError("--zero-weight '" + item + "': expected LAYER:TENSOR:ROW:COL[:EXPERT] (e.g. 1:ffn_down:2533:7890)");
        if (f[1].empty()) throw UsageError("--zero-weight '" + item + "': the tensor name is empty");
        WeightRef w;
        w.layer = int(parse_int("--zero-weight", item, f[0], -1));
        w.tensor = f[1];
        w.row = parse_int("--zero-weight", item, f[2], 0);
        w.col = parse_int("--zero-weight", item, f[3], 0);
        if (f.size() == 5) w.expert = int(parse_int("--zero-weight", item, f[4], 0));
        refs.push_back(w);
    }
    return refs;
}

std::vector<ResidualEdit> parse_set_activations(const std::string& text) {
    std::vector<ResidualEdit> edits;
    for (const std::string& item : split(text, ',')) {
        const size_t eq = item.find('=');
        const std::vector<std::string> f = split(item.substr(0, eq), ':');
        if (eq == std::string::npos || f.size() != 2)
            throw UsageError("--set-activation '" + item + "': expected LAYER:CHANNEL=VALUE or LAYER:CHANNEL=mean");
        ResidualEdit e;
        e.layer = int(parse_int("--set-activation", item, f[0], -1));
        e.channel = int(parse_int("--set-activation", item, f[1], 0));
        const std::string value = item.substr(eq + 1);
        if (value == "mean") {
            e.mode = ResidualEdit::Mode::Mean;
        } else {
            size_t used = 0;
            float v = NAN;
            try {
                v = std::stof(value, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (value.empty() || used != value.size() || !std::isfinite(v))
                throw UsageError("--set-activation '" + item + "': '" + value + "' is not a number or 'mean'");
            e.mode = ResidualEdit::Mode::Value;
            e.value = v;
        }
        edits.push_back(e);
    }
    return edits;
}

}  // namespace vkllm::cli
