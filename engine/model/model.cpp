// vkllm::Model: a GGUF file, its spec, tokenizer and weights on one GPU.
#include "vkllm/model.h"

#include <stdexcept>
#include <utility>

#include "gguf/gguf.h"
#include "gpu/device.h"
#include "model/spec.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace vkllm {

struct Model::Impl {
    std::unique_ptr<gguf::File> file;
    model::ModelSpec spec;
    std::unique_ptr<tokenizer::Tokenizer> tok;
    std::unique_ptr<gpu::Context> ctx;
    std::unique_ptr<model::Weights> weights;
};

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, const ModelOptions& options) {
    return load(gguf::File::open(path), options);
}

std::unique_ptr<Model> Model::load(std::unique_ptr<gguf::File> file, const ModelOptions& options) {
    if (!file) throw std::invalid_argument("Model::load: no GGUF file given");
    std::unique_ptr<Model> m(new Model());
    Impl& i = *m->impl_;
    i.file = std::move(file);
    i.spec = model::ModelSpec::from_gguf(*i.file);
    i.tok = tokenizer::Tokenizer::from_gguf(*i.file);
    if (i.tok->n_vocab() != i.spec.n_vocab)
        throw model::ModelError(i.file->path() + ": the tokenizer has " + std::to_string(i.tok->n_vocab()) +
                                " tokens but token_embd has " + std::to_string(i.spec.n_vocab) + " rows");
    gpu::ContextOptions co;
    co.device = options.device;
    i.ctx = gpu::Context::create(co);
    i.weights = std::make_unique<model::Weights>(*i.ctx, *i.file, i.spec);
    return m;
}

const model::ModelSpec& Model::spec() const { return impl_->spec; }
const tokenizer::Tokenizer& Model::tokenizer() const { return *impl_->tok; }
const gguf::File& Model::file() const { return *impl_->file; }
gpu::Context& Model::context() const { return *impl_->ctx; }
const model::Weights& Model::weights() const { return *impl_->weights; }
uint64_t Model::weight_bytes() const { return impl_->weights->bytes(); }

}  // namespace vkllm
