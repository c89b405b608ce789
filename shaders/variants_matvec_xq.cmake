# Activations quantized once per input for the decode matvecs that read it (quantize_act.comp:
# llama.cpp's 8-bit activation blocks of 32 or 256, with or without decode's RMSNorm folded in;
# _sg reduces the norm's sum with subgroup arithmetic, as norm.comp's _sg twin does).
vkllm_shader(quantize_act_q8_32     quantize_act.comp BLOCK=32)
vkllm_shader(quantize_act_q8_32_sg  quantize_act.comp BLOCK=32 USE_SUBGROUP)
vkllm_shader(quantize_act_q8_256    quantize_act.comp BLOCK=256)
vkllm_shader(quantize_act_q8_256_sg quantize_act.comp BLOCK=256 USE_SUBGROUP)

# The decode matvecs (matvec.comp and the experts' moe_matvec.comp, plain and GLU) reading that
# quantized x (XQ): <op>_<type>_xq for the types whose dot reads each x value once, and
# <op>_<type>_idot_xq dotting the quants in int8 for the types with an integer dot (Q8_0,
# Q4_0/1, Q5_0/1, Q2_K..Q6_K).
foreach(wtype q8_0 q4_0 q4_1 q5_0 q5_1 mxfp4 iq4_nl q2_k q3_k q4_k q5_k q6_k iq4_xs)
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(matvec_${wtype}_xq           matvec.comp WTYPE_${WTYPE} XQ)
  vkllm_shader(matvec_${wtype}_xq_sg        matvec.comp WTYPE_${WTYPE} XQ USE_SUBGROUP)
  vkllm_shader(matvec_swiglu_${wtype}_xq    matvec.comp WTYPE_${WTYPE} XQ GLU)
  vkllm_shader(matvec_swiglu_${wtype}_xq_sg matvec.comp WTYPE_${WTYPE} XQ GLU USE_SUBGROUP)
  vkllm_shader(moe_matvec_${wtype}_xq           moe_matvec.comp WTYPE_${WTYPE} XQ)
  vkllm_shader(moe_matvec_${wtype}_xq_sg        moe_matvec.comp WTYPE_${WTYPE} XQ USE_SUBGROUP)
  vkllm_shader(moe_matvec_swiglu_${wtype}_xq    moe_matvec.comp WTYPE_${WTYPE} XQ GLU)
  vkllm_shader(moe_matvec_swiglu_${wtype}_xq_sg moe_matvec.comp WTYPE_${WTYPE} XQ GLU USE_SUBGROUP)
endforeach()
# The int8 dot: the blocks of 32 against x's blocks of 32, and the K-quants against x's blocks of
# 256 (block_q8_K's quants and 16-element sums).
foreach(wtype q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k)
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(matvec_${wtype}_idot_xq           matvec.comp WTYPE_${WTYPE} INT_DOT XQ)
  vkllm_shader(matvec_${wtype}_idot_xq_sg        matvec.comp WTYPE_${WTYPE} INT_DOT XQ USE_SUBGROUP)
  vkllm_shader(matvec_swiglu_${wtype}_idot_xq    matvec.comp WTYPE_${WTYPE} INT_DOT XQ GLU)
  vkllm_shader(matvec_swiglu_${wtype}_idot_xq_sg matvec.comp WTYPE_${WTYPE} INT_DOT XQ GLU USE_SUBGROUP)
  vkllm_shader(moe_matvec_${wtype}_idot_xq           moe_matvec.comp WTYPE_${WTYPE} INT_DOT XQ)
  vkllm_shader(moe_matvec_${wtype}_idot_xq_sg        moe_matvec.comp WTYPE_${WTYPE} INT_DOT XQ USE_SUBGROUP)
  vkllm_shader(moe_matvec_swiglu_${wtype}_idot_xq    moe_matvec.comp WTYPE_${WTYPE} INT_DOT XQ GLU)
  vkllm_shader(moe_matvec_swiglu_${wtype}_idot_xq_sg moe_matvec.comp WTYPE_${WTYPE} INT_DOT XQ GLU USE_SUBGROUP)
endforeach()
