# SPDX-License-Identifier: Apache-2.0
# mesher: dual contouring at every cut (internal API), meshes through the public API and the
# command line (bad inputs, files).
vx_add_test(test_mesher SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher.c
            LIBS vx_mesher vx_voxelizer vx_formats)
# heavy: exact distances between meshes of scanned bunnies; the sanitizer build skips it (the
# error cut itself runs sanitized in test_mesher)
vx_add_test(test_mesher_bound SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher_bound.c
            LIBS vx_mesher vx_voxelizer vx_formats LABELS heavy)
vx_add_api_test(test_mesher_api)
vx_add_api_test(test_mesher_alloc)
add_test(NAME test_mesher_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher_cli.sh
         $<TARGET_FILE:voxlod> ${VX_DATA_DIR})
set_tests_properties(test_mesher_cli PROPERTIES TIMEOUT 300)
# A helper that rewrites a .svo file's transform or band with valid checksums (trees the converter
# never writes), and the commands on such trees.
add_executable(svo_edit ${CMAKE_CURRENT_SOURCE_DIR}/svo_edit.c)
target_link_libraries(svo_edit PRIVATE PkgConfig::ZSTD)
if(VOXLOD_TOOLS)
  add_test(NAME test_cli_transform COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_transform.sh
           $<TARGET_FILE:voxlod> $<TARGET_FILE:svo_edit> ${VX_DATA_DIR})
  set_tests_properties(test_cli_transform PROPERTIES TIMEOUT 300)
endif()
# Tiled files meshed window by window at full detail: the joined tree's mesh triangle for triangle
# up to 16384^3 (grey and coloured), watertight and on the surface at 32768^3.
vx_add_test(test_mesher_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher_tiled.c LIBS vx_lib)
set_tests_properties(test_mesher_tiled PROPERTIES TIMEOUT 900)
# windows that keep only their middles (1024^3 in tiles of 128^3): heavy, not run sanitized
add_test(NAME test_mesher_tiled_middles COMMAND test_mesher_tiled tiles_of_128)
set_tests_properties(test_mesher_tiled_middles PROPERTIES TIMEOUT 900 LABELS heavy)
