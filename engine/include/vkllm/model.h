// The public API: a Model is a GGUF file's weights resident on one GPU, with its tokenizer.
//
// Threading: a Model may be shared by several Sessions; its const methods may be called from
// any thread. The weight interventions (set_weight, restore_weights) must not run while any
// Session of this Model is evaluating (the front-end applies them between steps).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkllm/device.h"
#include "vkllm/model_info.h"
#include "vkllm/utf8.h"

namespace vkllm {

class GgufFile;
namespace detail { struct ModelInternals; }  // the engine's side; incomplete for front-ends

struct ModelOptions {
    std::string device;  // index or name; empty: VKLLM_DEVICE, else the best device
};

// One element of a weight matrix, addressed as PyTorch addresses `weight[row, col]`: `row` is
// the output channel and `col` the input channel (for ffn_down: row = hidden channel,
// col = FFN channel).
// Fused file tensors are addressed by their file name and rows ("attn_qkv": q rows, then k, then v).
struct WeightRef {
    int layer = 0;       // -1: a matrix outside the layers ("token_embd", "output", "position_embd")
    std::string tensor;  // llama.cpp's name inside the layer, without "blk.N." and ".weight": "ffn_down", "attn_q", ...
    int64_t row = 0;
    int64_t col = 0;
    int expert = -1;     // 3-D expert tensors ("ffn_down_exps"): which expert; -1 otherwise
};

class Model {
public:
    // Throws a std::runtime_error subclass naming the file and the problem.
    static std::unique_ptr<Model> load(const std::string& path, const ModelOptions& options = {});
    // A GGUF file already opened (the Model takes its reader; `file` is left empty).
    static std::unique_ptr<Model> load(GgufFile& file, const ModelOptions& options = {});
    // A GGUF image in memory (the bytes are copied); `name` is what messages call it.
    static std::unique_ptr<Model> load_from_memory(const void* data, size_t size, const std::string& name,
                                                   const ModelOptions& options = {});
    ~Model();

    const ModelInfo& info() const;
    const DeviceInfo& device() const;   // the device the weights live on
    uint64_t weight_bytes() const;      // bytes of weights on the GPU

    // ---- Tokenizer ----
    // add_special: BOS/EOS as the vocabulary asks; parse_special: text of control tokens
    // ("<|im_start|>") becomes their ids, otherwise it is plain text.
    std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special = false) const;
    // The text of the tokens (control tokens render as nothing unless render_special; the
    // SentencePiece leading space the tokenizer adds is removed).
    std::string detokenize(const std::vector<int32_t>& ids, bool render_special = false) const;
    // The bytes one token contributes (may be part of a UTF-8 character).
    std::string piece(int32_t id, bool render_special = false) const;
    // The raw vocabulary string of a token (control tokens included).
    const std::string& token_text(int32_t id) const;
    bool is_eog(int32_t id) const;      // ends generation (eos, eot, eom, ...)
    bool is_control(int32_t id) const;
    int32_t n_vocab() const;
    int32_t bos() const;                // -1 when none
    int32_t eos() const;
    int32_t eot() const;
    int32_t mask_token() const;         // BERT's [MASK] (tokenizer.ggml.mask_token_id), -1 when none
    bool add_bos() const;
    int32_t find_token(const std::string& text) const;  // -1 when the vocabulary has no such string
    // Load-time warnings about the file: metadata that was ignored or replaced by a default
    // (an out-of-range BOS/EOS id, ...), one sentence each. Empty for a clean file. The CLI
    // prints them on stderr as "warning: ...".
    const std::vector<std::string>& warnings() const;
    // True once this model created a shader pipeline that no earlier run on this device did (a
    // first run on the device, or a new kind of model): its shaders were compiled in this run,
    // by Session::prepare or, for what was not prepared, inside the timings of the eval that
    // first used them. The CLI prints a note after its timing line.
    bool compiled_shaders() const;

    // ---- Weight interventions (the "what if" of the explorer) ----
    // The current value of one weight element (dequantised).
    float weight(const WeightRef& w) const;
    // Sets one element on the GPU without reloading; returns the value it had. A quantised
    // tensor's block holding the element is re-encoded (its other elements may move by the
    // type's rounding). The original bytes are kept so restore_weights() undoes every edit.
    // Throws std::invalid_argument naming what is out of range.
    float set_weight(const WeightRef& w, float value);
    // Puts back every edited element's original bytes.
    void restore_weights();
    // Edits in force, in the order they were made.
    std::vector<WeightRef> weight_edits() const;

    // The engine's side of the model (Session, tests); front-ends never need it.
    const detail::ModelInternals& internals() const;
    detail::ModelInternals& internals();

private:
    Model();
    friend struct detail::ModelInternals;
    std::unique_ptr<detail::ModelInternals> impl_;
};


}  // namespace vkllm
