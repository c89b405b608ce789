// The grid i-quants IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S (dequant_iq_grid.glsl:
// codebook points read from a grid binding) in every GPU path against the CPU reference
// (iquant_op_checks.h). Each type's decoder runs in get_rows, the decode matvec and the tiled
// matmul; the variants that wrap the same decoder (fused SwiGLU, experts, the larger tile) run on
// one type.
#include "iquant_op_checks.h"

namespace vkllm::test::iquant {
namespace {

const IquantType kTypes[] = {
    {gguf::TensorType::IQ1_S, 0, false},   {gguf::TensorType::IQ1_M, kIq1mScale, false}, {gguf::TensorType::IQ2_XXS, 0, false},
    {gguf::TensorType::IQ2_XS, 0, true},   {gguf::TensorType::IQ2_S, 0, false},          {gguf::TensorType::IQ3_XXS, 0, false},
    {gguf::TensorType::IQ3_S, 0, false},
};

INSTANTIATE_TEST_SUITE_P(Types, IquantOps, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<IquantType>& info) { return name_of(info.param.type); });

}  // namespace
}  // namespace vkllm::test::iquant
