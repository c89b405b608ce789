// vkllm probe: runs a prompt (and greedy tokens after it) with the chosen probes and writes
// everything they saw as one JSON document. Uses only the public API (vkllm/*.h).
//
// The document is app/common/probe_json.h's (the studio's --export writes the same one).
#include <algorithm>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "embedded_model.h"
#include "options.h"
#include "output_file.h"
#include "probe_json.h"
#include "probe_state_json.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm probe [-m MODEL.gguf] (-p PROMPT | -f FILE) [-n N] [--attention all|L,L..|L:H,L:H..]\n"
    "            [--tile Q0-Q1,K0-K1] [--attention-summary] [--top-keys K] [--thumbnail S]\n"
    "            [--max-bytes N[K|M|G]] [--npy]\n"
    "            [--residual] [--ffn-down] [--routing] [--logit-lens all|L,L..] [--lens-top K]\n"
    "            [--lens-positions N]\n"
    "            [--state] [--state-map L:H,L:H..]\n"
    "            [--timings] [--exact] [--device D] [--cache-type auto|f16|f32|q8_0]\n"
    "            -o OUT.json\n"
    "  runs PROMPT (or the text of FILE) and N greedy tokens after it (stopping at an\n"
    "  end-of-generation token) with the chosen probes and writes them as one JSON document\n"
    "  (docs/api.md and docs/studio.md describe its fields)\n"
    "  --attention L:H,..: those heads' full maps (n_head 1 each); all or L,L..: whole layers\n"
    "  --tile Q0-Q1,K0-K1: only query positions Q0..Q1 and key positions K0..K1 of each L:H map\n"
    "      (--attention's and --state-map's)\n"
    "      (inclusive; 'all' for either axis)\n"
    "  --attention-summary: entropy, sink mass, mean distance and largest probability of every\n"
    "      layer and head, computed on the GPU (attention_summary)\n"
    "  --top-keys K: each query row's K (1..16) most probable keys of every layer and head,\n"
    "      computed on the GPU (attention_top_k)\n"
    "  --thumbnail S: every layer and head's map max-pooled on the GPU into at most S x S cells\n"
    "      (1..256; attention_thumbnails)\n"
    "  --max-bytes: what the probes may copy to the host per evaluation (default 256M); asking\n"
    "      for more is an error that says how much\n"
    "  --npy: every attention map's probabilities go to OUT.attention-L<l>[-H<h>].npy (NumPy\n"
    "      float32 [n_head][query][key]) and the JSON names the file (probs_npy), the top keys\n"
    "      and thumbnails to OUT.attention-top-k-E<eval>-keys/-probs.npy and\n"
    "      OUT.attention-thumbnails-E<eval>.npy; tensors of over 2^20 values go there without it\n"
    "  --logit-lens all|L,L..: those layers' most probable next tokens (--lens-top K of them,\n"
    "      1..16; softmax and top-k on the GPU) at the newest position (logit_lens) and, with\n"
    "      --lens-positions N, at each evaluation's last N positions (logit_lens_grid)\n"
    "  --state: every state-space (Mamba) and RWKV-7 layer's state norm and decay per head and\n"
    "      token (the document's state; OUT.state-norm.npy and -decay.npy with --npy or past 2^20)\n"
    "  --state-map L:H,..: those Mamba-2 heads' token-to-token mixing maps (state_maps;\n"
    "      OUT.state-map-L<l>-H<h>.npy with --npy or past 2^20 values)\n"
    "  without -m: the small model built into vkllm";

constexpr uint64_t kSidecarValues = uint64_t(1) << 20;

int parse_int(const std::string& option, const std::string& item, const std::string& text) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v > 0x7fffffff)
        throw UsageError(option + ": '" + item + "' in '" + text + "' is not a number >= 0");
    return int(v);
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t at = std::min(text.find(sep, start), text.size());
        out.push_back(text.substr(start, at - start));
        start = at + 1;
    }
    return out;
}

// "all" or a comma-separated list of layer indices, each in [0, n_layer).
std::vector<int> parse_layers(const std::string& option, const std::string& text, int n_layer) {
    std::vector<int> layers;
    if (text == "all") {
        for (int l = 0; l < n_layer; ++l) layers.push_back(l);
        return layers;
    }
    for (const std::string& item : split(text, ',')) {
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end) throw UsageError(option + " expects 'all' or layers such as 0,3; got '" + text + "'");
        if (v < 0 || v >= n_layer)
            throw UsageError(option + ": layer " + item + " is out of range (the model has " + std::to_string(n_layer) +
                             " layers)");
        if (std::find(layers.begin(), layers.end(), int(v)) == layers.end()) layers.push_back(int(v));
    }
    return layers;
}

