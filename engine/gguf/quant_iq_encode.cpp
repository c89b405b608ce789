// Which encoder writes each i-quant and ternary type.
#include "gguf/quant_iq_encode.h"

#include "gguf/quant_blocks.h"

namespace vkllm::gguf {

BlockEncoder iquant_block_encoder(TensorType t) {
    switch (t) {
        case TensorType::IQ4_NL: return encode_iq4_nl;
        case TensorType::IQ4_XS: return encode_iq4_xs;
        case TensorType::IQ2_XXS: return encode_iq2_xxs;
        case TensorType::IQ2_XS: return encode_iq2_xs;
        case TensorType::IQ2_S: return encode_iq2_s;
        case TensorType::IQ3_XXS: return encode_iq3_xxs;
        case TensorType::IQ3_S: return encode_iq3_s;
        case TensorType::IQ1_S: return encode_iq1_s;
        case TensorType::IQ1_M: return encode_iq1_m;
        case TensorType::TQ1_0: return encode_tq1_0;
        case TensorType::TQ2_0: return encode_tq2_0;
        default: return nullptr;
    }
}

}  // namespace vkllm::gguf
