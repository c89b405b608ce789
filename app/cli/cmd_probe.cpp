// vkllm probe: runs a prompt (and greedy tokens after it) with the chosen probes and writes
// everything they saw as one JSON document. Uses only the public API (vkllm/*.h).
//
// The document (field names are a contract; docs/api.md describes them):
//   model       the ModelInfo: arch, name, n_layer, n_embd, n_vocab, layers (attention, ffn)
//   tokens      [{position, id, text, generated}] every token evaluated, in order
//   attention   [{layer, n_head, window, chunk, query_pos[], key_pos[], probs[head][query][key],
//                 sink[head][query] or null}]: the prompt's rows, then one row per generated token
//   residual    [{eval, layer, max_abs, position, channel, median_abs, token_max_abs[],
//                 token_channel[], top[{value, position, channel}]}] per eval (eval 0: the
//                 prompt, eval i: the i-th generated token)
//   ffn_down    [{eval, layer, expert, in_max_abs, in_position, in_channel, in_median_abs,
//                 out_max_abs, out_position, out_channel, out_median_abs}] per eval
//   routing     [{layer, top_k, positions[], experts[token][k], weights[token][k]}]
//   logit_lens  [{eval, layer, position, top[{id, text, p}]}]: each eval's newest position
//   timings     {passes, dispatches, barriers, total_ms, by_op[{op, ms, count}], by_layer[ms]}
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "embedded_model.h"
#include "options.h"
#include "output_file.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

using nlohmann::json;

const char* kUsage =
    "vkllm probe [-m MODEL.gguf] -p PROMPT [-n N] [--attention all|L,L..] [--residual] [--ffn-down]\n"
    "            [--routing] [--logit-lens all|L,L..] [--lens-top K] [--timings] [--exact] [--device D]\n"
    "            -o OUT.json\n"
    "  runs PROMPT and N greedy tokens after it (stopping at an end-of-generation token) with the\n"
    "  chosen probes and writes them as one JSON document (docs/api.md describes its fields)\n"
    "  without -m: the small model built into vkllm";

// "all" or a comma-separated list of layer indices, each in [0, n_layer).
std::vector<int> parse_layers(const std::string& option, const std::string& text, int n_layer) {
    std::vector<int> layers;
    if (text == "all") {
        for (int l = 0; l < n_layer; ++l) layers.push_back(l);
        return layers;
    }
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end) throw UsageError(option + " expects 'all' or layers such as 0,3; got '" + text + "'");
        if (v < 0 || v >= n_layer)
            throw UsageError(option + ": layer " + item + " is out of range (the model has " + std::to_string(n_layer) +
                             " layers)");
        if (std::find(layers.begin(), layers.end(), int(v)) == layers.end()) layers.push_back(int(v));
        start = comma + 1;
    }
    return layers;
}

json model_json(const ModelInfo& info) {
    json layers = json::array();
    for (const LayerInfo& l : info.layers) {
        const AttentionInfo& a = l.attention;
        const FfnInfo& f = l.ffn;
        json attention = {{"kind", a.kind},       {"n_head", a.n_head},   {"n_head_kv", a.n_head_kv},
                          {"head_dim", a.head_dim}, {"head_dim_v", a.head_dim_v}, {"window", a.window},
                          {"chunk", a.chunk},     {"causal", a.causal},   {"sinks", a.sinks},
                          {"softcap", a.softcap}, {"qk_norm", a.qk_norm}, {"kv_lora_rank", a.kv_lora_rank},
                          {"rope", {{"enabled", a.rope.enabled}, {"n_dims", a.rope.n_dims},
                                    {"freq_base", a.rope.freq_base}, {"scaling", a.rope.scaling}}}};
        json ffn = {{"kind", f.kind},           {"activation", f.activation}, {"n_ff", f.n_ff},
                    {"n_expert", f.n_expert},   {"top_k", f.top_k},           {"n_ff_expert", f.n_ff_expert},
                    {"n_shared_expert_ff", f.n_shared_expert_ff}, {"gating", f.gating}};
        layers.push_back({{"index", l.index}, {"norm_placement", l.norm_placement}, {"attention", attention}, {"ffn", ffn}});
    }
    return {{"arch", info.arch},       {"name", info.name},     {"source", info.source},
            {"n_layer", info.n_layer}, {"n_embd", info.n_embd}, {"n_vocab", info.n_vocab},
            {"n_ctx_train", info.n_ctx_train}, {"norm", info.norm}, {"tied_embeddings", info.tied_embeddings},
            {"final_softcap", info.final_softcap}, {"parameters", info.parameters}, {"layers", layers}};
}