// L:H,L:H..: Mamba-2 heads for --state-map; the engine checks the layer's kind and head count.
std::vector<AttentionHead> parse_state_maps(const std::string& text, const ModelInfo& info) {
    std::vector<AttentionHead> heads;
    for (const std::string& item : split(text, ',')) {
        const std::vector<std::string> lh = split(item, ':');
        if (lh.size() != 2) throw UsageError("--state-map expects heads such as 0:3,5:1; got '" + text + "'");
        AttentionHead h;
        h.layer = parse_int("--state-map", lh[0], text);
        h.head = parse_int("--state-map", lh[1], text);
        if (h.layer >= info.n_layer)
            throw UsageError("--state-map: layer " + lh[0] + " is out of range (the model has " +
                             std::to_string(info.n_layer) + " layers)");
        heads.push_back(h);
    }
    return heads;
}

// L:H,L:H..: heads of layers, each checked against the model.
std::vector<AttentionHead> parse_heads(const std::string& text, const ModelInfo& info) {
    std::vector<AttentionHead> heads;
    for (const std::string& item : split(text, ',')) {
        const std::vector<std::string> lh = split(item, ':');
        if (lh.size() != 2) throw UsageError("--attention expects heads such as 0:3,5:1; got '" + text + "'");
        AttentionHead h;
        h.layer = parse_int("--attention", lh[0], text);
        h.head = parse_int("--attention", lh[1], text);
        if (h.layer >= info.n_layer)
            throw UsageError("--attention: layer " + lh[0] + " is out of range (the model has " +
                             std::to_string(info.n_layer) + " layers)");
        const int n_head = info.layers[size_t(h.layer)].attention.n_head;
        if (h.head >= n_head)
            throw UsageError("--attention: head " + lh[1] + " is out of range (layer " + lh[0] + " has " +
                             std::to_string(n_head) + " heads)");
        heads.push_back(h);
    }
    return heads;
}

// Q0-Q1,K0-K1 (inclusive positions; "all" for an axis) into every head's tile.
void parse_tile(const std::string& text, std::vector<AttentionHead>& heads) {
    const std::vector<std::string> axes = split(text, ',');
    if (axes.size() != 2) throw UsageError("--tile expects Q0-Q1,K0-K1 (or all for an axis); got '" + text + "'");
    int range[2][2] = {{0, 0}, {0, 0}};  // first, count
    for (size_t a = 0; a < 2; ++a) {
        if (axes[a] == "all") continue;
        const std::vector<std::string> ends = split(axes[a], '-');
        if (ends.size() != 2) throw UsageError("--tile expects Q0-Q1,K0-K1 (or all for an axis); got '" + text + "'");
        const int lo = parse_int("--tile", ends[0], text), hi = parse_int("--tile", ends[1], text);
        if (hi < lo) throw UsageError("--tile: " + axes[a] + " ends before it starts");
        range[a][0] = lo;
        range[a][1] = hi - lo + 1;
    }
    for (AttentionHead& h : heads) {
        h.query_first = range[0][0];
        h.query_count = range[0][1];
        h.key_first = range[1][0];
        h.key_count = range[1][1];
    }
}

// A byte count: digits, then optionally K, M or G (binary units).
uint64_t parse_bytes(const std::string& text) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    uint64_t unit = 1;
    const std::string rest = end ? std::string(end) : std::string();
    if (rest == "K" || rest == "k") unit = uint64_t(1) << 10;
    else if (rest == "M" || rest == "m") unit = uint64_t(1) << 20;
    else if (rest == "G" || rest == "g") unit = uint64_t(1) << 30;
    else if (!rest.empty()) unit = 0;
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || unit == 0 || v == 0)
        throw UsageError("--max-bytes expects a positive size such as 268435456, 512M or 2G; got '" + text + "'");
    return uint64_t(v) * unit;
}

