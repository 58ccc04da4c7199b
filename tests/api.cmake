# SPDX-License-Identifier: Apache-2.0
# The public library: its API as a C caller uses it (public header only), allocation failures
# through the allocator hook, and the installed package (examples through find_package and
# pkg-config, exported symbols, C++, add_subdirectory).
function(vx_add_api_test name)
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.c)
  target_link_libraries(${name} PRIVATE voxlod::voxlod ${M_LIB})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE VX_TEST_MESHES="${VX_TEST_MESHES}"
                             VX_DATA_DIR="${VX_DATA_DIR}")
  set_target_properties(${name} PROPERTIES BUILD_RPATH "$ORIGIN/../lib")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endfunction()
vx_add_api_test(test_api)
vx_add_api_test(test_api_alloc)
# Coloured trees: their files are made by tests/svo_spec.h (zstd), the rest is the public API.
vx_add_api_test(test_api_color)
target_link_libraries(test_api_color PRIVATE PkgConfig::ZSTD)
add_test(NAME test_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_install.sh ${CMAKE_BINARY_DIR}
         ${VOXLOD_ROOT} ${VX_DATA_DIR})
set_tests_properties(test_install PROPERTIES TIMEOUT 900 LABELS install)

# A caller compiled against the first published headers (tests/abi/v0_1: 0.1's include/, copied
# unchanged), linked to this library: struct_size 0 and the 0.1 sizes, each struct before a guard
# page. Its own include directory comes before the library's (target properties first).
add_executable(test_abi_v0_1 ${CMAKE_CURRENT_SOURCE_DIR}/abi/test_abi_v0_1.c)
target_include_directories(test_abi_v0_1 BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/abi/v0_1
                                                         ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_abi_v0_1 PRIVATE voxlod::voxlod ${M_LIB})
target_compile_definitions(test_abi_v0_1 PRIVATE VX_TEST_MESHES="${VX_TEST_MESHES}"
                           VX_DATA_DIR="${VX_DATA_DIR}")
set_target_properties(test_abi_v0_1 PROPERTIES BUILD_RPATH "$ORIGIN/../lib")
add_test(NAME test_abi_v0_1 COMMAND test_abi_v0_1)
set_tests_properties(test_abi_v0_1 PROPERTIES TIMEOUT 300)

# The experimental section is declared only with VOXLOD_EXPERIMENTAL: the same caller compiles
# with it and fails to compile without it.
foreach(with IN ITEMS ON OFF)
  set(vx_exp_flags -std=c11 -fsyntax-only -Werror -I${VOXLOD_ROOT}/include)
  if(with)
    list(APPEND vx_exp_flags -DVOXLOD_EXPERIMENTAL)
  endif()
  add_test(NAME test_api_experimental_${with}
           COMMAND ${CMAKE_C_COMPILER} ${vx_exp_flags} ${CMAKE_CURRENT_SOURCE_DIR}/abi/experimental_call.c)
  if(NOT with)
    set_tests_properties(test_api_experimental_${with} PROPERTIES WILL_FAIL TRUE)
  endif()
endforeach()
