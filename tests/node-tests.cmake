# One CTest case per ONNX backend node-test folder, run through
# `dtrexec check`, so that a failure names its operator. Folders listed in
# node-known-failures.txt are registered but disabled, with their reason.
set(NODE_TEST_ROOT ${DTRX_SHARED_DATA}/onnx-node)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/node-known-failures.txt NODE_KNOWN_FAILURES REGEX "^test_")
set(NODE_SKIP "")
foreach(line ${NODE_KNOWN_FAILURES})
  string(REGEX MATCH "^[^ \t]+" name "${line}")
  list(APPEND NODE_SKIP ${name})
endforeach()

if(EXISTS ${NODE_TEST_ROOT})
  file(GLOB NODE_TEST_DIRS LIST_DIRECTORIES true ${NODE_TEST_ROOT}/test_*)
  foreach(dir ${NODE_TEST_DIRS})
    get_filename_component(name ${dir} NAME)
    add_test(NAME node/${name} COMMAND dtrexec check --quiet ${dir})
    set_tests_properties(node/${name} PROPERTIES LABELS node TIMEOUT 120)
    if(name IN_LIST NODE_SKIP)
      set_tests_properties(node/${name} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
else()
  message(WARNING "ONNX node tests not found at ${NODE_TEST_ROOT}; conformance cases not registered")
endif()
