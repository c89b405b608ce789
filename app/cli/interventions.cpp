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

app::TextEffect judge_over_text(Model& model, const std::string& text, const std::vector<WeightRef>& zeroed,
                                const std::vector<ResidualEdit>& residual, SessionOptions options,
                                std::vector<int32_t>* tokens_out) {
    if (zeroed.empty() && residual.empty())
        throw UsageError("--effect-text judges an intervention: give --zero-weight or --set-activation");
    const std::vector<int32_t> tokens = model.tokenize(text, /*add_special=*/true, /*parse_special=*/false);
    if (tokens.size() < 2)
        throw UsageError("--effect-text: the text is " + std::to_string(tokens.size()) +
                         " token(s); the text's perplexity needs at least 2");
    // One context holds the whole text: no longer than the model was trained on.
    if (const int trained = model.info().n_ctx_train; trained > 0 && int64_t(tokens.size()) > trained)
        throw UsageError("--effect-text: the text is " + std::to_string(tokens.size()) +
                         " tokens, longer than the model's training context of " + std::to_string(trained) +
                         " tokens; judge a shorter text");
    app::InterventionState plain, edited;
    for (const WeightRef& w : zeroed) edited.weights.emplace_back(w, 0.0f);
    edited.residual = residual;
    options.n_ctx = int(tokens.size());
    options.probes = {};
    Session before(model, options), after(model, options);
    app::TextEffect e = app::text_effect_streamed(model, before, after, tokens, plain, edited, /*n_moved=*/5);
    if (tokens_out) *tokens_out = tokens;
    return e;
}

nlohmann::json effect_json(const Model& model, const std::vector<int32_t>& tokens, const app::TextEffect& e,
                           const std::string& path) {
    nlohmann::json moved = nlohmann::json::array();
    for (const app::PositionShift& s : e.moved) {
        const size_t p = size_t(s.position);
        moved.push_back({{"position", s.position},
                         {"kl", s.kl},
                         {"token", model.piece(tokens[p])},
                         {"next", p + 1 < tokens.size() ? nlohmann::json(model.piece(tokens[p + 1])) : nlohmann::json()}});
    }
    return {{"text", path},
            {"positions", e.positions},
            {"perplexity_before", e.perplexity_before},
            {"perplexity_after", e.perplexity_after},
            {"mean_kl", e.mean_kl},
            {"max_kl", e.max_kl},
            {"no_effect", e.no_effect()},
            {"kl", e.kl},
            {"moved", moved}};
}

void print_effect(std::FILE* out, const Model& model, const std::vector<int32_t>& tokens, const app::TextEffect& e,
                  const std::string& path) {
    std::fprintf(out, "vkllm: the intervention over %s (%d tokens): perplexity %.4f -> %.4f", path.c_str(), e.positions,
                 e.perplexity_before, e.perplexity_after);
    if (e.no_effect()) {
        std::fprintf(out, "; no effect over %d tokens (every position's KL below %g nats)\n", e.positions,
                     double(app::TextEffect::kNoEffect));
        return;
    }
    std::fprintf(out, "; KL(before || after) per position: mean %.6g, max %.6g nats\n", double(e.mean_kl), double(e.max_kl));
    for (const app::PositionShift& s : e.moved) {
        const size_t p = size_t(s.position);
        const std::string next = p + 1 < tokens.size() ? model.piece(tokens[p + 1]) : "(the next token)";
        std::fprintf(out, "  position %5d  KL %.6g  after '%s', predicting '%s'\n", s.position, double(s.kl),
                     model.piece(tokens[p]).c_str(), next.c_str());
    }
}

}  // namespace vkllm::cli
