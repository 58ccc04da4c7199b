# GPU tests: label `gpu`, exit 77 (skipped) where no CUDA device is usable, so CI passes them.
if(VOXLOD_HAVE_CUDA)
  vx_add_test(test_gpu_render SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_render.c
              LIBS vx_marcher LABELS gpu)
  if(TARGET vx_nanovdb_compare)
    vx_add_test(test_gpu_nanovdb SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_nanovdb.cu
                LIBS vx_nanovdb_compare vx_marcher LABELS gpu)
  endif()
  # Compile-time checks of the kernel's code (need nvcc only, no GPU): node fetches are 128-bit
  # read-only loads and ptxas reports no spills.
  list(GET CMAKE_CUDA_ARCHITECTURES 0 vx_ptx_arch)
  add_test(NAME test_gpu_ptx COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
           -DSRC=${VOXLOD_ROOT}/marcher/render_gpu.cu -DINC=${VOXLOD_ROOT} -DARCH=${vx_ptx_arch}
           -DOUT=${CMAKE_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu_ptx_check.cmake)
  set_tests_properties(test_gpu_ptx PROPERTIES LABELS ptx)
endif()
if(VOXLOD_HAVE_CUDA)
  # The GPU build against the CPU build, byte for byte.
  vx_add_test(test_gpu_build SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_build.c
              LIBS vx_voxelizer vx_formats Threads::Threads LABELS gpu)
  target_link_options(test_gpu_build PRIVATE "LINKER:-u,vx_soup_import")
endif()
