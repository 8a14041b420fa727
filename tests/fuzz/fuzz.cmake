# Fuzz harnesses (tests/fuzz/, README.md there): each replays its committed
# corpus (tests/fuzz/corpus/<harness>/) and then runs DTRX_FUZZ_RUNS seeded
# mutations of it (default 10000 in a sanitized tree, where a finding
# aborts with its report, 2000 elsewhere: a fixed count, so that a run is
# reproducible). With DTRX_FUZZ=ON (clang) they are libFuzzer binaries
# instead, for campaigns; CTest then runs each for that many inputs.
if(DTRX_SANITIZE)
  set(DTRX_FUZZ_DEFAULT_RUNS 10000)
else()
  set(DTRX_FUZZ_DEFAULT_RUNS 2000)
endif()
set(DTRX_FUZZ_RUNS ${DTRX_FUZZ_DEFAULT_RUNS} CACHE STRING "mutations per fuzz harness in CTest")
set(DTRX_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
foreach(h model tensor graph options image)
  set(src ${DTRX_FUZZ_DIR}/fuzz_${h}.c)
  if(h STREQUAL "options")
    list(APPEND src ${CMAKE_SOURCE_DIR}/cli/options.c)
  endif()
  if(DTRX_FUZZ)
    add_executable(fuzz_${h} ${src})
    target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
    add_test(NAME fuzz/${h} COMMAND fuzz_${h} -runs=${DTRX_FUZZ_RUNS} -timeout=20
             -rss_limit_mb=4096 ${DTRX_FUZZ_DIR}/corpus/${h})
  else()
    add_executable(fuzz_${h} ${src} ${DTRX_FUZZ_DIR}/replay.c)
    add_test(NAME fuzz/${h} COMMAND fuzz_${h} --runs ${DTRX_FUZZ_RUNS} ${DTRX_FUZZ_DIR}/corpus/${h})
  endif()
  target_link_libraries(fuzz_${h} PRIVATE dtrx_sim dtrexec_static)
  target_compile_definitions(fuzz_${h} PRIVATE _GNU_SOURCE)
  set_tests_properties(fuzz/${h} PROPERTIES LABELS fuzz TIMEOUT 600)
endforeach()
