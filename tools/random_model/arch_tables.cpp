#include "random_model/arch_tables.h"

#include "random_model/arch_table_families.h"

namespace vkllm::random_model {
namespace {

// Every family, in the order architectures() lists them.
std::vector<ArchTable> make_tables() {
    return {
        llama_table(),
        qwen2_table(),
        qwen3_table(),
        gemma2_table(),
        gemma3_table(),
        gpt2_table(),
        bert_table(),
        olmo2_table(),
        phi3_table(),
        smollm3_table(),
        exaone_table(),
        mamba2_table(),
        mamba_table(),
        jamba_table(),
        nemotron_h_table(),
        falcon_h1_table(),
        lfm2_table(),
        qwen35_table(),
        qwen35_moe_table("qwen35moe"),
        qwen35_moe_table("qwen3next"),
        granitehybrid_table(),
        qwen3moe_table(),
        olmoe_table(),
        gpt_oss_table(),
        llama4_table(),
        deepseek2_table(),
        falcon_table(),
        jais_table(),
    };
}

}  // namespace

bool ArchTable::has_presence(Presence p) const {
    for (const auto* list : {&globals, &per_layer})
        for (const TensorRule& r : *list)
            if (r.presence == p) return true;
    return false;
}

bool ArchTable::has_dim(Dim d) const {
    for (const auto* list : {&globals, &per_layer})
        for (const TensorRule& r : *list)
            for (Dim x : r.dims)
                if (x == d) return true;
    return false;
}

const std::vector<ArchTable>& arch_tables() {
    static const std::vector<ArchTable> tables = make_tables();
    return tables;
}

const ArchTable* find_arch_table(const std::string& arch) {
    for (const ArchTable& t : arch_tables())
        if (t.name == arch) return &t;
    return nullptr;
}

}  // namespace vkllm::random_model
