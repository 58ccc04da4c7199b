# SPDX-License-Identifier: Apache-2.0
# voxelizer/: overlap and closest point, surface voxels, corner field, whole build.
# Tests that can use the mesh importer reference vx_soup_import weakly and force it in with -u, so
# they link (and skip that part) while formats/ is incomplete.
set(VX_VOXELIZER_TEST_LIBS vx_voxelizer vx_formats Threads::Threads)
vx_add_test(test_voxelizer_overlap SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_overlap.c
            LIBS vx_voxelizer)
vx_add_test(test_voxelizer_surface SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_surface.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_surface PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_field SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_field.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_field PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_build SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_build.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_build PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_sign SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_sign.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_sign PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_ooc SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_ooc.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_ooc PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_color.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_color PRIVATE "LINKER:-u,vx_soup_import")
vx_add_test(test_voxelizer_ooc_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_ooc_color.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
# The pseudo-normal tables on all cores against a reference made by sorting, bit for bit.
vx_add_test(test_voxelizer_sign_tables
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_sign_tables.c
            LIBS ${VX_VOXELIZER_TEST_LIBS})
target_link_options(test_voxelizer_sign_tables PRIVATE "LINKER:-u,vx_soup_import")
