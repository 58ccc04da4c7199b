# SPDX-License-Identifier: Apache-2.0
# gpu_ptx_check.cmake - compile-time checks of the CUDA code (need nvcc, not a GPU).
#
# MODE=kernel (default): the CUDA ray-marcher, for the architecture it is tuned on (ARCH=90):
#   1. every node fetch is one 128-bit load through the read-only path: the PTX of the tiled
#      kernel (the same per-ray device code as the persistent default) has ld.global.nc.v4.u32 and no plain ld.global.v4 / narrower global loads of nodes;
#   2. ptxas reports no spills for that kernel, and its stack frame is only the traversal
#      stack (2 x VX_MAX_DEPTH words = 112 bytes) - no other array fell into local memory.
#   cmake -DNVCC=... -DSRC=render_gpu.cu -DINC=<repo> -DARCH=90 -DOUT=<dir> -P gpu_ptx_check.cmake
#
# MODE=all: every .cu file of the repository compiles for sm_ARCH (ARCH=75, the oldest
# architecture of the default fat binary; ptxas warnings are errors) and compute_90 PTX in one nvcc
# call, so that code needing a newer GPU (an sm_80+ intrinsic, launch bounds beyond Turing's 1024
# threads per multiprocessor) or breaking with several architectures (__CUDA_ARCH_LIST__ holds
# commas) fails here although the day-to-day build compiles for one architecture.
#   cmake -DMODE=all -DNVCC=... -DINC=<repo> -DARCH=75 -DOUT=<dir> [-DEXTRA_INC=dir;dir] -P gpu_ptx_check.cmake
if(MODE STREQUAL "all")
  file(GLOB_RECURSE srcs RELATIVE ${INC} ${INC}/*.cu)
  # not build folders' own files (CMake's compiler probes) nor hidden folders
  list(FILTER srcs EXCLUDE REGEX "(^|/)(CMakeFiles|build[^/]*|\\.[^/]*)/")
  list(SORT srcs)
  if(NOT srcs)
    message(FATAL_ERROR "no .cu file under ${INC}")
  endif()
  set(incs -I${INC} -I${INC}/include -I${INC}/tests)
  set(have_nanovdb OFF)
  foreach(d IN LISTS EXTRA_INC)
    if(d AND EXISTS ${d})
      list(APPEND incs -I${d})
      if(EXISTS ${d}/nanovdb/NanoVDB.h)
        set(have_nanovdb ON)
      endif()
    endif()
  endforeach()
  set(failed "")
  foreach(f IN LISTS srcs)
    file(STRINGS ${INC}/${f} nvdb REGEX "#include [<\"]nanovdb/")
    if(nvdb AND NOT have_nanovdb)
      message(STATUS "sm_${ARCH}: ${f} skipped (no NanoVDB headers)")
      continue()
    endif()
    string(MAKE_C_IDENTIFIER "${f}" name)
    # the tests' compile definitions, as placeholders (only their syntax matters here)
    execute_process(COMMAND ${NVCC} -std=c++17 --expt-relaxed-constexpr
                            -gencode=arch=compute_${ARCH},code=sm_${ARCH}
                            -gencode=arch=compute_90,code=compute_90 -Xptxas=-Werror
                            ${incs} -DVX_TEST_MESHES="" -DVX_DATA_DIR="" -DVX_BUILD_DIR=""
                            -c ${INC}/${f} -o ${OUT}/${name}.o
                    RESULT_VARIABLE rc ERROR_VARIABLE log OUTPUT_VARIABLE log2)
    if(rc EQUAL 0)
      message(STATUS "sm_${ARCH} + compute_90: ${f}")
    else()
      message("sm_${ARCH}: ${f} FAILED\n${log}${log2}")
      list(APPEND failed ${f})
    endif()
  endforeach()
  if(failed)
    message(FATAL_ERROR "not compilable for sm_${ARCH}: ${failed}")
  endif()
  return()
endif()

execute_process(COMMAND ${NVCC} -std=c++17 -arch=sm_${ARCH} -I${INC} -I${INC}/include -ptx ${SRC} -o ${OUT}/render_gpu.ptx
                RESULT_VARIABLE rc ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -ptx failed: ${log}")
endif()
execute_process(COMMAND ${NVCC} -std=c++17 -arch=sm_${ARCH} -I${INC} -I${INC}/include -Xptxas=-v -c ${SRC}
                        -o ${OUT}/render_gpu_check.o
                RESULT_VARIABLE rc ERROR_VARIABLE report OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -Xptxas=-v failed: ${report}")
endif()
file(WRITE ${OUT}/render_gpu.ptxas.txt "${report}")

file(READ ${OUT}/render_gpu.ptx ptx)
# the default kernel: vx_kernel_tiled<1>
string(REGEX MATCH "\\.entry _Z15vx_kernel_tiledILi1E14vx_trace_scene[^\n]*\n.*" body "${ptx}")
string(FIND "${body}" "\n}\n" end)
string(SUBSTRING "${body}" 0 ${end} body)
string(REGEX MATCHALL "ld\\.global\\.nc\\.v4\\.u32" nc4 "${body}")
string(REGEX MATCHALL "ld\\.global\\.v4" plain4 "${body}")
list(LENGTH nc4 n_nc4)
list(LENGTH plain4 n_plain4)
message(STATUS "default kernel: ${n_nc4} ld.global.nc.v4.u32, ${n_plain4} plain ld.global.v4")
if(n_nc4 LESS 1 OR n_plain4 GREATER 0)
  message(FATAL_ERROR "node fetches are not 128-bit read-only loads")
endif()

string(REGEX MATCH "Function properties for _Z15vx_kernel_tiledILi1E14vx_trace_scene[^\n]*\n[^\n]*\n[^\n]*" props "${report}")
message(STATUS "${props}")
string(REGEX MATCH "([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads" m "${props}")
if(NOT m)
  message(FATAL_ERROR "no ptxas report for the default kernel")
endif()
if(NOT CMAKE_MATCH_2 EQUAL 0 OR NOT CMAKE_MATCH_3 EQUAL 0)
  message(FATAL_ERROR "the default kernel spills registers")
endif()
if(CMAKE_MATCH_1 GREATER 112)
  message(FATAL_ERROR "stack frame ${CMAKE_MATCH_1} bytes > the traversal stack's 112: an array went to local memory")
endif()
