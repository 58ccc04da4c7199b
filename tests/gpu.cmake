# SPDX-License-Identifier: Apache-2.0
# GPU tests: label `gpu`, exit 77 (skipped) where no CUDA device is usable, so CI passes them.
if(VOXLOD_HAVE_CUDA)
  vx_add_test(test_gpu_render SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_render.c
              LIBS vx_marcher LABELS gpu)
  if(TARGET vx_nanovdb_compare)
    vx_add_test(test_gpu_nanovdb SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_nanovdb.cu
                LIBS vx_nanovdb_compare vx_marcher LABELS gpu)
  endif()
  # Compile-time checks of the kernel's code (need nvcc only, no GPU): node fetches are 128-bit
  # read-only loads and ptxas reports no spills, on sm_90 (the architecture it is tuned on).
  add_test(NAME test_gpu_ptx COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
           -DSRC=${VOXLOD_ROOT}/marcher/render_gpu.cu -DINC=${VOXLOD_ROOT} -DARCH=90
           -DOUT=${CMAKE_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu_ptx_check.cmake)
  set_tests_properties(test_gpu_ptx PROPERTIES LABELS ptx)
  # Every .cu file compiles for the oldest architecture of the default fat binary (a build for
  # fewer architectures, as CI's, would not notice code that needs a newer GPU).
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/ptx_oldest)
  add_test(NAME test_gpu_oldest_arch COMMAND ${CMAKE_COMMAND} -DMODE=all
           -DNVCC=${CMAKE_CUDA_COMPILER} -DINC=${VOXLOD_ROOT} -DARCH=${VOXLOD_CUDA_MIN_ARCH}
           "-DEXTRA_INC=${NANOVDB_INCLUDE_DIR}" -DOUT=${CMAKE_BINARY_DIR}/ptx_oldest
           -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu_ptx_check.cmake)
  set_tests_properties(test_gpu_oldest_arch PROPERTIES LABELS ptx)
  # The check that the GPU can run this build's code, against a direct launch, and the library's
  # device choice that follows it (runs without a GPU too).
  vx_add_test(test_gpu_probe SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_probe.cu LIBS vx_lib LABELS gpu)
endif()
if(VOXLOD_HAVE_CUDA)
  # Tiles built on the GPU against the CPU's tiles and the untiled tree, byte for byte.
  vx_add_test(test_gpu_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_tiled.c LIBS vx_lib
              LABELS gpu)
  # Tiled trees drawn on the GPU: the CPU's images, the joined tree's, within a budget.
  vx_add_test(test_gpu_render_tiled SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_render_tiled.c
              LIBS vx_lib LABELS gpu)
  # The GPU build against the CPU build, byte for byte.
  vx_add_test(test_gpu_build SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_build.c
              LIBS vx_voxelizer vx_formats Threads::Threads LABELS gpu)
  target_link_options(test_gpu_build PRIVATE "LINKER:-u,vx_soup_import")
  # The colour tests with the triangle parts made on the GPU: the same references, the CPU's bytes.
  vx_add_test(test_gpu_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_color.c
              LIBS ${VX_VOXELIZER_TEST_LIBS} LABELS gpu)
  target_compile_definitions(test_gpu_color PRIVATE VX_TEST_COLOR_GPU)
  target_link_options(test_gpu_color PRIVATE "LINKER:-u,vx_soup_import")
  # Colour in the streaming build with its surface made on the GPU: the whole pass's bytes.
  vx_add_test(test_gpu_ooc_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_voxelizer_ooc_color.c
              LIBS ${VX_VOXELIZER_TEST_LIBS} LABELS gpu)
  target_compile_definitions(test_gpu_ooc_color PRIVATE VX_TEST_OOC_GPU)
endif()