// One layer's attention rows gathered over the evals: each row keeps its keys by position.
struct AttentionRows {
    int n_head = 0, window = 0, chunk = 0;
    bool causal = true, has_sink = false;
    std::vector<int> query_pos;
    std::vector<std::vector<std::vector<float>>> probs;  // [head][query][key position]
    std::vector<std::vector<float>> sink;                // [head][query]

    void add(const AttentionMap& m) {
        if (probs.empty()) {
            n_head = m.n_head;
            window = m.window;
            chunk = m.chunk;
            causal = m.causal;
            probs.resize(size_t(m.n_head));
            sink.resize(size_t(m.n_head));
        }
        has_sink = has_sink || !m.sink.empty();
        for (int q = 0; q < m.n_query(); ++q) {
            query_pos.push_back(m.query_pos[size_t(q)]);
            for (int h = 0; h < m.n_head; ++h) {
                std::vector<float> row(size_t(m.key_pos.empty() ? 0 : m.key_pos.back() + 1), 0.0f);
                for (int k = 0; k < m.n_key(); ++k) row[size_t(m.key_pos[size_t(k)])] = m.at(h, q, k);
                probs[size_t(h)].push_back(std::move(row));
                sink[size_t(h)].push_back(m.sink.empty() ? 0.0f : m.sink[size_t(h) * size_t(m.n_query()) + size_t(q)]);
            }
        }
    }

    // Every row padded to the same key axis: positions 0..the newest query.
    json to_json(int layer) {
        const int n_key = query_pos.empty() ? 0 : *std::max_element(query_pos.begin(), query_pos.end()) + 1;
        std::vector<int> key_pos(static_cast<size_t>(n_key));
        for (int k = 0; k < n_key; ++k) key_pos[size_t(k)] = k;
        for (auto& head : probs)
            for (auto& row : head) row.resize(size_t(n_key), 0.0f);
        return {{"layer", layer},         {"n_head", n_head}, {"window", window}, {"chunk", chunk},
                {"causal", causal},       {"query_pos", query_pos}, {"key_pos", key_pos}, {"probs", probs},
                {"sink", has_sink ? json(sink) : json(nullptr)}};
    }
};

// [n][k] from a flat row-major vector.
template <typename T>
json rows_of(const std::vector<T>& flat, int k) {
    json rows = json::array();
    for (size_t i = 0; k > 0 && i + size_t(k) <= flat.size(); i += size_t(k))
        rows.push_back(std::vector<T>(flat.begin() + long(i), flat.begin() + long(i) + k));
    return rows;
}

struct Collector {
    std::map<int, AttentionRows> attention;
    json residual = json::array(), ffn_down = json::array(), logit_lens = json::array();
    std::map<int, json> routing;  // by layer
    std::vector<OpTiming> timings;
    int passes = 0, dispatches = 0, barriers = 0;

    void add(const ProbeResults& r, int eval) {
        for (const AttentionMap& m : r.attention) attention[m.layer].add(m);
        for (const ResidualStat& s : r.residual) {
            json top = json::array();
            for (const ResidualEntry& e : s.top) top.push_back({{"value", e.value}, {"position", e.token}, {"channel", e.channel}});
            residual.push_back({{"eval", eval},           {"layer", s.layer},       {"max_abs", s.max_abs},
                                {"position", s.token},    {"channel", s.channel},   {"median_abs", s.median_abs},
                                {"token_max_abs", s.token_max_abs}, {"token_channel", s.token_channel}, {"top", top}});
        }
        for (const FfnDownStat& f : r.ffn_down)
            ffn_down.push_back({{"eval", eval},
                                {"layer", f.layer},
                                {"expert", f.expert},
                                {"in_max_abs", f.in_max_abs},
                                {"in_position", f.in_token},
                                {"in_channel", f.in_channel},
                                {"in_median_abs", f.in_median_abs},
                                {"out_max_abs", f.out_max_abs},
                                {"out_position", f.out_token},
                                {"out_channel", f.out_channel},
                                {"out_median_abs", f.out_median_abs}});
        for (const RoutingProbe& p : r.routing) {
            json& j = routing[p.layer];
            if (j.is_null()) j = {{"layer", p.layer}, {"top_k", p.top_k}, {"positions", json::array()},
                                  {"experts", json::array()}, {"weights", json::array()}};
            for (int pos : p.positions) j["positions"].push_back(pos);
            for (auto& row : rows_of(p.experts, p.top_k)) j["experts"].push_back(row);
            for (auto& row : rows_of(p.weights, p.top_k)) j["weights"].push_back(row);
        }
        for (const LogitLens& l : r.logit_lens) {
            json top = json::array();
            for (const LensToken& t : l.top) top.push_back({{"id", t.id}, {"text", t.text}, {"p", t.p}});
            logit_lens.push_back({{"eval", eval}, {"layer", l.layer}, {"position", l.position}, {"top", top}});
        }
        timings.insert(timings.end(), r.timings.begin(), r.timings.end());
        passes += r.passes;
        dispatches += r.dispatches;
        barriers += r.barriers;
    }
};

