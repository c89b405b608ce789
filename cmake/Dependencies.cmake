# Finds what vkllm builds against; each failure names the Debian package to install
# (scripts/install-deps.sh installs them all).
macro(vkllm_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "vkllm: ${what} not found. Install the Debian package '${package}' "
                        "(or run: sudo scripts/install-deps.sh)")
  endif()
endmacro()

find_package(Vulkan QUIET)
vkllm_require(Vulkan_FOUND "Vulkan headers and loader" libvulkan-dev)

find_program(GLSLC_EXECUTABLE glslc)
vkllm_require(GLSLC_EXECUTABLE "glslc (GLSL to SPIR-V compiler)" glslc)
find_program(SPIRV_VAL_EXECUTABLE spirv-val)
vkllm_require(SPIRV_VAL_EXECUTABLE "spirv-val (SPIR-V validator)" spirv-tools)

find_package(Threads REQUIRED)

if(VKLLM_BUILD_TESTS)
  find_package(GTest QUIET)
  vkllm_require(GTest_FOUND "GoogleTest" libgtest-dev)
endif()