int32_t argmax(const std::vector<float>& logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int run(const Args& args) {
    Options o(args,
              {"-m", "-p", "-f", "-n", "-o", "--attention", "--tile", "--max-bytes", "--logit-lens", "--lens-top",
               "--lens-positions",
               "--device", "--cache-type", "--top-keys", "--thumbnail", "--state-map"},
              {"--residual", "--ffn-down", "--routing", "--timings", "--exact", "--attention-summary", "--npy",
               "--state"});
    const std::optional<std::string> text = prompt_text(o);
    if (!text || !o.has("-o")) throw UsageError("-p PROMPT (or -f FILE) and -o are required");
    if (o.str("-o").empty()) throw UsageError("-o names no file");
    const bool heads_asked = o.has("--attention") && o.str("--attention").find(':') != std::string::npos;
    if (o.has("--tile") && !heads_asked && !o.has("--state-map"))
        throw UsageError("--tile needs --attention L:H or --state-map L:H (heads to cut)");
    const uint64_t max_bytes = o.has("--max-bytes") ? parse_bytes(o.str("--max-bytes")) : ProbeConfig().max_bytes;
    const KvCacheType kv_cache = cache_type(o);
    const int n_generate = int(o.integer("-n", 0, 0));
    const int lens_top = int(o.integer("--lens-top", 10, 1));
    const int lens_positions = int(o.integer("--lens-positions", 1, 1));
    if (lens_top > kMaxLensTopN)
        throw UsageError("--lens-top: at most " + std::to_string(kMaxLensTopN) + " tokens per cell; got " +
                         std::to_string(lens_top));
    if (o.has("--lens-positions") && !o.has("--logit-lens")) throw UsageError("--lens-positions needs --logit-lens");
    const int top_keys = int(o.integer("--top-keys", 0, 1));
    const int thumbnail = int(o.integer("--thumbnail", 0, 1));
    if (top_keys > 16) throw UsageError("--top-keys: at most 16 keys per row; got " + std::to_string(top_keys));
    if (thumbnail > 256) throw UsageError("--thumbnail: at most 256 cells a side; got " + std::to_string(thumbnail));
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

    const std::vector<int32_t> prompt = model->tokenize(*text, /*add_special=*/true);
    if (prompt.empty()) throw UsageError("the prompt gives no tokens");
    SessionOptions so;
    so.n_ctx = int(prompt.size()) + n_generate;
    so.llama_cpp_rounding = !o.has("--exact");
    so.kv_cache = kv_cache;
    ProbeConfig& pc = so.probes;
    if (heads_asked) {
        pc.attention_heads = parse_heads(o.str("--attention"), info);
        if (o.has("--tile")) parse_tile(o.str("--tile"), pc.attention_heads);
    } else if (o.has("--attention")) {
        pc.attention_layers = parse_layers("--attention", o.str("--attention"), info.n_layer);
    }
    pc.attention_max_rows = int(prompt.size());  // every prompt row
    pc.attention_summary = o.has("--attention-summary");
    pc.attention_top_k = top_keys;
    pc.attention_thumbnail = thumbnail;
    pc.max_bytes = max_bytes;
    pc.residual_stats = o.has("--residual");
    pc.ffn_down = o.has("--ffn-down");
    pc.routing = o.has("--routing");
    if (o.has("--logit-lens")) pc.logit_lens_layers = parse_layers("--logit-lens", o.str("--logit-lens"), info.n_layer);
    pc.logit_lens_top_n = lens_top;
    pc.logit_lens_positions = lens_positions;
    pc.timings = o.has("--timings");
    pc.state = o.has("--state");
    if (o.has("--state-map")) {
        pc.state_maps = parse_state_maps(o.str("--state-map"), info);
        if (o.has("--tile")) parse_tile(o.str("--tile"), pc.state_maps);
    }
    pc.state_map_positions = so.n_ctx;
    Session session(*model, so);

    // The prompt, then greedy tokens, each evaluated so that its own rows are probed too.
    app::ProbeDocument probes;
    StateDocument state;
    std::vector<int32_t> tokens = prompt;
    std::vector<float> logits;
    try {
        logits = session.eval(prompt);  // the probes' requests are checked here, the budget too
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        if (what.find("budget") == std::string::npos) throw;
        throw std::runtime_error(what + " (here: --max-bytes)");
    }
    probes.add(session.probes(), 0);
    state.add(session.probes());
    for (int i = 0; i < n_generate; ++i) {
        const int32_t next = argmax(logits);
        if (model->is_eog(next)) break;
        tokens.push_back(next);
        logits = session.eval({next});
        probes.add(session.probes(), i + 1);
        state.add(session.probes());
    }

    std::vector<app::DocumentToken> rows;
    for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({tokens[i], model->piece(tokens[i], true), i >= prompt.size()});
    // Large maps (all with --npy) beside the document: OUT.attention-L<l>[-H<h>].npy, named by
    // their file name (the document's folder holds them).
    const std::string base = out.path().size() > 5 && out.path().substr(out.path().size() - 5) == ".json"
                                 ? out.path().substr(0, out.path().size() - 5)
                                 : out.path();
    std::vector<std::unique_ptr<OutputFile>> sidecars;
    app::SidecarWriter sidecar = [&](const std::string& name, const std::vector<uint64_t>& shape,
                                     const std::vector<float>& values) {
        sidecars.push_back(std::make_unique<OutputFile>(base + "." + name + ".npy"));
        sidecars.back()->write(app::npy_bytes(shape, values));
        const std::string& path = sidecars.back()->path();
        const size_t slash = path.find_last_of('/');
        return slash == std::string::npos ? path : path.substr(slash + 1);
    };
    const uint64_t sidecar_min = o.has("--npy") ? 0 : kSidecarValues;
    nlohmann::json doc = probes.to_json(info, rows, sidecar, sidecar_min);
    if (pc.state || !pc.state_maps.empty()) state.write(doc, sidecar, sidecar_min);
    out.write(app::dump_document(doc));
    for (auto& f : sidecars) f->commit();
    out.commit();
    std::fprintf(stderr, "vkllm: probed %zu tokens (%zu generated) and wrote %s\n", tokens.size(),
                 tokens.size() - prompt.size(), out.path().c_str());
    return 0;
}

}  // namespace

int cmd_probe(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
