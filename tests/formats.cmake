# SPDX-License-Identifier: Apache-2.0
vx_add_test(test_formats_svo SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_svo.c
            LIBS vx_formats PkgConfig::ZSTD Threads::Threads)
vx_add_test(test_formats_mesh SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_mesh.c LIBS vx_formats)
vx_add_test(test_formats_png SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_png.c LIBS vx_formats)
target_include_directories(test_formats_png PRIVATE ${STB_INCLUDE_DIR})
vx_add_test(test_formats_import_limits
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_import_limits.c LIBS vx_formats)
vx_add_test(test_formats_svo_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_svo_color.c
            LIBS vx_formats PkgConfig::ZSTD Threads::Threads)
target_compile_definitions(test_formats_svo_color PRIVATE
                           VX_SVO_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/corpus/svo")
vx_add_test(test_formats_color_import
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_color_import.c LIBS vx_lib)
target_include_directories(test_formats_color_import PRIVATE ${STB_INCLUDE_DIR})
vx_add_test(test_formats_color_tables
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_color_tables.c LIBS vx_lib)
target_include_directories(test_formats_color_tables PRIVATE ${STB_INCLUDE_DIR})
target_compile_definitions(test_formats_color_tables PRIVATE
                           VX_TEXTURE_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/corpus/texture"
                           VX_TEXTURE_REFS="${CMAKE_CURRENT_SOURCE_DIR}/data/textures")
vx_add_test(test_formats_tri_stream
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_tri_stream.c LIBS vx_formats)
# Tiled trees: built, joined and compared with the untiled build; damaged and forged directories.
vx_add_test(test_formats_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_tiled.c
            LIBS vx_lib PkgConfig::ZSTD Threads::Threads)
# Coloured tiled trees: joined, the untiled coloured build; colours from above; damage.
vx_add_test(test_tiled_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tiled_color.c
            LIBS vx_lib PkgConfig::ZSTD Threads::Threads)
# One level of a tiled tree tile by tile (cut, export, level tree): the joined tree's, bit for
# bit, up to 16384^3; past it (32768^3) against the exact distance to the mesh.
vx_add_test(test_tiled_levels SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tiled_levels.c
            LIBS vx_lib Threads::Threads)
# Pruned tiled trees: the untiled tree pruned below the tiles' roots, tile by tile as joined.
vx_add_test(test_tiled_pruned SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tiled_pruned.c
            LIBS vx_lib Threads::Threads)
# A binary STL/PLY split by tile without holding it, against the mesh loaded and converted.
vx_add_test(test_convert_split SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_convert_split.c
            LIBS vx_lib Threads::Threads)
# The tiled build as tasks (plans, tiles by index, records, the merge) against the whole build.
vx_add_test(test_tile_tasks SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tile_tasks.c
            LIBS vx_lib Threads::Threads)
# The point files of `voxlod sample`: .npy assembled byte by byte, text, refusals, values out.
vx_add_test(test_formats_point_file
            SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_formats_point_file.c LIBS vx_formats)
# A cut's grid points, made block by block on all cores, against a dense grid made point by point.
vx_add_test(test_grid_points SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_grid_points.c LIBS vx_formats)
