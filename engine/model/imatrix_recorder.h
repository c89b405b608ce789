// Importance-matrix collection during a forward pass (vkllm imatrix): when a Forward has a
// recorder (Forward::set_imatrix), every matmul input the blocks prepare adds its x_j^2 into its
// weight's sums on the GPU (ops::imatrix_accumulate), as llama-imatrix's callback does on the
// CPU: each weight named as in the file (a tensor split on upload counts once per input), only
// layer weights (`blk.*`, and output.weight when asked), only inputs of 16 rows or more, and
// stacked experts always, per expert over the pairs routed to it. Without a recorder the forward
// records nothing of this.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "vkllm/imatrix.h"

namespace vkllm::model {

class ImatrixRecorder {
public:
    // process_output: output.weight's input too (llama-imatrix --process-output).
    ImatrixRecorder(gpu::Context& ctx, const Weights& weights, bool process_output = false);

    // Called as a pass starts recording: forgets which sums the pass has written.
    void begin_pass() { written_.clear(); }
    // x (f32 [rows, n]) is the input of the matmuls of `ws`; records the sums of the weights that
    // are collected (a weight without a buffer, a stand-in, is skipped).
    void matmul_input(gpu::Stream& s, const ops::TensorView& x, std::initializer_list<const ops::Weight*> ws);
    // x is the input of stacked experts `ws` over the routed pairs of r (x_per_pair: one row per
    // pair, else one per token).
    void expert_input(gpu::Stream& s, const ops::TensorView& x, bool x_per_pair, const ops::MoeRouting& r,
                      std::initializer_list<const ops::ExpertWeights*> ws);
    // x (one row per (token, head) pair) is the input of per-head matrices `w` (DeepSeek's attn_k_b,
    // attn_v_b) over the pairs of `by_head` (pair p to head p % n_head): a plain batched product for
    // llama.cpp, so collected only for passes of 16 tokens or more.
    void head_input(gpu::Stream& s, const ops::TensorView& x, const ops::MoeRouting& by_head,
                    const ops::ExpertWeights& w);

    // Adds what the GPU summed since the last call into m (entries made as needed; only weights
    // that some input reached) and zeroes the GPU's sums. The passes must have completed.
    void drain_into(Imatrix& m);

private:
    struct Entry {
        std::string name;
        int64_t n_cols = 0, n_mat = 1;
        uint64_t sums_first = 0, counts_first = 0;  // element offsets in sums_ and counts_
    };
    // The entry of the weight at (buffer, offset): the file tensor whose upload holds it, or null
    // when it is not collected.
    const Entry* find(const ops::Buffer* buffer, uint64_t offset) const;
    // A barrier before a second write of the same sums within one pass.
    void order_write(gpu::Stream& s, const Entry& e);

    std::vector<Entry> entries_;
    // buffer -> (byte offset of a part, entry index; SIZE_MAX for a tensor not collected), sorted.
    std::map<const ops::Buffer*, std::vector<std::pair<uint64_t, size_t>>> parts_;
    gpu::Buffer sums_, counts_;
    std::set<size_t> written_;
};

}  // namespace vkllm::model
