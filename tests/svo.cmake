# SPDX-License-Identifier: Apache-2.0
vx_add_test(test_svo_build SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_svo_build.c)
vx_add_test(test_svo_lod SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_svo_lod.c)
vx_add_test(test_svo_text SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_svo_text.c)
vx_add_test(test_sys_sort SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sys_sort.c)
