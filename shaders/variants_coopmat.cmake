# --- Tensor-core matmuls for prompts: the COOPMAT kernels of shaders/matmul.comp and
# shaders/moe_matmul.comp (GL_NV_cooperative_matrix, fp16 tiles dequantized from any weight type,
# fp32 accumulation), one variant per weight type, named matmul_coopmat_<type> and
# moe_matmul_coopmat_<type>. Built only where glslc can compile the extension (the probe in
# cmake/CoopmatProbe.cmake says which and why); the engine looks the variants up by name
# (ops/matmul_tiles.cpp), so a build without them keeps the scalar kernels on every device.
include(${CMAKE_SOURCE_DIR}/cmake/CoopmatProbe.cmake)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/cmake/CoopmatProbe.cmake ${CMAKE_SOURCE_DIR}/cmake/probes/nv_coopmat.comp)
vkllm_probe_nv_coopmat(vkllm_have_nv_coopmat)
if(vkllm_have_nv_coopmat)
  foreach(wtype ${VKLLM_WEIGHT_TYPES})
    string(TOUPPER ${wtype} WTYPE)
    vkllm_shader(matmul_coopmat_${wtype}     matmul.comp     WTYPE_${WTYPE} COOPMAT)
    vkllm_shader(moe_matmul_coopmat_${wtype} moe_matmul.comp WTYPE_${WTYPE} COOPMAT)
  endforeach()
endif()
