// vkllm::Model: a GGUF file, its spec, tokenizer and weights on one GPU.
#include "vkllm/model.h"

#include <stdexcept>
#include <utility>

#include "model/model_internal.h"
#include "vkllm/gguf.h"

namespace vkllm {

Model::Model() : impl_(std::make_unique<detail::ModelInternals>()) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, const ModelOptions& options) {
    return detail::ModelInternals::load(gguf::File::open(path), options);
}

std::unique_ptr<Model> Model::load(GgufFile& file, const ModelOptions& options) {
    return detail::ModelInternals::load(file.release_internal(), options);
}

std::unique_ptr<Model> Model::load_from_memory(const void* data, size_t size, const std::string& name,
                                               const ModelOptions& options) {
    return detail::ModelInternals::load(gguf::File::from_memory(static_cast<const uint8_t*>(data), size, name), options);
}

std::unique_ptr<Model> detail::ModelInternals::load(std::unique_ptr<gguf::File> file, const ModelOptions& options) {
    if (!file) throw std::invalid_argument("Model::load: no GGUF file given");
    std::unique_ptr<Model> m(new Model());
    detail::ModelInternals& i = *m->impl_;
    i.file_ = std::move(file);
    i.spec_ = model::ModelSpec::from_gguf(*i.file_);
    i.tok_ = tokenizer::Tokenizer::from_gguf(*i.file_);
    if (i.tok_->n_vocab() != i.spec_.n_vocab)
        throw model::ModelError(i.file_->path() + ": the tokenizer has " + std::to_string(i.tok_->n_vocab()) +
                                " tokens but token_embd has " + std::to_string(i.spec_.n_vocab) + " rows");
    i.info_ = detail::model_info(*i.file_, i.spec_, i.tok_.get());
    gpu::ContextOptions co;
    co.device = options.device;
    i.ctx_ = gpu::Context::create(co);
    i.device_ = detail::device_info(i.ctx_->caps());
    i.weights_ = std::make_unique<model::Weights>(*i.ctx_, *i.file_, i.spec_);
    return m;
}

const ModelInfo& Model::info() const { return impl_->info_; }
const DeviceInfo& Model::device() const { return impl_->device_; }
uint64_t Model::weight_bytes() const { return impl_->weights_->bytes(); }
const detail::ModelInternals& Model::internals() const { return *impl_; }
detail::ModelInternals& Model::internals() { return *impl_; }

std::vector<int32_t> Model::tokenize(const std::string& text, bool add_special, bool parse_special) const {
    return impl_->tok_->encode(text, add_special, parse_special);
}
std::string Model::detokenize(const std::vector<int32_t>& ids, bool render_special) const {
    return impl_->tok_->decode(ids, render_special);
}
std::string Model::piece(int32_t id, bool render_special) const { return impl_->tok_->token_to_piece(id, render_special); }
const std::string& Model::token_text(int32_t id) const { return impl_->tok_->token_text(id); }
bool Model::is_eog(int32_t id) const { return impl_->tok_->is_eog(id); }
bool Model::is_control(int32_t id) const { return impl_->tok_->is_control(id); }
int32_t Model::n_vocab() const { return impl_->tok_->n_vocab(); }
int32_t Model::bos() const { return impl_->tok_->bos(); }
int32_t Model::eos() const { return impl_->tok_->eos(); }
int32_t Model::eot() const { return impl_->tok_->eot(); }
int32_t Model::mask_token() const { return impl_->tok_->mask(); }
bool Model::add_bos() const { return impl_->tok_->add_bos(); }
int32_t Model::find_token(const std::string& text) const { return impl_->tok_->find_token(text); }
const std::vector<std::string>& Model::warnings() const { return impl_->tok_->warnings(); }
bool Model::compiled_shaders() const { return impl_->ctx_->compiled_new_pipelines(); }

}  // namespace vkllm
