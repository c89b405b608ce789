// A model's tokenizer on its own, read from a GGUF file without a GPU (vkllm tokenize, tools
// that count or show tokens before a model is loaded). A loaded Model has the same methods.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vkllm {

class GgufFile;
namespace tokenizer { class Tokenizer; }  // the engine's; not part of the API

class Tokenizer {
public:
    // Throws std::runtime_error naming the file and an unsupported or inconsistent vocabulary.
    static std::unique_ptr<Tokenizer> from_file(const GgufFile& file);
    ~Tokenizer();

    // As Model::tokenize / detokenize / piece / token_text (model.h).
    std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special = false) const;
    std::string detokenize(const std::vector<int32_t>& ids, bool render_special = false) const;
    std::string piece(int32_t id, bool render_special = false) const;
    const std::string& token_text(int32_t id) const;
    int32_t n_vocab() const;
    std::string kind() const;  // "llama (SentencePiece)", "gpt2 (byte-level BPE, pre=qwen2)"
    // As Model::warnings (model.h).
    const std::vector<std::string>& warnings() const;

private:
    explicit Tokenizer(std::unique_ptr<tokenizer::Tokenizer> impl);
    std::unique_ptr<tokenizer::Tokenizer> impl_;
};

}  // namespace vkllm
