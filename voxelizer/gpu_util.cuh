/* gpu_util.cuh - what the GPU build's two files share (gpu_build.cu, gpu_tree.cu): error
 * checks that turn a CUDA failure into a vx_status, launch sizes, the wall clock and the fast
 * copy back to fresh host memory. C++ (CUDA) only. */
#ifndef VOXLOD_VOXELIZER_GPU_UTIL_CUH
#define VOXLOD_VOXELIZER_GPU_UTIL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <thread>
#include <vector>

#include "svo/svo.h"

namespace vxgpu {

inline vx_status fail(vx_error *err, cudaError_t e, const char *what, int line) {
  cudaGetLastError();
  if (e == cudaErrorMemoryAllocation)
    return vx_error_set(err, VX_ERR_NOMEM, "GPU build: out of GPU memory (%s)", what);
  return vx_error_set(err, e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
                               ? VX_ERR_NO_GPU : VX_ERR_CUDA,
                      "GPU build: %s failed: %s (%s:%d)", what, cudaGetErrorString(e),
                      __FILE__, line);
}

#define CK(call)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) return vxgpu::fail(err, e_, #call, __LINE__);                       \
  } while (0)

inline unsigned grid_of(uint64_t n, unsigned block) { return (unsigned)((n + block - 1) / block); }

inline double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Device -> fresh host memory, fast: the pages are touched by all cores at once (the kernel's
 * page faults dominate a single-threaded copy into new memory) and pinned for the transfer, so
 * it runs as one DMA instead of through the driver's staging buffers. Without the pinning (it
 * may be refused) a plain copy. */
inline cudaError_t copy_back(void *dst, const void *src, size_t bytes) {
  /* 2 MiB pages where the kernel offers them on request: 512 times fewer faults and pins */
  {
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)dst + huge - 1) / huge * huge, e = ((uintptr_t)dst + bytes) / huge * huge;
    if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
  }
  unsigned nt = std::thread::hardware_concurrency();
  nt = nt < 1 ? 1 : nt > 32 ? 32 : nt;
  const size_t page = 4096, chunk = (bytes / nt + page - 1) / page * page;
  std::vector<std::thread> th;
  for (unsigned k = 0; k < nt && chunk; k++) {
    size_t a = (size_t)k * chunk;
    if (a >= bytes) break;
    size_t e = a + chunk < bytes ? a + chunk : bytes;
    th.emplace_back([=] {
      volatile char *p = (volatile char *)dst;
      for (size_t i = a; i < e; i += page) p[i] = 0;
    });
  }
  for (auto &t : th) t.join();
  uintptr_t lo = (uintptr_t)dst / page * page, hi = ((uintptr_t)dst + bytes + page - 1) / page * page;
  int pinned = bytes >= (64u << 20) &&
               cudaHostRegister((void *)lo, hi - lo, cudaHostRegisterDefault) == cudaSuccess;
  cudaGetLastError();
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  if (pinned) cudaHostUnregister((void *)lo);
  return e;
}

} /* namespace vxgpu */

#endif
