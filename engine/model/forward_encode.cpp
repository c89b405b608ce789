// The encoder pass (BERT): the whole text in one step from position 0, then the final hidden
// states pooled on the GPU and read back, optionally with every token's logits (fill-mask).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "model/forward.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr size_t F = sizeof(float);
}

void Forward::encode(const int32_t* ids, int T, Pooling pooling, float* embeddings, float* logits,
                     const ProbeConfig& probes, ProbeResults* results) {
    if (T <= 0 || T > n_batch_ || (logits && T > n_logit_rows_))
        throw std::logic_error("Forward::encode: " + std::to_string(T) + " tokens do not fit one pass");
    // The logit lens reads a decoder's next-token distribution at the newest position; an
    // encoder has none (its head predicts masked tokens at every position), so it is refused
    // rather than returned empty.
    if (!probes.logit_lens_layers.empty())
        throw std::invalid_argument("logit lens: not defined for an encoder (no next-token distribution); "
                                    "use encode_logits for masked-token predictions");
    alloc_probe_buffers(probes);
    const uint64_t E = uint64_t(spec_.n_embd);
    scratch_.make_encode_outputs(pooling == Pooling::Mean);
    std::memcpy(scratch_.ids.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(scratch_.positions.mapped());
    for (int i = 0; i < T; ++i) pos[i] = i;
    reset_edit_state();
    kv_.begin_pass(0, T);  // T <= n_batch <= every cache's slots: slot i holds position i
    attn_rows_ = std::min(T, attn_rows_cap_);

    stream_ = &step_stream_;
    gpu::Stream& s = *stream_;
    s.set_profiling(probes.timings);
    s.begin();
    record_embeddings(T);
    record_after_layer(-1, T, probes);
    for (int l = 0; l < spec_.n_layer; ++l) record_layer(l, T, 0, probes);
    s.set_layer(-1);

    // Pooling: the rows themselves, row 0 ([CLS]), row T-1, or their mean. The mean is a
    // weighted row sum with weights 1/T (ops::moe_combine summing "slots" k of one token), in
    // chunks of at most kMaxExperts rows accumulated into scratch_.block_out's first row.
    uint64_t rows = 1, from = 0;
    const gpu::Buffer* pooled = &scratch_.x;
    if (pooling == Pooling::None) rows = uint64_t(T);
    else if (pooling == Pooling::Last) from = uint64_t(T - 1);
    else if (pooling == Pooling::Mean) {
        std::vector<float> w(size_t(n_batch_), 1.0f / float(T));
        std::memcpy(scratch_.pool_weights.mapped(), w.data(), w.size() * F);
        s.mark("mean_pool");
        for (int t0 = 0; t0 < T; t0 += ops::kMaxExperts) {
            const int n = std::min(T - t0, ops::kMaxExperts);
            ops::MoeRouting r{&scratch_.ids, &scratch_.pool_weights, nullptr, 1, n};
            ops::moe_combine(s, scratch_.x, uint64_t(t0) * E, r, scratch_.block_out, 0, int64_t(E), /*accumulate=*/t0 > 0);
            s.barrier("one chunk of the mean is summed before the next adds to it or the copy reads it");
        }
        pooled = &scratch_.block_out;
    }
    read_back_checked(*pooled, from * E, scratch_.embd_host, int(rows), int(E), scratch_.embd_flags);
    if (logits) {
        // Every token's logits through the (tied) output projection, from the residual stream.
        MatmulInputs in = prepare_inputs(scratch_.x, 0, T, spec_.n_embd, {&w_.output});
        s.mark("matmul");
        in.matmul(s, w_.output, scratch_.logits, 0, T);
        s.barrier("logits are complete before the checked copy to host memory");
        read_back_checked(scratch_.logits, 0, scratch_.logits_host, T, spec_.n_vocab, scratch_.logits_flags);
    }
    s.submit_and_wait();

    std::memcpy(embeddings, scratch_.embd_host.mapped(), size_t(rows * E) * F);
    if (logits) std::memcpy(logits, scratch_.logits_host.mapped(), size_t(T) * size_t(spec_.n_vocab) * F);
    if (results) read_probes(T, 0, probes, results, /*first_pass=*/true);
}

}  // namespace vkllm::model
