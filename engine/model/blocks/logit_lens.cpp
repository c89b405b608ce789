#include "model/blocks/logit_lens.h"

#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

void LogitLensBlock::record(Recording& r) const {
    const std::vector<int>& layers = r.probe.lens_layers();
    if (layers.empty()) return;
    const ProbeRecorder::Lens& lens = r.probe.lens();
    gpu::Stream& s = r.s;
    const ModelSpec& spec = r.spec;
    const int n = int(layers.size());
    s.barrier("the lens rows are copied before their norm");
    r.norm(ops::f32_rows(lens.x, n, spec.n_embd), r.w.output_norm, r.w.output_norm_b, ops::f32_rows(lens.h, n, spec.n_embd));
    s.barrier("the normalised lens rows are complete before the output projection");
    for (int i = 0; i < n; ++i) {
        MatmulInputs in = r.prepare_inputs(ops::f32_rows(lens.h, 1, spec.n_embd, uint64_t(i) * uint64_t(spec.n_embd)),
                                           {&r.w.output});
        s.mark("matmul");
        in.matmul(s, r.w.output, ops::f32_rows(lens.logits, 1, r.w.output.n_out, uint64_t(i) * uint64_t(spec.n_vocab)));
        s.barrier("a lens row's projection is done before the rounded inputs are reused");
    }
    if (spec.logit_scale != 1.0f) {  // as OutputHeadBlock: Granite divides logits by its logit multiplier
        s.mark("scale");
        ops::scale(s, ops::f32_rows(lens.logits, n, spec.n_vocab), 1.0f / spec.logit_scale);
        s.barrier("scaled lens logits are complete before soft-capping or the copy");
    }
    if (spec.final_softcap > 0) {
        s.mark("softcap");
        ops::softcap(s, ops::f32_rows(lens.logits, n, spec.n_vocab), spec.final_softcap);
        s.barrier("soft-capped lens logits are complete before the copy");
    }
    s.mark("copy");
    s.copy(lens.logits, 0, lens.host, 0, uint64_t(n) * uint64_t(spec.n_vocab) * F);
}

}  // namespace vkllm::model
