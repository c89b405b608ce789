# The API boundary: every source under APP_DIR (app/) may include, with quotes, only the public
# engine headers ("vkllm/NAME.h") and headers that live in app/ itself (the path found from the
# including file's folder or from any folder under app/, and still inside app/ once ".." is
# resolved); system and third-party headers use <...>.
# Anything else ("gguf/gguf.h", "model/spec.h", "../../engine/...") fails the test, naming
# the file, the line and the include.
#   cmake -DAPP_DIR=/path/to/app -P check_app_includes.cmake
if(NOT APP_DIR OR NOT IS_DIRECTORY "${APP_DIR}")
  message(FATAL_ERROR "check_app_includes: APP_DIR ('${APP_DIR}') is not a folder")
endif()
get_filename_component(app "${APP_DIR}" REALPATH)

file(GLOB_RECURSE sources LIST_DIRECTORIES false
     "${app}/*.cpp" "${app}/*.cc" "${app}/*.c" "${app}/*.h" "${app}/*.hpp" "${app}/*.inl")
list(LENGTH sources n_sources)
# The folders a quoted app header may be found from: app/ and every folder below it.
set(app_dirs "${app}")
foreach(src IN LISTS sources)
  get_filename_component(d "${src}" DIRECTORY)
  list(APPEND app_dirs "${d}")
endforeach()
list(REMOVE_DUPLICATES app_dirs)
if(n_sources EQUAL 0)
  message(FATAL_ERROR "check_app_includes: no sources under ${app}")
endif()

set(bad "")
foreach(src IN LISTS sources)
  get_filename_component(dir "${src}" DIRECTORY)
  file(STRINGS "${src}" lines)
  set(line_no 0)
  foreach(line IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      continue()
    endif()
    set(header "${CMAKE_MATCH_1}")
    if(header MATCHES "^vkllm/[A-Za-z0-9_]+\\.h$")
      continue()
    endif()
    # A header of the app itself.
    set(ok FALSE)
    foreach(base "${dir}" ${app_dirs})
      get_filename_component(found "${base}/${header}" REALPATH)
      string(FIND "${found}" "${app}/" at)
      if(EXISTS "${found}" AND at EQUAL 0)
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      file(RELATIVE_PATH rel "${app}" "${src}")
      string(APPEND bad "\n  app/${rel}:${line_no}: #include \"${header}\"")
    endif()
  endforeach()
endforeach()

if(bad)
  message(FATAL_ERROR "app/ may include with quotes only the public engine headers (vkllm/*.h) and "
                      "app/'s own headers; the engine's internal headers are off limits, and system or "
                      "third-party headers take <...>:${bad}")
endif()
message(STATUS "check_app_includes: ${n_sources} files under app/ include only vkllm/*.h, their own headers and <...>")
