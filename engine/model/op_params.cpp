#include "model/op_params.h"

namespace vkllm::model {

ops::RopeParams rope_params(const RopeSpec& r) {
    ops::RopeParams p;
    p.n_dims = r.n_dims;
    p.neox = r.neox;
    p.freq_base = r.freq_base;
    p.freq_scale = (r.scaling == RopeScaling::Linear || r.scaling == RopeScaling::Yarn) ? 1.0f / r.factor : 1.0f;
    p.ext_factor = r.ext_factor;
    p.attn_factor = r.attn_factor;
    p.beta_fast = r.beta_fast;
    p.beta_slow = r.beta_slow;
    p.n_ctx_orig = r.n_ctx_orig;
    return p;
}

}  // namespace vkllm::model
