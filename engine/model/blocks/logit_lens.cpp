#include "model/blocks/logit_lens.h"

#include "ops/lens_ops.h"
#include "ops/ops.h"
#include "ops/probe_ops.h"

namespace vkllm::model {
namespace {
static_assert(kMaxLensTopN <= ops::kMaxAttentionTopK, "the lens's top-k runs on the attention probes' kernel");
}  // namespace

void LogitLensBlock::record(Recording& r) const {
    const std::vector<int>& layers = r.probe.lens_layers();
    if (layers.empty()) return;
    const ProbeRecorder::Lens& lens = r.probe.lens();
    gpu::Stream& s = r.s;
    const ModelSpec& spec = r.spec;
    const int n = int(layers.size()), R = r.probe.lens_rows(r.n_tokens), V = spec.n_vocab;
    s.barrier("the lens rows are copied before their norm");
    r.norm(ops::f32_rows(lens.x, int64_t(n) * R, spec.n_embd), r.w.output_norm, r.w.output_norm_b,
           ops::f32_rows(lens.h, int64_t(n) * R, spec.n_embd));
    s.barrier("the normalised lens rows are complete before the output projection");
    // One lens layer at a time through the one logits buffer: R rows of logits, their softmax
    // and top-k into the layer's rows of `top`.
    const ops::TensorView logits = ops::f32_rows(lens.logits, R, V);
    for (int i = 0; i < n; ++i) {
        MatmulInputs in = r.prepare_inputs(
            ops::f32_rows(lens.h, R, spec.n_embd, uint64_t(i) * uint64_t(R) * uint64_t(spec.n_embd)), {&r.w.output});
        s.mark("matmul");
        in.matmul(s, r.w.output, logits);
        s.barrier("a lens layer's logits are complete before they are scaled or reduced");
        if (spec.logit_scale != 1.0f) {  // as OutputHeadBlock: Granite divides logits by its logit multiplier
            s.mark("scale");
            ops::scale(s, logits, 1.0f / spec.logit_scale);
            s.barrier("scaled lens logits are complete before soft-capping or the softmax");
        }
        if (spec.final_softcap > 0) {
            s.mark("softcap");
            ops::softcap(s, logits, spec.final_softcap);
            s.barrier("soft-capped lens logits are complete before the softmax");
        }
        ops::lens_top_k(s, logits, ops::i32_vector(lens.ids, int64_t(lens.ids.size() / 4)),
                        ops::i32_rows(lens.top, R, int64_t(lens.k) * 2, uint64_t(i) * uint64_t(R) * uint64_t(lens.k) * 2),
                        lens.k);
        s.barrier("a lens layer's top-k has read its probabilities before the next layer's projection");
    }
    s.mark("copy");
    s.copy(lens.top, 0, lens.host, 0, uint64_t(n) * uint64_t(R) * uint64_t(lens.k) * 8);
}

}  // namespace vkllm::model
