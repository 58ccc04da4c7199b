# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of the voxlod command line (tests/test_cli.sh).
add_test(NAME test_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_cli.sh $<TARGET_FILE:voxlod>
         ${VX_DATA_DIR})
set_tests_properties(test_cli PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
# Outputs that are not plain files, outputs equal to inputs, signals, FIFOs, bombs, values and
# messages (tests/test_cli_paths.sh).
add_test(NAME test_cli_paths COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_paths.sh
         $<TARGET_FILE:voxlod> ${VX_DATA_DIR})
set_tests_properties(test_cli_paths PROPERTIES TIMEOUT 600)
# --mem-limit against hostile inputs: duplicate and stacked triangles, upsampled and dense .vdb
# level sets, exports of a pruned depth-14 tree; peak RSS measured (tests/test_cli_limits.sh).
add_test(NAME test_cli_limits COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_limits.sh
         $<TARGET_FILE:voxlod>)
set_tests_properties(test_cli_limits PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
