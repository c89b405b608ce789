// The public API: a Model is a GGUF file's weights resident on one GPU, with its tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace vkllm {

namespace gguf { class File; }
namespace gpu { class Context; }
namespace tokenizer { class Tokenizer; }
namespace model { struct ModelSpec; class Weights; }

struct ModelOptions {
    std::string device;  // index or name; empty: VKLLM_DEVICE, else the best device
};

class Model {
public:
    // Throws a std::runtime_error subclass naming the file and the problem.
    static std::unique_ptr<Model> load(const std::string& path, const ModelOptions& options = {});
    // The same from a GGUF file already open (a mapping, or a memory image from
    // gguf::File::from_memory). The Model owns it: tensor data is read from it while it lives.
    static std::unique_ptr<Model> load(std::unique_ptr<gguf::File> file, const ModelOptions& options = {});
    ~Model();

    const model::ModelSpec& spec() const;
    const tokenizer::Tokenizer& tokenizer() const;
    const gguf::File& file() const;
    gpu::Context& context() const;
    const model::Weights& weights() const;
    uint64_t weight_bytes() const;  // bytes of weights on the GPU

private:
    Model();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm
