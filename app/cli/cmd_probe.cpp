// vkllm probe: runs a prompt (and greedy tokens after it) with the chosen probes and writes
// everything they saw as one JSON document. Uses only the public API (vkllm/*.h).
//
// The document is app/common/probe_json.h's (the studio's --export writes the same one).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "embedded_model.h"
#include "options.h"
#include "output_file.h"
#include "probe_json.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm probe [-m MODEL.gguf] -p PROMPT [-n N] [--attention all|L,L..] [--residual] [--ffn-down]\n"
    "            [--routing] [--logit-lens all|L,L..] [--lens-top K] [--timings] [--exact] [--device D]\n"
    "            [--cache-type auto|f16|f32|q8_0]\n"
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

int32_t argmax(const std::vector<float>& logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-n", "-o", "--attention", "--logit-lens", "--lens-top", "--device", "--cache-type"},
              {"--residual", "--ffn-down", "--routing", "--timings", "--exact"});
    if (!o.has("-p") || !o.has("-o")) throw UsageError("-p and -o are required");
    if (o.str("-o").empty()) throw UsageError("-o names no file");
    const KvCacheType kv_cache = cache_type(o);
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
    so.kv_cache = kv_cache;
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
    app::ProbeDocument probes;
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

    std::vector<app::DocumentToken> rows;
    for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({tokens[i], model->piece(tokens[i], true), i >= prompt.size()});
    out.write(app::dump_document(probes.to_json(info, rows)));
    out.commit();
    std::fprintf(stderr, "vkllm: probed %zu tokens (%zu generated) and wrote %s\n", tokens.size(),
                 tokens.size() - prompt.size(), out.path().c_str());
    return 0;
}

}  // namespace

int cmd_probe(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
