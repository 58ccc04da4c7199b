# SPDX-License-Identifier: Apache-2.0
# The layer rule, enforced: a file compiled in a layer's target that names a header of a layer it
# does not link fails to compile (cmake/VoxlodLayers.cmake). Each probe is a target outside `all`
# that a test builds: test_layers_up_* pass only when the compiler reports the missing header,
# test_layers_down (the control) only when its build, with the same machinery, succeeds. A grep
# checks that no source reaches another folder by a relative path ("../x/y.h"), which the
# include path cannot stop.
set(vx_layer_probes "sampler_marcher:vx_sampler:marcher/gpu_render\\.h"
                    "svo_sampler:vx_svo:sampler/sample_eval\\.h"
                    "sys_svo:vx_sys:svo/svo\\.h")
foreach(p ${vx_layer_probes})
  string(REPLACE ":" ";" p "${p}")
  list(GET p 0 name)
  list(GET p 1 layer)
  list(GET p 2 header)
  add_library(vx_layer_up_${name} OBJECT EXCLUDE_FROM_ALL
              ${CMAKE_CURRENT_SOURCE_DIR}/layers/up_${name}.c)
  target_link_libraries(vx_layer_up_${name} PRIVATE ${layer})
  add_test(NAME test_layers_up_${name}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target vx_layer_up_${name})
  # gcc: "x.h: No such file or directory"; clang: "'x.h' file not found"
  set_tests_properties(test_layers_up_${name} PROPERTIES LABELS layers RESOURCE_LOCK vx_build_tree
                       PASS_REGULAR_EXPRESSION "${header}'?:? (No such file or directory|file not found)")
endforeach()
add_library(vx_layer_down OBJECT EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/layers/down_sampler.c)
target_link_libraries(vx_layer_down PRIVATE vx_sampler)
add_test(NAME test_layers_down COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target vx_layer_down)
set_tests_properties(test_layers_down PROPERTIES LABELS layers RESOURCE_LOCK vx_build_tree)
add_test(NAME test_layers_relative
         COMMAND sh -c "! grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\\.\\./' sys svo voxelizer marcher formats sampler mesher lib tools viewer bench python/src"
         WORKING_DIRECTORY ${VOXLOD_ROOT})
set_tests_properties(test_layers_relative PROPERTIES LABELS layers)
