# SPDX-License-Identifier: Apache-2.0
# Distance queries: the CPU sampler against a brute-force reference (every triangle, double
# precision, exact winding number), and the CUDA sampler against the CPU one (label gpu).
vx_add_test(test_sample SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sample.c LIBS vx_lib)
if(VOXLOD_HAVE_CUDA)
  vx_add_test(test_gpu_sample SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_sample.cu LIBS vx_lib
              LABELS gpu)
  # The GPU's bits against the CPU's, the rule and the band cache, on a scan at 64^3 .. 2048^3.
  vx_add_test(test_gpu_sample_agree SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_sample_agree.cu
              LIBS vx_lib LABELS gpu)
endif()
# The CPU sampler's builds and thread counts bit for bit, and the band cache against the rule on a
# scan-like mesh with a thin part at several resolutions.
# heavy: two samplers and the band cache over 10^5-10^6 points of 256^3 scans (11 s, 10 minutes
# under the sanitizers); the sanitizer build skips it, test_sample runs the same code there
vx_add_test(test_sample_agree SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sample_agree.c LIBS vx_lib
            LABELS heavy)
# The voxels the thin-feature rule re-signed, found from the corner values, against a dense
# brute force on random trees of depth 1 to 7 and a smooth field.
vx_add_test(test_resigned SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_resigned.c LIBS vx_sampler)
# Tiled files sampled tile by tile: bit for bit the joined tree's results up to 16384^3 (every cut,
# points at the tiles' faces, any cache size), and against the exact distance at 32768^3.
vx_add_test(test_sample_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sample_tiled.c
            LIBS vx_lib)
# Colours at points on tiled files, tile by tile: byte for byte the joined tree's vx_tree_colors up
# to 16384^3 (every level, pruned and not, any cache size), a brute force over every cell at 32768^3.
vx_add_test(test_tiled_colors_at SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tiled_colors_at.c
            LIBS vx_lib PkgConfig::ZSTD)
