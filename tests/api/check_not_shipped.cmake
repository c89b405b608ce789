# The shipped engine holds no test oracle: the libraries behind vkllm::vkllm (LIBS, a list of
# archives) contain no symbol of the CPU reference forward (ReferenceForward, engine/reference),
# which tests and tools link from vkllm_reference instead.
#   cmake -DLIBS="a.a|b.a" -P check_not_shipped.cmake
string(REPLACE "|" ";" LIBS "${LIBS}")
if(NOT LIBS)
  message(FATAL_ERROR "check_not_shipped: LIBS is empty")
endif()
foreach(lib IN LISTS LIBS)
  if(NOT EXISTS "${lib}")
    message(FATAL_ERROR "check_not_shipped: ${lib} does not exist (build it first)")
  endif()
  file(STRINGS "${lib}" hits REGEX "ReferenceForward" LIMIT_COUNT 1)
  if(hits)
    message(FATAL_ERROR "check_not_shipped: ${lib} contains the CPU reference forward (ReferenceForward); "
                        "it belongs in vkllm_reference, which only tests and tools link")
  endif()
endforeach()
message(STATUS "check_not_shipped: no ReferenceForward in ${LIBS}")
