#include "model/blocks/embedding.h"

#include "ops/ops.h"

namespace vkllm::model {

void EmbeddingBlock::record(Recording& r) const {
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const ModelSpec& spec = r.spec;
    const int T = r.n_tokens;
    s.mark("get_rows");
    const ops::TensorView x = ops::f32_rows(sc.x, T, spec.n_embd);
    ops::get_rows(s, r.w.token_embd, ops::i32_vector(sc.ids, T), x);
    if (spec.learned_positions)
        ops::get_rows(s, r.w.position_embd, ops::i32_vector(sc.positions, T), ops::f32_rows(sc.h, T, spec.n_embd));
    s.barrier("embeddings are written before they are scaled or summed");
    if (spec.embd_scale != 1.0f) {
        s.mark("scale");
        ops::scale(s, x, spec.embd_scale);
        s.barrier("scaled embeddings are complete before layer 0 reads them");
    }
    if (r.w.token_type0) {
        // BERT: token type 0's row added to every token (before the positions, as llama.cpp sums).
        s.mark("add_bias");
        ops::add_bias(s, x, ops::f32_vector(*r.w.token_type0, spec.n_embd));
        s.barrier("token + type embeddings are complete before the positions are added");
    }
    if (spec.learned_positions) {
        s.mark("add");
        ops::add(s, x, ops::f32_rows(sc.h, T, spec.n_embd), x);
        s.barrier("token + position embeddings are complete before layer 0 reads them");
    }
    if (r.w.embd_norm) {
        r.norm(x, r.w.embd_norm, r.w.embd_norm_b, x);
        s.barrier("the normalised embeddings are complete before layer 0 reads them");
    }
}

}  // namespace vkllm::model
