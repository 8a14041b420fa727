# Finite-difference gradient checks: one CTest case per family table in
# tests/grad/cases_*.py, each running `dtrexec gradcheck` on its models.
find_package(Python3 COMPONENTS Interpreter)
file(GLOB GRAD_CASE_TABLES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/grad/cases_*.py)
foreach(table ${GRAD_CASE_TABLES})
  get_filename_component(name ${table} NAME_WE)
  string(REPLACE "cases_" "" family ${name})
  add_test(NAME grad/${family}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/grad/run.py $<TARGET_FILE:dtrexec> ${family})
  set_tests_properties(grad/${family} PROPERTIES LABELS grad TIMEOUT 900)
endforeach()
