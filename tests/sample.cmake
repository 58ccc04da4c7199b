# SPDX-License-Identifier: Apache-2.0
# Distance queries: the CPU sampler against a brute-force reference (every triangle, double
# precision, exact winding number), and the CUDA sampler against the CPU one (label gpu).
vx_add_test(test_sample SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sample.c LIBS vx_lib)
if(VOXLOD_HAVE_CUDA)
  vx_add_test(test_gpu_sample SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_sample.cu LIBS vx_lib
              LABELS gpu)
endif()
