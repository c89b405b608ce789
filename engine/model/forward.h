// The one forward pass: walks a ModelSpec's layers, recording every op into one command buffer
// per step. Owns the KV cache and the scratch activations of a session.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <map>
#include <memory>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/kv_cache.h"
#include "model/op_params.h"
#include "model/scratch.h"
#include "model/spec.h"
#include "model/weights.h"
#include "vkllm/probe.h"
#include "vkllm/session.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class Forward {
public:
    // n_batch: most tokens per step. round_activations: quantised matmuls read activations
    // rounded as llama.cpp's CPU backend rounds them (ops::activation_rounding), for parity.
    // Throws ModelError for spec features not implemented.
    // kv_cache: the caches' element type; Auto is F16 where the device has 16-bit storage.
    Forward(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights, int n_ctx, int n_batch,
            bool round_activations = true, KvCacheType kv_cache = KvCacheType::Auto);

    // Runs tokens ids[0..n_tokens) at positions pos0.. (n_tokens <= max_tokens(all_logits)),
    // writing their K/V into the cache. logits: [n_tokens, n_vocab] when all_logits, else the
    // last token's [n_vocab]. results (may be null) receives the probes of the eval this pass
    // belongs to: first_pass starts a new eval (its results replace the previous eval's); later
    // passes of the same eval add their rows, tokens, timings and counts to them. Dispatch and
    // barrier counts are filled whenever results is given, with or without probes.
    void step(const int32_t* ids, int n_tokens, int pos0, bool all_logits, float* logits, const ProbeConfig& probes,
              ProbeResults* results, bool first_pass = true);

    // Residual-stream edits applied by every following step (see vkllm::ResidualEdit); also
    // resets the Mean edits' running sums. Throws std::invalid_argument for a layer outside
    // -1..n_layer-1 or a channel outside 0..n_embd-1.
    void set_residual_edits(const std::vector<ResidualEdit>& edits);
    // Restarts the Mean edits' running means (the session truncated or reset its tokens; a step
    // at position 0 does it too).
    void reset_edit_state();
    // The text of a token id, for the logit lens (none: the lens leaves text empty).
    void set_token_text(std::function<std::string(int32_t)> piece) { token_text_ = std::move(piece); }
    // Bytes of probe buffers on the GPU and in host memory (0 while every probe is off).
    uint64_t probe_bytes() const;
    // Bytes of the scratch activations and step inputs/outputs (not KV caches, weights or probes).
    uint64_t scratch_bytes() const;

    // Forgets positions >= n in every KV cache (KvCache::truncate). Returns false when a
    // sliding-window ring no longer holds a position < n that a later query can attend to (its
    // slot was reused by a dropped position): the caller must then re-evaluate from position 0.
    bool truncate(int n) { return kv_.truncate(n); }

    // Encoders (BERT, forward_encode.cpp): runs the whole text ids[0..n_tokens) in one pass from
    // position 0 (n_tokens <= n_batch(), every token attends to every other) and writes the
    // final hidden states pooled on the GPU: [n_tokens, n_embd] for Pooling::None, else
    // [1, n_embd] (mean of the rows, the first row (CLS) or the last). With logits (may be
    // null): also every token's [n_tokens, n_vocab] through the output projection (fill-mask;
    // n_tokens <= max_tokens(true)). Probes as in step().
    void encode(const int32_t* ids, int n_tokens, Pooling pooling, float* embeddings, float* logits,
                const ProbeConfig& probes, ProbeResults* results);

    // Dispatches, barriers and transfer commands the last step() recorded, by layer (index
    // layer + 1; 0: the embeddings and the output head). Pinned by tests/model/test_dispatch_counts.
    const std::vector<gpu::Stream::Counts>& step_counts() const { return stream_->layer_counts(); }

    // Decode replay: a step of one token that returns only its logits (no probes, timings or
    // residual edits) is recorded once and the command buffer submitted again for the next
    // steps; what changes per token lives in host-visible buffers written before the submit
    // (token id, position, each cache's slot positions) and the KV-cache writes take their slot
    // from the positions buffer. Attention's keys in view round up to a multiple of
    // kReplayKeys (the extra slots are empty or masked, so the result is the same), so one
    // recording serves kReplayKeys positions. On by default; off records every step.
    static constexpr int kReplayKeys = 64;
    void set_replay(bool on) { replay_ = on; }
    uint64_t replayed_steps() const { return replayed_steps_; }  // steps submitted without recording

    // Non-finite values in the rows the last step() or encode() read back, counted on the GPU
    // by the read-back itself (ops::copy_checked), per row: how many, and the first one's index.
    // Logits rows as step() returned them (all_logits: row t is token t; else row 0 the last
    // token's); embeddings rows as encode() returned them.
    struct NonFinite {
        uint32_t count = 0, first = 0;
    };
    NonFinite logits_nonfinite(int row) const;
    NonFinite embeddings_nonfinite(int row) const;

    int max_tokens(bool all_logits) const { return all_logits ? n_logit_rows_ : n_batch_; }
    int n_ctx() const { return n_ctx_; }
    int n_batch() const { return n_batch_; }  // tokens per forward pass (the asked batch, clamped to the context and buffer limits)
    uint64_t kv_bytes() const { return kv_.bytes(); }
    using KvUsage = KvCache::Usage;
    KvUsage kv_usage() const { return kv_.usage(); }
    ops::CacheType cache_type() const { return kv_.type(); }
    const KvCache& kv_cache() const { return kv_; }

