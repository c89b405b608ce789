#include "model/blocks/encoder_head.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

void EncoderHeadBlock::record(Recording& r) const {
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int T = r.n_tokens;
    const uint64_t E = uint64_t(r.spec.n_embd);
    // The mean is a weighted row sum with weights 1/T (ops::moe_combine summing "slots" k of one
    // token), in chunks of at most kMaxExperts rows accumulated into block_out's first row.
    uint64_t from = 0;
    const gpu::Buffer* pooled = &sc.x;
    if (pooling_ == Pooling::Last) from = uint64_t(T - 1);
    else if (pooling_ == Pooling::Mean) {
        const uint64_t n_batch = sc.pool_weights.size() / F;
        std::vector<float> weights(n_batch, 1.0f / float(T));
        std::memcpy(sc.pool_weights.mapped(), weights.data(), weights.size() * F);
        s.mark("mean_pool");
        for (int t0 = 0; t0 < T; t0 += ops::kMaxExperts) {
            const int n = std::min(T - t0, ops::kMaxExperts);
            ops::MoeRouting rows{&sc.ids, &sc.pool_weights, nullptr, 1, n};
            ops::moe_combine(s, ops::f32_rows(sc.x, n, int64_t(E), uint64_t(t0) * E), rows,
                             ops::f32_rows(sc.block_out, 1, int64_t(E)), /*accumulate=*/t0 > 0);
            s.barrier("one chunk of the mean is summed before the next adds to it or the copy reads it");
        }
        pooled = &sc.block_out;
    }
    r.read_back_checked(ops::f32_rows(*pooled, pooled_rows(pooling_, T), int64_t(E), from * E), sc.embd_host,
                        sc.embd_flags);
    if (logits_) {
        // Every token's logits through the (tied) output projection.
        MatmulInputs in = r.prepare_inputs(r.residual(T), {&r.w.output});
        s.mark("matmul");
        in.matmul(s, r.w.output, ops::f32_rows(sc.logits, T, r.w.output.n_out));
        s.barrier("logits are complete before the checked copy to host memory");
        r.read_back_checked(ops::f32_rows(sc.logits, T, r.spec.n_vocab), sc.logits_host, sc.logits_flags);
    }
}

}  // namespace vkllm::model
