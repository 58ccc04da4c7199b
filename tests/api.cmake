# The public library: its API as a C caller uses it (public header only), allocation failures
# through the allocator hook, and the installed package (examples through find_package and
# pkg-config, exported symbols, C++, add_subdirectory).
function(vx_add_api_test name)
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.c)
  target_link_libraries(${name} PRIVATE voxlod::voxlod ${M_LIB})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE VX_SHARED_MESHES="${VX_SHARED_MESHES}"
                             VX_DATA_DIR="${VX_DATA_DIR}")
  set_target_properties(${name} PROPERTIES BUILD_RPATH "$ORIGIN/../lib")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endfunction()
vx_add_api_test(test_api)
vx_add_api_test(test_api_alloc)
add_test(NAME test_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_install.sh ${CMAKE_BINARY_DIR}
         ${VOXLOD_ROOT} ${VX_DATA_DIR})
set_tests_properties(test_install PROPERTIES TIMEOUT 900 LABELS install)
