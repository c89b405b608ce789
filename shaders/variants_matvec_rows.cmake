# The matrix-vector product over a few rows of x (shaders/matvec_rows.comp: a batched decode
# pass's 2-8 tokens, each weight decoded once for all of them), one variant per weight type as
# the other weight ops (matvec_rows_<type>, _sg reducing with subgroupAdd), the grid i-quants
# included (VKLLM_GRID_WEIGHT_TYPES, from variants_iquant.cmake, read before this file).
foreach(wtype ${VKLLM_WEIGHT_TYPES} ${VKLLM_GRID_WEIGHT_TYPES})
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(matvec_rows_${wtype}    matvec_rows.comp WTYPE_${WTYPE})
  vkllm_shader(matvec_rows_${wtype}_sg matvec_rows.comp WTYPE_${WTYPE} USE_SUBGROUP)
endforeach()
