// What the forward pass holds besides the KV caches and the probes: scratch activations, the
// step's inputs and outputs, MoE and MLA scratch (Session::scratch_bytes, the studio's memory view).
#include "model/forward.h"

namespace vkllm::model {

uint64_t Forward::scratch_bytes() const {
    uint64_t n = 0;
    for (const gpu::Buffer* b : {&ids_, &positions_, &k_new_, &v_new_, &x_, &h_, &q_, &attn_, &block_out_, &gate_, &up_,
                                 &router_logits_, &moe_experts_, &moe_weights_, &moe_sorted_, &moe_gate_, &moe_up_,
                                 &moe_down_, &moe_input_, &moe_ones_, &attn_scratch_, &pool_weights_, &embd_host_,
                                 &logits_, &logits_host_, &mla_qa_, &mla_q_, &mla_qn_, &mla_qabs_, &mla_out_,
                                 &head_ids_, &edits_buf_, &edit_state_})
        n += b->size();
    for (const gpu::Buffer& b : rounded_) n += b.size();
    n += kv_.slot_positions_bytes();
    for (const gpu::Buffer& b : expert_load_) n += b.size();
    return n;
}

}  // namespace vkllm::model
