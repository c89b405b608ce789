# Runs an example program and checks its exit status and output (CTest's own regular-expression
# check would ignore the exit status). -DEXE=... -DARGS=... -DEXPECT=<regex, matched against
# stdout> ; any Vulkan validation message on stderr fails it too.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match: ${EXPECT}")
endif()
if(err MATCHES "vkllm: validation")
  message(FATAL_ERROR "Vulkan validation messages")
endif()