int32_t argmax(const std::vector<float>& logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-n", "-o", "--attention", "--logit-lens", "--lens-top", "--device"},
              {"--residual", "--ffn-down", "--routing", "--timings", "--exact"});
    if (!o.has("-p") || !o.has("-o")) throw UsageError("-p and -o are required");
    if (o.str("-o").empty()) throw UsageError("-o names no file");
    const int n_generate = int(o.integer("-n", 0, 0));
    const int lens_top = int(o.integer("--lens-top", 10, 1));
    if (o.has("-m") && o.str("-m").empty()) throw UsageError("-m names no file");

    // Opened first: an output that cannot be written is reported before the model loads.
    OutputFile out(o.str("-o"));
    ModelOptions mo;
    mo.device = o.str("--device");
    std::unique_ptr<Model> model;
    if (o.has("-m")) {
        model = Model::load(o.str("-m"), mo);
    } else {
        const auto bytes = embedded_model();
        model = Model::load_from_memory(bytes.data(), bytes.size(), std::string("built-in model ") + embedded_model_name(), mo);
    }
    const ModelInfo& info = model->info();

    const std::vector<int32_t> prompt = model->tokenize(o.str("-p"), /*add_special=*/true);
    if (prompt.empty()) throw UsageError("the prompt gives no tokens");
    SessionOptions so;
    so.n_ctx = int(prompt.size()) + n_generate;
    so.llama_cpp_rounding = !o.has("--exact");
    ProbeConfig& pc = so.probes;
    if (o.has("--attention")) pc.attention_layers = parse_layers("--attention", o.str("--attention"), info.n_layer);
    pc.attention_max_rows = int(prompt.size());  // every prompt row
    pc.residual_stats = o.has("--residual");
    pc.ffn_down = o.has("--ffn-down");
    pc.routing = o.has("--routing");
    if (o.has("--logit-lens")) pc.logit_lens_layers = parse_layers("--logit-lens", o.str("--logit-lens"), info.n_layer);
    pc.logit_lens_top_n = lens_top;
    pc.timings = o.has("--timings");
    Session session(*model, so);

    // The prompt, then greedy tokens, each evaluated so that its own rows are probed too.
    Collector probes;
    std::vector<int32_t> tokens = prompt;
    std::vector<float> logits = session.eval(prompt);
    probes.add(session.probes(), 0);
    for (int i = 0; i < n_generate; ++i) {
        const int32_t next = argmax(logits);
        if (model->is_eog(next)) break;
        tokens.push_back(next);
        logits = session.eval({next});
        probes.add(session.probes(), i + 1);
    }

    json doc;
    doc["model"] = model_json(info);
    doc["tokens"] = json::array();
    for (size_t i = 0; i < tokens.size(); ++i)
        doc["tokens"].push_back({{"position", int(i)}, {"id", tokens[i]}, {"text", model->piece(tokens[i], true)},
                                 {"generated", i >= prompt.size()}});
    doc["attention"] = json::array();
    for (auto& [layer, rows] : probes.attention) doc["attention"].push_back(rows.to_json(layer));
    doc["residual"] = probes.residual;
    doc["ffn_down"] = probes.ffn_down;
    doc["routing"] = json::array();
    for (auto& [layer, r] : probes.routing) doc["routing"].push_back(r);
    doc["logit_lens"] = probes.logit_lens;
    json by_op = json::array();
    double total_ms = 0;
    for (const OpTiming& t : timings_by_op(probes.timings)) {
        by_op.push_back({{"op", t.op}, {"ms", t.ms}, {"count", t.count}});
        total_ms += t.ms;
    }
    doc["timings"] = {{"passes", probes.passes}, {"dispatches", probes.dispatches}, {"barriers", probes.barriers},
                      {"total_ms", total_ms}, {"by_op", by_op},
                      {"by_layer", pc.timings ? json(timings_by_layer(probes.timings, info.n_layer)) : json::array()}};

    // Token pieces may be parts of a UTF-8 character: invalid bytes become U+FFFD.
    out.write(doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
    out.commit();
    std::fprintf(stderr, "vkllm: probed %zu tokens (%zu generated) and wrote %s\n", tokens.size(),
                 tokens.size() - prompt.size(), out.path().c_str());
    return 0;
}

}  // namespace

int cmd_probe(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
