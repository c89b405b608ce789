// vkllm::Tokenizer: the engine's tokenizer behind the public API, without a GPU.
#include "tokenizer/tokenizer.h"

#include "gguf/gguf.h"
#include "vkllm/gguf.h"
#include "vkllm/tokenizer.h"

namespace vkllm {

Tokenizer::Tokenizer(std::unique_ptr<tokenizer::Tokenizer> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_file(const GgufFile& file) {
    return std::unique_ptr<Tokenizer>(new Tokenizer(tokenizer::Tokenizer::from_gguf(file.internal())));
}

std::vector<int32_t> Tokenizer::tokenize(const std::string& text, bool add_special, bool parse_special) const {
    return impl_->encode(text, add_special, parse_special);
}
std::string Tokenizer::detokenize(const std::vector<int32_t>& ids, bool render_special) const {
    return impl_->decode(ids, render_special);
}
std::string Tokenizer::piece(int32_t id, bool render_special) const { return impl_->token_to_piece(id, render_special); }
const std::string& Tokenizer::token_text(int32_t id) const { return impl_->token_text(id); }
int32_t Tokenizer::n_vocab() const { return impl_->n_vocab(); }
std::string Tokenizer::kind() const { return impl_->kind(); }
const std::vector<std::string>& Tokenizer::warnings() const { return impl_->warnings(); }

}  // namespace vkllm
