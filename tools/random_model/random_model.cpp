#include "random_model/random_model.h"

#include <algorithm>
#include <optional>
#include <string>

#include "random_model/arch_tables.h"
#include "random_model/config_validation.h"
#include "random_model/model_metadata.h"
#include "random_model/rwkv7_model.h"
#include "random_model/tensor_sizes.h"
#include "random_model/tensor_writer.h"

namespace vkllm::random_model {
namespace {

// Checks a --plant-super-weight against the model; returns what apply_plant needs.
PlantContext plant_context(const RandomModelConfig& c, const gguf::File& vocab) {
    const PlantedSuperWeight& p = *c.plant;
    const std::vector<std::string> archs = {"llama", "qwen2", "qwen3", "smollm3", "qwen3moe", "olmoe"};
    require(std::find(archs.begin(), archs.end(), c.arch) != archs.end(),
            "--plant-super-weight: supported for llama, qwen2, qwen3, smollm3, qwen3moe and olmoe, not " + c.arch +
                " (its FFN has no separate gate/up, or a norm after the FFN would rescale the activation)");
    PlantContext ctx;
    ctx.plant = p;
    ctx.n_embd = c.n_embd;
    ctx.moe_layer = is_moe_layer(c, p.layer);
    require(p.layer < c.n_layer, "--plant-super-weight: layer " + std::to_string(p.layer) + " is not below --n-layer " +
                                     std::to_string(c.n_layer));
    require(c.n_embd >= 2 && p.row < c.n_embd, "--plant-super-weight: row " + std::to_string(p.row) +
                                                   " is not below --n-embd " + std::to_string(c.n_embd));
    const int n_ff = ctx.moe_layer ? c.n_ff_exp : c.n_ff;
    require(p.col < n_ff, "--plant-super-weight: col " + std::to_string(p.col) + " is not below the FFN width " +
                              std::to_string(n_ff));
    if (ctx.moe_layer)
        require(p.expert < c.n_expert, "--plant-super-weight: expert " + std::to_string(p.expert) +
                                           " is not below --n-expert " + std::to_string(c.n_expert));
    else
        require(p.expert < 0, "--plant-super-weight: layer " + std::to_string(p.layer) + " has no experts; drop the EXPERT field");
    const auto bos = vocab.get_int("tokenizer.ggml.bos_token_id");
    require(bos.has_value() && *bos >= 0, "--plant-super-weight: the vocabulary (--vocab-from) has no BOS token; the plant fires on it");
    ctx.bos = int32_t(*bos);
    return ctx;
}

}  // namespace

std::vector<std::string> architectures() {
    std::vector<std::string> names;
    for (const ArchTable& t : arch_tables()) names.push_back(t.name);
    return names;
}

gguf::Writer build_random_model(const RandomModelConfig& config, const gguf::File& vocab, int threads) {
    // RWKV-7 has no attention: its own writer (rwkv7_model.h), not a table.
    if (config.arch == "rwkv7") return build_rwkv7_model(config, Rwkv7Sizes{}, vocab);
    const ArchTable* arch = find_arch_table(config.arch);
    if (!arch) {
        std::string list;
        for (const auto& n : architectures()) list += (list.empty() ? "" : ", ") + n;
        throw ConfigError("--arch '" + config.arch + "' is not known (known: " + list + ", rwkv7)");
    }
    const RandomModelConfig c = validated(config, *arch);
    const auto tokens = vocab.get_strings("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        throw ConfigError(vocab.path() + ": no tokenizer.ggml.tokens: not a vocabulary file (--vocab-from)");

    const Sizes sizes = sizes_of(c, vocab, tokens->size());
    gguf::Writer w;
    add_metadata(w, *arch, c, sizes, vocab);
    std::optional<PlantContext> plant;
    if (c.plant) plant = plant_context(c, vocab);
    add_tensors(w, *arch, c, sizes, plant ? &*plant : nullptr, threads);
    return w;
}

void write_random_model(const RandomModelConfig& config, const std::string& vocab_path, const std::string& out_path,
                        int threads) {
    auto vocab = gguf::File::open(vocab_path);
    build_random_model(config, *vocab, threads).write(out_path);
}

}  // namespace vkllm::random_model
