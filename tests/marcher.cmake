# SPDX-License-Identifier: Apache-2.0
# marcher: per-ray traversal (trace.h), CPU renderer, LOD rendering.
vx_add_test(test_marcher_sphere SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_sphere.c
            LIBS vx_marcher)
vx_add_test(test_marcher_thin SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_thin.c
            LIBS vx_marcher)
vx_add_test(test_marcher_lod SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_lod.c
            LIBS vx_marcher)
# heavy: reference renders of meshes of up to 65k triangles; the sanitizer build skips it (the
# same code runs sanitized in the other marcher and voxelizer tests)
vx_add_test(test_marcher_mesh SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_mesh.c
            LIBS vx_marcher vx_voxelizer vx_formats LABELS heavy)
vx_add_test(test_marcher_cull SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_cull.c
            LIBS vx_marcher vx_voxelizer vx_formats)
vx_add_test(test_marcher_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_marcher_color.c
            LIBS vx_marcher)
# Tiled trees drawn tile by tile within a memory budget (vx_renderer_create_tiled): the joined
# tree's images at 256^3 in tiles of 64^3, eviction to coarse levels, streaming, and 32768^3
# against a brute-force ray cast of the mesh.
vx_add_test(test_render_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_render_tiled.c LIBS vx_lib)
