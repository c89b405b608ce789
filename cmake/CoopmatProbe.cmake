# Configure-time feature test for the tensor-core shader variants (shaders/variants_coopmat.cmake).
#
#   vkllm_probe_nv_coopmat(<result-var>)
#
# Compiles cmake/probes/nv_coopmat.comp with the build's glslc and validates it with spirv-val,
# as cmake/Shaders.cmake builds every variant. Sets <result-var> to TRUE when both succeed;
# otherwise FALSE, and prints why (the tool's first lines), so a build with an older or newer
# toolchain leaves the variants out instead of failing. -DVKLLM_NV_COOPMAT=OFF leaves them out
# on purpose (to check a build without them).
option(VKLLM_NV_COOPMAT "Build the GL_NV_cooperative_matrix (tensor core) shader variants where glslc can" ON)

function(vkllm_probe_nv_coopmat result)
  set(${result} FALSE PARENT_SCOPE)
  if(NOT VKLLM_NV_COOPMAT)
    message(STATUS "vkllm: cooperative-matrix variants left out: VKLLM_NV_COOPMAT=OFF")
    return()
  endif()
  set(src ${CMAKE_SOURCE_DIR}/cmake/probes/nv_coopmat.comp)
  set(spv ${CMAKE_BINARY_DIR}/probes/nv_coopmat.spv)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/probes)
  execute_process(COMMAND ${GLSLC_EXECUTABLE} --target-env=vulkan1.2 -O -o ${spv} ${src}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(step "glslc (${GLSLC_EXECUTABLE})")
  if(rc EQUAL 0)
    execute_process(COMMAND ${SPIRV_VAL_EXECUTABLE} --target-env vulkan1.2 ${spv}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    set(step "spirv-val (${SPIRV_VAL_EXECUTABLE})")
  endif()
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "\n.*" "" first_line "${err}${out}")
    message(STATUS "vkllm: cooperative-matrix variants (matmul_coopmat_*, moe_matmul_coopmat_*) left out: ${step} cannot build "
                   "GL_NV_cooperative_matrix: ${first_line}")
    return()
  endif()
  message(STATUS "vkllm: cooperative-matrix variants (matmul_coopmat_*, moe_matmul_coopmat_*) built: glslc compiles GL_NV_cooperative_matrix")
  set(${result} TRUE PARENT_SCOPE)
endfunction()
