# The grid i-quants (shaders/include/dequant_iq_grid.glsl): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
# IQ3_XXS, IQ3_S in every weight op, named as the weight types of variants.cmake are
# (<op>_<type>[_sg]). Each variant reads its type's grid from one binding more than the op's
# other variants (IQ_GRID_BINDING), which the ops add for these types alone (weights::Format::grid).
set(VKLLM_GRID_WEIGHT_TYPES iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s)
foreach(wtype ${VKLLM_GRID_WEIGHT_TYPES})
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(matvec_${wtype}    matvec.comp   WTYPE_${WTYPE})
  vkllm_shader(matvec_${wtype}_sg matvec.comp   WTYPE_${WTYPE} USE_SUBGROUP)
  vkllm_shader(matvec_swiglu_${wtype}    matvec.comp WTYPE_${WTYPE} GLU)
  vkllm_shader(matvec_swiglu_${wtype}_sg matvec.comp WTYPE_${WTYPE} GLU USE_SUBGROUP)
  vkllm_shader(matmul_${wtype}    matmul.comp   WTYPE_${WTYPE})
  vkllm_shader(get_rows_${wtype}  get_rows.comp WTYPE_${WTYPE})
  vkllm_shader(moe_matvec_${wtype}    moe_matvec.comp WTYPE_${WTYPE})
  vkllm_shader(moe_matvec_${wtype}_sg moe_matvec.comp WTYPE_${WTYPE} USE_SUBGROUP)
  vkllm_shader(moe_matvec_swiglu_${wtype}    moe_matvec.comp WTYPE_${WTYPE} GLU)
  vkllm_shader(moe_matvec_swiglu_${wtype}_sg moe_matvec.comp WTYPE_${WTYPE} GLU USE_SUBGROUP)
  vkllm_shader(moe_matmul_${wtype}    moe_matmul.comp WTYPE_${WTYPE})
endforeach()
