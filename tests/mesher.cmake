# mesher: dual contouring at every cut (internal API), meshes through the public API and the
# command line (bad inputs, files).
vx_add_test(test_mesher SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher.c
            LIBS vx_voxelizer vx_formats)
vx_add_test(test_mesher_bound SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher_bound.c
            LIBS vx_voxelizer vx_formats)
vx_add_api_test(test_mesher_api)
vx_add_api_test(test_mesher_alloc)
add_test(NAME test_mesher_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_mesher_cli.sh
         $<TARGET_FILE:voxlod> ${VX_DATA_DIR})
set_tests_properties(test_mesher_cli PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
