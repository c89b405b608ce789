// The model compiled into vkllm (cmake/EmbedModel.cmake): its bytes are the default model file
// as it is now, and they parse as a runnable Llama GGUF. Only structure is checked: the model is
// retrained from time to time, so its weights and the text it writes are not fixed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "embedded_model.h"
#include "gguf/gguf.h"
#include "model/spec.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace vkllm {
namespace {

TEST(EmbeddedModel, IsTheDefaultModelFileAlignedInMemory) {
    const auto bytes = cli::embedded_model();
    EXPECT_STREQ(cli::embedded_model_name(), "zoo-dense");
    ASSERT_GT(bytes.size(), 1024u);
    // GGUF tensor data is aligned relative to the file start; a 64-byte-aligned image keeps it
    // aligned in memory too.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 64, 0u);

    // The build must re-embed the file when it changes: the binary holds exactly today's file.
    const std::string path = test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const std::vector<uint8_t> on_disk = test::read_file(path);
    ASSERT_EQ(on_disk.size(), bytes.size());
    EXPECT_EQ(std::memcmp(on_disk.data(), bytes.data(), bytes.size()), 0) << "the built-in model is stale; rebuild";
}

TEST(EmbeddedModel, ParsesAsALlamaModelWithAMatchingTokenizer) {
    const auto bytes = cli::embedded_model();
    auto file = gguf::File::from_memory(bytes.data(), bytes.size(), "built-in model");
    EXPECT_EQ(file->get_string("general.architecture").value_or(""), "llama");
    EXPECT_EQ(file->get_string("general.name").value_or(""), "zoo-dense");

    const model::ModelSpec spec = model::ModelSpec::from_gguf(*file);
    EXPECT_EQ(spec.arch, "llama");
    EXPECT_GT(spec.n_layer, 0);
    EXPECT_GT(spec.n_ctx_train, 0);
    const auto tok = tokenizer::Tokenizer::from_gguf(*file);
    EXPECT_EQ(tok->n_vocab(), spec.n_vocab);
    // The quick-start prompt must tokenize to something for `vkllm run` to continue it.
    EXPECT_FALSE(tok->encode("Once upon a time", /*add_special=*/false, /*parse_special=*/false).empty());

    EXPECT_NE(file->find_tensor("token_embd.weight"), nullptr);
}

}  // namespace
}  // namespace vkllm
