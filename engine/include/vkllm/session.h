// A Session is one conversation's state on the GPU: its KV cache, scratch buffers, probes and
// residual-stream interventions.
//
// Threading contract: one Session is driven (eval, generate, truncate, reset, set_*) from one
// thread at a time, its worker. Any other thread may, at any time:
//   - call cancel(): a running generate() returns within one step with StopReason::Cancelled;
//   - call snapshot(): a consistent copy of the last completed step's probes, the session's
//     tokens and the text generated so far (taken under the session's lock; never a half-written
//     step).
// Everything else (probes(), n_past(), ...) belongs to the worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkllm/generate.h"
#include "vkllm/kv_cache_type.h"
#include "vkllm/pooling.h"
#include "vkllm/prepare.h"
#include "vkllm/probe.h"

namespace vkllm {

class Model;

// The tokens do not fit in the session's context.
struct ContextOverflow : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A forward pass produced a NaN or infinite logit: the message names the position and token
// and suggests the cause (corrupted weights, or an activation that overflowed).
struct NonFiniteLogits : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An encoder pass (Session::embed) produced a NaN or infinite embedding value: the message names
// the row and dimension and suggests the cause. Both are found on the GPU by the read-back.
struct NonFiniteEmbeddings : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Sets one residual-stream channel after a layer (layer -1: after the embeddings), for every
// token of every following eval, on the GPU:
//   Zero:  x[t, channel] = 0
//   Value: x[t, channel] = value
//   Scale: x[t, channel] *= value
//   Mean:  x[t, channel] = the channel's mean over every position evaluated since the edit was
//          set, up to and including the current forward pass (its own unedited values), so a
//          prompt's tokens all get the prompt's mean and each later token the running mean. A
//          prompt longer than n_batch runs in several passes: each pass's tokens get the mean
//          up to that pass. Truncating or resetting the session starts the mean over.
struct ResidualEdit {
    enum class Mode { Zero, Value, Scale, Mean };
    int layer = 0;
    int channel = 0;
    Mode mode = Mode::Zero;
    float value = 0;
};

struct SessionOptions {
    int n_ctx = 0;      // 0: the model's training context, capped at 4096
    int n_batch = 256;  // tokens per forward pass during prompt processing
    // llama.cpp CPU parity: matmuls read activations rounded as llama.cpp's CPU backend rounds
    // them (ggml's vec_dot_type: 8-bit blocks for quantised weights, fp16/bf16 for those types)
    // and GELU uses its fp16 table, so logits match llama.cpp's; false: exact f32 throughout.
    bool llama_cpp_rounding = true;
    KvCacheType kv_cache = KvCacheType::Auto;
    ProbeConfig probes;
};


// Session::embed's result: row-major [rows][n_embd].
struct Embeddings {
    int rows = 0, n_embd = 0;
    std::vector<float> data;
};

// What snapshot() returns.
struct SessionSnapshot {
    ProbeResults probes;           // of the last completed step
    std::vector<int32_t> tokens;   // every token in the cache, in order
    std::string generated_text;    // text released so far by the running (or last) generate()
    std::vector<TokenEvent> generated;  // its token events so far
    bool generating = false;
    int step = 0;                  // completed steps of the running (or last) generate()
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

    // Generation (see generate.h): brings the cache to `prompt` (keeping the longest common
    // prefix with tokens(), evaluating only the rest), then samples until a stop. Never throws
    // for what happens during generation: the result's reason and message say it.
    GenerateResult generate(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                            const TokenCallback& on_token = nullptr);
    // Encoders (BERT, every layer bidirectional): runs `tokens` (one text, [CLS] ... [SEP] as
    // the tokenizer adds them) in one forward pass from position 0, replacing the session's
    // tokens, and returns the final hidden states pooled on the GPU: [n_tokens][n_embd] for
    // Pooling::None, else [1][n_embd]. Throws std::invalid_argument for a causal model, an
    // empty text or one longer than n_batch() tokens, ContextOverflow beyond n_ctx(),
    // NonFiniteEmbeddings when a value is NaN or infinite (found on the GPU by the read-back).
    Embeddings embed(const std::vector<int32_t>& tokens, Pooling pooling = Pooling::Model);
    // Encoders: every token's logits [n_tokens][n_vocab] (row-major) through the model's output
    // projection, in one pass as embed() (masked-token prediction: for BERT files the
    // projection is tied to the token embeddings, see docs/architectures.md).
    std::vector<float> encode_logits(const std::vector<int32_t>& tokens);

    // Compiles ahead of the first eval the GPU pipelines a first prompt of
    // options.prompt_tokens tokens and the decode steps after it will use, with the session's
    // probes and residual edits as they are now (an encoder: its one pass), on
    // options.threads threads, reporting progress through `progress` (vkllm/prepare.h).
    // Pipelines already compiled are skipped, so a warm start returns at once (total 0). It
    // changes no result: the same pipelines are compiled earlier. Returns the last progress.
    // Holds a second, small set of the session's buffers while it runs. Worker thread only.
    PrepareProgress prepare(const PrepareOptions& options = {}, const PrepareCallback& progress = nullptr);

    // Thread-safe: asks a running generate() to stop after its current step.
    void cancel();

    // Drops every token after the first n (n <= n_past()); the next eval continues at n. Cheap
    // for attention (the KV cache forgets positions). A recurrent state cannot forget: the
    // newest snapshot at or below n is copied back and the tokens after it evaluated again, or,
    // with none, every kept token from position 0 (docs/api.md).
    void truncate(int n);
    void reset();  // forget every token (truncate(0))

    const Model& model() const;  // the model this session runs
    int n_past() const;
    int n_ctx() const;
    int n_batch() const;  // tokens per forward pass of a prompt
    const std::vector<int32_t>& tokens() const;  // the tokens in the cache, in order

    void set_probes(const ProbeConfig& probes);
    const ProbeConfig& probe_config() const;
    // Probes of the last eval (timings summed over its forward passes).
    const ProbeResults& probes() const;
    // Thread-safe copy of the last completed step's state (see the threading contract).
    SessionSnapshot snapshot() const;

    // Residual-stream interventions applied from the next eval on (see ResidualEdit). Throws
    // std::invalid_argument for a layer or channel out of range.
    void set_residual_edits(const std::vector<ResidualEdit>& edits);
    const std::vector<ResidualEdit>& residual_edits() const;

    // KV-cache bytes held on the GPU, in all and by layer kind: global layers keep every
    // position, sliding-window layers a ring of window + batch - 1 positions.
    uint64_t kv_cache_bytes() const;
    struct KvCacheUsage {
        int global_layers = 0, local_layers = 0;
        uint64_t global_bytes = 0, local_bytes = 0;
        KvCacheType type = KvCacheType::F32;  // as resolved (never Auto)
    };
    KvCacheUsage kv_cache_usage() const;
    // Bytes of scratch activations and of probe buffers on the GPU and in host memory.
    uint64_t scratch_bytes() const;
    uint64_t probe_bytes() const;
    // Bytes of the recurrent layers' state (state-space, short-convolution and RWKV layers; 0
    // for attention-only models), the same whatever the context, and of its snapshots: copies
    // of the state kept at the ends of recent eval calls so that truncate goes back to them
    // instead of re-evaluating from position 0 (at most 4 copies and 64 MiB).
    uint64_t recurrent_state_bytes() const;
    uint64_t state_snapshot_bytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm
