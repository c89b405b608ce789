# The api_tsan test: builds api_test_threads (tests/api/test_threads.cpp and the engine under
# it) with ThreadSanitizer in a build directory of its own, then runs it. A data race, a lock
# order inversion or a failed assertion fails the test. ccache makes rebuilds cheap.
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DGENERATOR=... -DCXX=... -DSUPPRESSIONS=... -P tsan.cmake
foreach(var SOURCE_DIR BUILD_DIR GENERATOR CXX SUPPRESSIONS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tsan.cmake needs -D${var}=...")
  endif()
endforeach()

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -G ${GENERATOR}
                        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=${CXX} -DVKLLM_SANITIZE=thread
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the ThreadSanitizer build in ${BUILD_DIR} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target api_test_threads RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building api_test_threads with ThreadSanitizer failed (${rc})")
endif()

set(ENV{TSAN_OPTIONS} "halt_on_error=1 second_deadlock_stack=1 suppressions=${SUPPRESSIONS}")
# Without the Khronos validation layer: it is not built with ThreadSanitizer, and its own worker
# threads race inside it (frees and rwlocks TSan sees only partly), which says nothing about
# vkllm. The same test runs with the layer in the ordinary build (api_test_threads).
set(ENV{VKLLM_VALIDATE} 0)
execute_process(COMMAND ${BUILD_DIR}/tests/api_test_threads RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "api_test_threads under ThreadSanitizer failed (${rc}); its report is above")
endif()
