// IQ4_NL, IQ4_XS (the non-linear 4-bit table; dequant_iq4.glsl, with its own quantized-domain
// matvec dot) and the ternary TQ1_0, TQ2_0 (dequant_tq.glsl) in every GPU path against the CPU
// reference (iquant_op_checks.h).
#include "iquant_op_checks.h"

namespace vkllm::test::iquant {
namespace {

const IquantType kTypes[] = {
    {gguf::TensorType::IQ4_NL, 0, false},
    {gguf::TensorType::IQ4_XS, 0, true},
    {gguf::TensorType::TQ1_0, 52, true},
    {gguf::TensorType::TQ2_0, 64, false},
};

INSTANTIATE_TEST_SUITE_P(Types, IquantOps, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<IquantType>& info) { return name_of(info.param.type); });

}  // namespace
}  // namespace vkllm::test::iquant
