// The state behind vkllm::Session, shared by session.cpp (eval, truncate, snapshot) and
// generate.cpp (Session::generate). Not part of the public API.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "model/forward.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {

struct Session::Impl {
    Impl(const Model& m, const SessionOptions& options);

    const Model& model;
    SessionOptions options;  // as created (the forward pass's own choices are asked of `forward`)
    std::unique_ptr<model::Forward> forward;
    ProbeConfig probes;
    ProbeResults results;
    std::vector<ResidualEdit> edits;

    // Worker thread only: the tokens in the cache, in order (tokens.size() == n_past).
    std::vector<int32_t> tokens;
    // The last run() evaluated one token (a decode step): the next one-token run takes no
    // state snapshot, so a generation's steps do not push its turn boundaries out of the ring.
    bool last_run_single = false;

    // Set by cancel() from any thread; a running generate() checks it between forward passes.
    std::atomic<bool> cancel_requested{false};

    // What snapshot() copies; written by the worker after each completed step, under `mutex`.
    mutable std::mutex mutex;
    SessionSnapshot published;

    // Throws std::invalid_argument naming an id outside the vocabulary.
    void check_vocabulary(const int32_t* ids, size_t n) const;
    // Throws ContextOverflow when n more tokens do not fit after the cached ones.
    void check_fits(size_t n) const;
    // Runs ids[0..n) at positions tokens.size().. in passes of at most n_batch tokens, appending
    // them to `tokens`; logits as Session::eval. Before every pass, when `cancel` is set and true,
    // stops and returns false (the passes already run stay in the cache). with_probes: false for
    // recomputing cache entries (no probe results, no expert-load sums).
    bool run(const int32_t* ids, size_t n, bool all_logits, float* logits, const std::atomic<bool>* cancel,
             bool with_probes = true);
    // Throws NonFiniteLogits when a row of logits holds a NaN or an infinity (ids: the input
    // token of each row; first_position: the first row's position).
    // Throws NonFiniteLogits for the first of the last step's n_rows logits rows (as returned in
    // rows) that holds a NaN or an infinity, from the GPU's count (Forward::logits_nonfinite).
    void check_finite(const float* rows, size_t n_rows, size_t n_vocab, const int32_t* ids, int first_position) const;
    // Drops tokens after the first n. Returns how many kept tokens had to be evaluated again: a
    // recurrent state is copied back from its newest snapshot at or below n and the tokens
    // after the snapshot evaluated again; without one (or when a sliding-window ring lost
    // positions later queries need) every kept token from position 0.
    int truncate(int n);
    // Publishes the cache's tokens and the last eval's probes for snapshot().
    void publish_step();
    // Encoders (session_encode.cpp): checks a text for Session::embed / encode_logits and
    // empties the session for it.
    void prepare_encode(const std::vector<int32_t>& text, const char* what);

    class Generation;  // one generate() call (generate.cpp)
};

}  // namespace vkllm
