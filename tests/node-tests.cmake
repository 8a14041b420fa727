# The ONNX backend node tests of the installed onnx release (1,884 in onnx
# 1.23), written at configure time by scripts/gen_node_tests.py into
# <build>/onnx-node (onnx ships their generators, not their folders), and
# registered as one CTest case per operator, node/<Op>, running `dtrexec check`
# over that operator's folders. Folders listed in node-known-failures.txt are
# left out of their operator's case and checked by node/known-failures, which
# fails as soon as one of them passes (the list must stay honest) or names a
# test that does not exist.
set(NODE_TEST_ROOT ${CMAKE_BINARY_DIR}/onnx-node)
set(NODE_KNOWN_FILE ${CMAKE_CURRENT_SOURCE_DIR}/node-known-failures.txt)
set(NODE_GEN ${CMAKE_SOURCE_DIR}/scripts/gen_node_tests.py)

if(Python3_EXECUTABLE)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import onnx; print(onnx.__version__)"
                  OUTPUT_VARIABLE NODE_ONNX_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE NODE_ONNX_RC ERROR_QUIET)
endif()
if(NOT Python3_EXECUTABLE OR NOT NODE_ONNX_RC EQUAL 0)
  message(WARNING "python3 with onnx not found: the ONNX node tests are not registered")
  return()
endif()

# Regenerated when the onnx release or the generator changes.
file(SHA256 ${NODE_GEN} NODE_GEN_HASH)
set(NODE_STAMP "${NODE_ONNX_VERSION} ${NODE_GEN_HASH}")
set(NODE_STAMP_FILE ${NODE_TEST_ROOT}/STAMP)
set(NODE_OLD_STAMP "")
if(EXISTS ${NODE_STAMP_FILE})
  file(READ ${NODE_STAMP_FILE} NODE_OLD_STAMP)
endif()
if(NOT NODE_OLD_STAMP STREQUAL NODE_STAMP OR NOT EXISTS ${NODE_TEST_ROOT}/MANIFEST.tsv)
  message(STATUS "Writing the node tests of onnx ${NODE_ONNX_VERSION} to ${NODE_TEST_ROOT}")
  file(REMOVE_RECURSE ${NODE_TEST_ROOT})
  execute_process(COMMAND ${Python3_EXECUTABLE} ${NODE_GEN} -o ${NODE_TEST_ROOT}
                  RESULT_VARIABLE NODE_GEN_RC ERROR_VARIABLE NODE_GEN_ERR)
  if(NOT NODE_GEN_RC EQUAL 0)
    message(FATAL_ERROR "scripts/gen_node_tests.py failed: ${NODE_GEN_ERR}")
  endif()
  file(WRITE ${NODE_STAMP_FILE} "${NODE_STAMP}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${NODE_GEN} ${NODE_KNOWN_FILE})

file(STRINGS ${NODE_KNOWN_FILE} NODE_KNOWN_LINES REGEX "^test_")
set(NODE_SKIP "")
foreach(line ${NODE_KNOWN_LINES})
  string(REGEX MATCH "^[^ \t]+" name "${line}")
  list(APPEND NODE_SKIP ${name})
endforeach()

file(STRINGS ${NODE_TEST_ROOT}/MANIFEST.tsv NODE_ROWS REGEX "^test_")
set(NODE_GROUPS "")
foreach(row ${NODE_ROWS})
  string(REPLACE "\t" ";" fields "${row}")
  list(GET fields 0 name)
  list(GET fields 1 group)
  if(name IN_LIST NODE_SKIP)
    continue()
  endif()
  if(NOT DEFINED NODE_DIRS_${group})
    list(APPEND NODE_GROUPS ${group})
    set(NODE_DIRS_${group} "")
  endif()
  list(APPEND NODE_DIRS_${group} ${NODE_TEST_ROOT}/${name})
endforeach()

foreach(group ${NODE_GROUPS})
  add_test(NAME node/${group} COMMAND dtrexec check --quiet ${NODE_DIRS_${group}})
  set_tests_properties(node/${group} PROPERTIES LABELS node TIMEOUT 600)
endforeach()
add_test(NAME node/known-failures COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/node_known_check.py
         $<TARGET_FILE:dtrexec> ${NODE_TEST_ROOT} ${NODE_KNOWN_FILE})
set_tests_properties(node/known-failures PROPERTIES LABELS node TIMEOUT 900)