private:
    // The activations a group of matmuls reads: x itself, or x rounded per weight type.
    struct MatmulInputs {
        const gpu::Buffer* plain = nullptr;
        uint64_t offset = 0;
        const gpu::Buffer* rounded[5] = {};  // by ops::ActRounding
        bool in_matvec[5] = {};              // by ops::ActRounding: the one-token matvec rounds x itself
        ops::MatvecNorm norm;                // weight set: plain is un-normalised, the matvecs normalise it
        const gpu::Buffer& of(const ops::Weight& w) const;
        uint64_t offset_of(const ops::Weight& w) const;
        // ops::matmul of w with these inputs (rounded as w's type needs) into y.
        void matmul(gpu::Stream& s, const ops::Weight& w, const gpu::Buffer& y, uint64_t y_offset, int n_tokens,
                    bool accumulate = false) const;
        // One token: y = act(gate x) * (up x) in one dispatch (ops::matvec_swiglu).
        void matvec_swiglu(gpu::Stream& s, const ops::Weight& gate, const ops::Weight& up, const gpu::Buffer& y,
                           ops::GluActivation act) const;
        // True when the consumer of w's input rounds it itself (pass as round_x).
        bool rounds_in_matvec(ops::TensorType weight_type) const;
    };
    // Where activations are rounded for a quantised weight (llama.cpp parity):
    //   Matvec        in ops::matmul's one-token matvec when rows == 1, else a rounding dispatch
    //   ExpertMatvec  in the expert matvec (ops::moe_matmul / moe_matvec_swiglu without a sort),
    //                 whatever the rows
    //   Dispatch      always a rounding dispatch (the tiled expert matmul takes x as it is)
    enum class RoundAt { Matvec, ExpertMatvec, Dispatch };
    // Rounds x ([rows, n] at offset) once per rounding mode the weights need, with a barrier
    // after when anything was rounded, except where `at` leaves the rounding to a matvec that can
    // do it (types whose blocks of 32 a thread rounds alone: ops::matvec_rounds_activations).
    MatmulInputs prepare_inputs(const gpu::Buffer& x, uint64_t offset, int rows, int n,
                                std::initializer_list<const ops::Weight*> weights, RoundAt at = RoundAt::Matvec);
    // True when w's input (rows of n) must be rounded by a dispatch before w's matmul reads it.
    bool needs_rounding_dispatch(const ops::Weight& w, int rows, int n, RoundAt at) const;
    // The inputs of the matmuls after a norm of x (rows of n from element x_offset, weight
    // norm_w, bias norm_b): decode's RMSNorm (one row, no bias, no rounding dispatch) goes into
    // the matvecs themselves (ops::MatvecNorm) when norm_in_matvec_; otherwise the norm is recorded
    // into `out` (from element 0; it may be x itself) with a barrier (`why`) and the inputs are out's.
    MatmulInputs normed_inputs(const gpu::Buffer& x, uint64_t x_offset, int rows, int n, const gpu::Buffer* norm_w,
                               const gpu::Buffer* norm_b, std::initializer_list<const ops::Weight*> weights,
                               const char* why, const gpu::Buffer& out);
    void record_layer(int l, int n_tokens, int pos0, const ProbeConfig& probes);
    void record_attention(int l, int n_tokens, int pos0);
    void record_ffn(int l, int n_tokens, const ProbeConfig& probes);
    // After the embeddings (l = -1) or layer l: the residual edits, then the probes' copies of x.
    void record_after_layer(int l, int n_tokens, const ProbeConfig& probes);
    void record_logit_lens();
    // MLA (forward_mla.cpp): scratch q gets the absorbed queries [T, n_head, kv_lora + rope],
    // k_new the keys [T, kv_lora + rope] and v_new the latent values [T, kv_lora]; then the heads'
    // latent outputs (attn) go through W_vb into mla.out [T, n_head * v_head].
    void record_mla_qkv(int l, int n_tokens, const MatmulInputs& in);
    void record_mla_output(int l, int n_tokens);
    // probe_out: also copies what the block adds to the residual stream (after bias and post-norm).
    // norm_after_add (BERT's post-norm): x = post_norm(x + W in + bias) with bias post_norm_b.
    void add_block_output(const ops::Weight& w, const gpu::Buffer& in, int n_in, const gpu::Buffer* bias,
                          const gpu::Buffer* post_norm, int n_tokens, const gpu::Buffer* probe_out = nullptr,
                          const gpu::Buffer* post_norm_b = nullptr, bool norm_after_add = false);
    void record_embeddings(int n_tokens);
    // y = norm(x) over rows of n (0: n_embd) with the model's norm kind (w, b may be null).
    void norm(const gpu::Buffer& x, uint64_t x_offset, const gpu::Buffer* w, const gpu::Buffer* b, const gpu::Buffer& y,
              uint64_t y_offset, int rows, int n = 0);
    void alloc_probe_buffers(const ProbeConfig& probes);
    void read_probes(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void read_attention(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void read_residual(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void read_ffn_down(int n_tokens, int pos0, ProbeResults* results, bool first_pass);
    void read_routing(int n_tokens, int pos0, ProbeResults* results, bool first_pass);
    void read_logit_lens(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results);
    bool residual_copied(int l, const ProbeConfig& probes) const;  // l = -1..n_layer-1

    gpu::Context& ctx_;
    const ModelSpec& spec_;
    const Weights& w_;
    int n_ctx_, n_batch_, n_logit_rows_;
    bool round_activations_;
    // The decode matvecs round their own inputs (RoundAt::Matvec, ExpertMatvec) unless
    // VKLLM_MATVEC_ROUNDS_X=0 asks for a rounding dispatch first, as larger batches have: a
    // switch for measuring both on a new device (the in-matvec form saves a dispatch and a
    // barrier per input, and repeats the rounding in every workgroup that reads the input).
    bool matvec_rounds_x_ = true;
    bool norm_in_matvec_ = false;  // decode's fused pre-norm: GPUs; VKLLM_NORM_IN_MATVEC=0|1 forces it
    gpu::Stream step_stream_;               // recordings used once (prefill, probes, encode)
    gpu::Stream replay_stream_;             // the decode step, recorded once per replay_key_
    gpu::Stream* stream_ = &step_stream_;   // the stream being recorded, or submitted last
    bool replay_ = true;
    int replay_key_ = -1;                   // keys in view the replay recording was made for (-1: none)
    int kv_bucket_ = 1;                     // keys in view round up to a multiple of this while recording
    uint64_t replayed_steps_ = 0;
    bool replayable(int n_tokens, bool all_logits, const ProbeConfig& probes) const;
    // Writes a step's host-visible inputs: ids, positions, the caches' slot positions.
    void write_step_inputs(const int32_t* ids, int n_tokens, int pos0);
    // Records the whole step (embeddings, layers, head, the checked logits read-back) into *stream_.
    void record_step(int n_tokens, int pos0, bool all_logits, const ProbeConfig& probes);
    // Keys of `cache` that a step ending at position `end` (exclusive) attends over.
    int keys_in_view(int cache_slots, int end) const;

    KvCache kv_;
    Scratch scratch_;  // the step's inputs, activations, layer kinds' scratch and outputs
    std::vector<gpu::Buffer> expert_load_;  // per layer, host [n_expert, 2] (expert-load probe)
    void record_moe(int l, int n_tokens, const gpu::Buffer& in, const ProbeConfig& probes);
    // Records the checked copy of `rows` rows of n floats from src into host memory dst, its
    // flags reset to "none" here (the stream is not yet submitted, no GPU work reads them).
    void read_back_checked(const gpu::Buffer& src, uint64_t src_offset, const gpu::Buffer& dst, int rows, int n,
                           const gpu::Buffer& flags);
    static void reset_flags(const gpu::Buffer& flags, int rows);

    // Probe buffers, allocated on first use (forward_probes.cpp reads them).
    std::vector<int> probed_layers_;
    int attn_rows_cap_ = 0;                // query rows kept per pass: min(n_batch, attention_max_rows)
    int attn_rows_ = 0;                    // of this pass
    std::vector<gpu::Buffer> probs_;       // per probed layer: [n_batch, n_head, slots] (+ [n_batch, n_head] sinks)
    std::vector<gpu::Buffer> probs_host_;  // per probed layer: the newest rows: [rows_cap, n_head, slots] (+ sinks)
    gpu::Buffer residual_host_;            // [n_layer + 1, n_batch, n_embd]
    std::vector<std::vector<float>> residual_acc_;  // [n_layer + 1][eval tokens * n_embd] (residual_stats)
    std::vector<gpu::Buffer> ffn_in_host_, ffn_out_host_;  // per layer: dense or shared expert [n_batch, n_ff], [n_batch, n_embd]
    std::vector<gpu::Buffer> moe_in_host_, moe_out_host_;  // per MoE layer: [pairs, n_ff_expert], [pairs, n_embd]
    std::vector<gpu::Buffer> routing_host_;               // per MoE layer: int32 experts [pairs], float weights [pairs]
    // ffn_down's inputs and outputs over the eval, per layer and expert (-1: dense or shared).
    struct DownRows {
        int n_in = 0, n_out = 0;
        std::vector<float> in, out;  // [rows, n_in], [rows, n_out]
        std::vector<int> pos;        // position of each row
    };
    std::vector<std::map<int, DownRows>> down_acc_;
    std::vector<int> lens_layers_;
    gpu::Buffer lens_x_, lens_h_;           // [n_lens, n_embd]: newest rows after the lens layers, normalised
    gpu::Buffer lens_logits_, lens_host_;   // [n_lens, n_vocab]
    std::function<std::string(int32_t)> token_text_;
    int eval_tokens_ = 0;                   // tokens of the current eval so far

    // Residual edits: ChannelEdit records grouped by layer (host-visible), their Mean state
    // (sum, count) per edit, and each layer's range of edits (layer + 1 -> first, count).
    std::vector<ResidualEdit> edits_;
    gpu::Buffer edits_buf_, edit_state_;
    std::map<int, std::pair<int, int>> edit_ranges_;
};

}  // namespace vkllm::model
