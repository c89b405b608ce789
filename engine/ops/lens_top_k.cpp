// The logit lens's softmax and top-k (lens_ops.h), made of the softmax and the attention
// probes' top-keys kernel: a row of logits softmaxed is a row of probabilities over keys 0..V-1.
#include <algorithm>
#include <string>

#include "ops/dispatch_util.h"
#include "ops/lens_ops.h"
#include "ops/probe_ops.h"

namespace vkllm::ops {

void lens_top_k(Stream& s, const TensorView& logits, const TensorView& ids, const TensorView& top, int k) {
    const char* op = "lens_top_k";
    detail::checked_f32(logits, op, "logits");
    detail::require_packed(logits, op, "logits");
    const int64_t n_rows = logits.rows, n_vocab = logits.cols;
    detail::require(n_vocab > 0, op, "needs a vocabulary of at least one token, got " + std::to_string(n_vocab));
    detail::require(k >= 1 && k <= kMaxAttentionTopK, op,
                    "k must be 1.." + std::to_string(kMaxAttentionTopK) + ", got " + std::to_string(k));
    detail::checked(ids, gguf::TensorType::I32, op, "ids");
    detail::require_packed(ids, op, "ids");
    detail::checked(top, gguf::TensorType::I32, op, "top");
    detail::require(ids.elements() >= std::max(n_rows, n_vocab), op,
                    "ids has " + std::to_string(ids.elements()) + " elements, needs max(rows, vocabulary) = " +
                        std::to_string(std::max(n_rows, n_vocab)));
    detail::require_shape(top, n_rows, int64_t(k) * 2, op, "top");
    if (n_rows == 0) return;
    s.mark("softmax");
    softmax(s, logits, logits);
    s.barrier("the lens probabilities are complete before their top-k");
    AttentionDetailArgs a;
    a.probs = logits;
    a.q_pos = i32_vector(*ids.buffer, n_rows, ids.offset / 4);
    a.kv_pos = i32_vector(*ids.buffer, n_vocab, ids.offset / 4);
    a.n_head = 1;
    a.top_k = k;
    a.top = top;
    s.mark("top_k");
    attention_detail(s, a);
}

}  // namespace vkllm::ops
