// A Session is one conversation's state on the GPU: its KV cache and scratch buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "vkllm/probe.h"

namespace vkllm {

class Model;

// The tokens do not fit in the session's context.
struct ContextOverflow : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct SessionOptions {
    int n_ctx = 0;      // 0: the model's training context, capped at 4096
    int n_batch = 256;  // tokens per forward pass during prompt processing
    // llama.cpp CPU parity: matmuls read activations rounded as llama.cpp's CPU backend rounds
    // them (ggml's vec_dot_type: 8-bit blocks for quantised weights, fp16/bf16 for those types)
    // and GELU uses its fp16 table, so logits match llama.cpp's; false: exact f32 throughout.
    bool llama_cpp_rounding = true;
    ProbeConfig probes;
};

class Session {
public:
    explicit Session(const Model& model, const SessionOptions& options = {});
    ~Session();

    // Runs `tokens` at positions n_past().. through the model, appending them to the KV cache.
    // Returns the logits of the last token [n_vocab], or of every token [n_tokens][n_vocab]
    // (row-major) when all_logits. Throws ContextOverflow before touching the cache if the
    // tokens do not fit.
    std::vector<float> eval(const std::vector<int32_t>& tokens, bool all_logits = false);

    int n_past() const;
    int n_ctx() const;
    int n_batch() const;  // tokens per forward pass of a prompt
    void reset();  // forget every token

    void set_probes(const ProbeConfig& probes);
    // Probes of the last eval (of its last forward pass for attention and residuals; timings
    // summed over the eval).
    const ProbeResults& probes() const;
    // KV-cache bytes held on the GPU, in all and by layer kind: global layers keep every
    // position, sliding-window layers a ring of window + batch - 1 positions.
    uint64_t kv_cache_bytes() const;
    struct KvCacheUsage {
        int global_layers = 0, local_layers = 0;
        uint64_t global_bytes = 0, local_bytes = 0;
    };
    KvCacheUsage kv_cache_usage() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm
