// The encoder pass (BERT): the whole text in one step from position 0 through the same body of
// blocks as a decoder's step, then the encoder's head (pooled hidden states, optionally every
// token's logits) instead of the decoder's.
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/blocks/encoder_head.h"
#include "model/forward.h"

namespace vkllm::model {
namespace {
constexpr size_t F = sizeof(float);
}

void Forward::encode(const int32_t* ids, int T, Pooling pooling, float* embeddings, float* logits,
                     const ProbeConfig& probes, ProbeResults* results) {
    if (T <= 0 || T > n_batch_ || (logits && T > n_logit_rows_))
        throw std::logic_error("Forward::encode: " + std::to_string(T) + " tokens do not fit one pass");
    // The logit lens reads a decoder's next-token distribution at the newest position; an
    // encoder has none (its head predicts masked tokens at every position), so it is refused
    // rather than returned empty.
    if (!probes.logit_lens_layers.empty())
        throw std::invalid_argument("logit lens: not defined for an encoder (no next-token distribution); "
                                    "use encode_logits for masked-token predictions");
    probe_.configure(probes);
    scratch_.make_encode_outputs(pooling == Pooling::Mean);
    // T <= n_batch <= every cache's slots: a pass from position 0 as a decoder's first step.
    write_step_inputs(ids, T, 0);

    stream_ = &step_stream_;
    gpu::Stream& s = *stream_;
    s.set_profiling(probes.timings);
    s.begin();
    Recording r = recording(T, 0, /*all_logits=*/logits != nullptr, probes);
    record_blocks(r, body_);
    s.set_layer(-1);
    EncoderHeadBlock(pooling, logits != nullptr).record(r);
    s.submit_and_wait();

    const size_t rows = size_t(EncoderHeadBlock::pooled_rows(pooling, T));
    std::memcpy(embeddings, scratch_.embd_host.mapped(), rows * size_t(spec_.n_embd) * F);
    if (logits) std::memcpy(logits, scratch_.logits_host.mapped(), size_t(T) * size_t(spec_.n_vocab) * F);
    if (results) probe_.read(T, 0, probes, results, /*first_pass=*/true, s);
}

}  // namespace vkllm::model
