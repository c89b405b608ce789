// Several sequences stepped together over one Model (continuous batching): a BatchSession has
// n_slots slots, each its own token list and its own region of KV cache, and step() runs the
// new tokens of any set of slots through one forward pass per n_batch tokens, in which every
// matmul reads the weights once for all of them (rope, the cache writes and attention run per
// slot). A slot's tokens and logits are those a Session holding the same tokens would have (up
// to the rounding of a batched matmul against a one-row matvec).
//
// What it does not do: probes, residual edits and weight interventions stay with Session (one
// sequence, vkllm/session.h), and architectures whose layers keep a recurrent state
// (state-space, RWKV), encoders, multi-head latent attention and Llama 4's position-scaled
// attention are refused when the BatchSession is made (batch_unsupported names the reason).
// Generation over the slots (sampling, stop rules, streaming) is BatchGenerator's
// (vkllm/batch_generate.h).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkllm/kv_cache_type.h"

namespace vkllm {

class Model;

struct BatchOptions {
    int n_slots = 4;    // sequences held at once, >= 1
    int n_ctx = 0;      // per slot; 0: the model's training context, capped at 4096
    int n_batch = 256;  // tokens per forward pass, all slots together (>= n_slots)
    bool llama_cpp_rounding = true;  // as SessionOptions::llama_cpp_rounding
    KvCacheType kv_cache = KvCacheType::Auto;
};

// The new tokens of one slot for a step(): appended after the slot's tokens.
struct BatchInput {
    int slot = 0;
    std::vector<int32_t> tokens;
};

// Why `model` cannot be stepped in batches (empty when it can): the first layer feature the
// batched pass lacks, named.
std::string batch_unsupported(const Model& model);

class BatchSession {
public:
    // Throws std::invalid_argument for bad options or a model batch_unsupported refuses (with
    // its reason), vkllm::ModelError / GpuError as Session does.
    explicit BatchSession(const Model& model, const BatchOptions& options = {});
    ~BatchSession();
    BatchSession(const BatchSession&) = delete;
    BatchSession& operator=(const BatchSession&) = delete;

    // Runs each input's tokens at its slot's next positions, appending them to the slot's
    // tokens; returns each input's last-token logits [n_vocab], in the order of `inputs`.
    // Inputs name distinct slots and carry at least one token each. Together they may exceed
    // n_batch: then the tokens run in consecutive passes (every slot's tokens in order, a slot
    // whose tokens are done leaving the later passes). Throws std::invalid_argument (a bad slot,
    // a repeated slot, no tokens, an id outside the vocabulary) and ContextOverflow (the slot's
    // context) before any slot changes; NonFiniteLogits as Session::eval.
    std::vector<std::vector<float>> step(const std::vector<BatchInput>& inputs);

    // Keeps the first n tokens of `slot` (the rest are forgotten). Returns how many kept tokens
    // had to be evaluated again (a sliding-window cache that lost positions is rebuilt).
    int truncate(int slot, int n);
    // Empties a slot.
    void reset(int slot) { truncate(slot, 0); }
    // Tokens of `slot` that equal the start of `tokens` (the prefix a request can keep).
    size_t common_prefix(int slot, const std::vector<int32_t>& tokens) const;

    const std::vector<int32_t>& tokens(int slot) const;
    int n_slots() const;
    int n_ctx() const;    // per slot
    int n_batch() const;  // tokens per forward pass (as asked, within the device's limits)
    uint64_t kv_bytes() const;  // of every slot
    const Model& model() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm
