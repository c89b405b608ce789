#include "model/blocks/output_head.h"

#include "ops/ops.h"

namespace vkllm::model {

void OutputHeadBlock::record(Recording& r) const {
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const ModelSpec& spec = r.spec;
    const Weights& w = r.w;
    const int rows = r.all_logits ? r.n_tokens : 1;
    const ops::TensorView x = r.residual(rows, r.all_logits ? 0 : r.n_tokens - 1);
    // Without a final norm (BERT) the projection reads the residual stream itself.
    MatmulInputs in = spec.final_norm
                          ? r.normed_inputs(x, w.output_norm, w.output_norm_b, {&w.output},
                                            "the final norm is complete before the output projection reads it",
                                            ops::f32_rows(sc.h, rows, spec.n_embd))
                          : r.prepare_inputs(x, {&w.output});
    s.mark("matmul");
    in.matmul(s, w.output, ops::f32_rows(sc.logits, rows, w.output.n_out));
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
