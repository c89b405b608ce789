#include "model/blocks/output_head.h"

#include "ops/ops.h"

namespace vkllm::model {

void OutputHeadBlock::record(Recording& r) const {
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const ModelSpec& spec = r.spec;
    const Weights& w = r.w;
    const int rows = r.all_logits ? r.n_tokens : 1;
    const uint64_t first = r.all_logits ? 0 : uint64_t(r.n_tokens - 1) * uint64_t(spec.n_embd);
    // Without a final norm (BERT) the projection reads the residual stream itself.
    MatmulInputs in = spec.final_norm
                          ? r.normed_inputs(sc.x, first, rows, spec.n_embd, w.output_norm, w.output_norm_b, {&w.output},
                                            "the final norm is complete before the output projection reads it", sc.h)
                          : r.prepare_inputs(sc.x, first, rows, spec.n_embd, {&w.output});
    s.mark("matmul");
    in.matmul(s, w.output, sc.logits, 0, rows);
    if (spec.logit_scale != 1.0f) {  // Granite: logits divided by its logit multiplier
        s.barrier("logits are complete before their scaling");
        s.mark("scale");
        ops::scale(s, ops::f32_rows(sc.logits, rows, spec.n_vocab), 1.0f / spec.logit_scale);
    }
    if (spec.final_softcap > 0) {
        s.barrier("logits are complete before soft-capping");
        s.mark("softcap");
        ops::softcap(s, ops::f32_rows(sc.logits, rows, spec.n_vocab), spec.final_softcap);
    }
    s.barrier("logits are complete before the checked copy to host memory");
    r.read_back_checked(ops::f32_rows(sc.logits, rows, spec.n_vocab), sc.logits_host, sc.logits_flags);
}

}  // namespace vkllm::model
