// One function per family, each returning its ArchTable: the tables are written in
// arch_tables_<kind>.cpp, grouped by kind of architecture, and listed in order by arch_tables.cpp.
#pragma once

#include <string>

#include "random_model/arch_tables.h"

namespace vkllm::random_model {

// arch_tables_llama.cpp: the Llama layout and its variants.
ArchTable llama_table();
ArchTable qwen2_table();
ArchTable qwen3_table();
ArchTable olmo2_table();
ArchTable phi3_table();
ArchTable smollm3_table();
ArchTable exaone_table();

// arch_tables_gemma.cpp
ArchTable gemma2_table();
ArchTable gemma3_table();

// arch_tables_layernorm.cpp
ArchTable gpt2_table();
ArchTable bert_table();
ArchTable falcon_table();
ArchTable jais_table();

// arch_tables_ssm.cpp: state-space families and hybrids.
ArchTable mamba2_table();
ArchTable mamba_table();
ArchTable jamba_table();
ArchTable nemotron_h_table();
ArchTable falcon_h1_table();
ArchTable lfm2_table();
ArchTable granitehybrid_table();

// arch_tables_deltanet.cpp: qwen35, and its MoE forms named "qwen35moe" or "qwen3next".
ArchTable qwen35_table();
ArchTable qwen35_moe_table(const std::string& name);

// arch_tables_moe.cpp
ArchTable qwen3moe_table();
ArchTable olmoe_table();
ArchTable gpt_oss_table();
ArchTable llama4_table();
ArchTable deepseek2_table();

}  // namespace vkllm::random_model
