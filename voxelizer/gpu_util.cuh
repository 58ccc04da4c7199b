/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_util.cuh - what the GPU build's two files share (gpu_build.cu, gpu_tree.cu): error
 * checks that turn a CUDA failure into a vx_status (svo/cuda_status.cuh), launch sizes, the wall clock and the fast
 * copies between pageable host memory and the device. C++ (CUDA) only. */
#ifndef VOXLOD_VOXELIZER_GPU_UTIL_CUH
#define VOXLOD_VOXELIZER_GPU_UTIL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <thread>
#include <vector>

#include "sys/alloc.h"
#include "sys/system.h"
#include "svo/svo.h"
#include "svo/cuda_status.cuh"

namespace vxgpu {

#define CK(call)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) return VX_CUDA_ERROR(err, e_, #call);                               \
  } while (0)

inline unsigned grid_of(uint64_t n, unsigned block) { return (unsigned)((n + block - 1) / block); }

inline double now_s() { return vx_clock_seconds(); }

/* Copies `bytes` from src to dst on up to 16 threads. */
inline void parallel_copy(char *dst, const char *src, size_t bytes) {
  unsigned nt = std::thread::hardware_concurrency();
  nt = nt < 1 ? 1 : nt > 16 ? 16 : nt;
  if (bytes < ((size_t)4 << 20)) nt = 1;
  std::vector<std::thread> th;
  size_t per = (bytes + nt - 1) / nt;
  for (unsigned k = 1; k < nt; k++) {
    size_t a = per * k;
    if (a >= bytes) break;
    size_t n = a + per < bytes ? per : bytes - a;
    th.emplace_back([=] { memcpy(dst + a, src + a, n); });
  }
  memcpy(dst, src, per < bytes ? per : bytes);
  for (auto &t : th) t.join();
}

/* Device -> fresh (pageable) host memory, fast: through two pinned 64 MiB staging buffers, the DMA
 * of one chunk running while all cores copy the previous one out (a plain cudaMemcpy to pageable
 * memory is staged by the driver on one thread and pays every page fault there). Falls back to
 * cudaMemcpy when pinned memory is refused. Synchronous. */
inline cudaError_t copy_back(void *dst, const void *src, size_t bytes) {
  const size_t CH = (size_t)64 << 20;
  if (bytes < 2 * CH) return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  char *stage = NULL;
  cudaStream_t st = NULL;
  cudaEvent_t ev[2] = {NULL, NULL};
  cudaError_t e = cudaMallocHost((void **)&stage, 2 * CH);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaGetLastError();
    e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  } else {
    const size_t n = (bytes + CH - 1) / CH;
    auto issue = [&](size_t i) -> cudaError_t {
      size_t off = i * CH, len = off + CH < bytes ? CH : bytes - off;
      cudaError_t r = cudaMemcpyAsync(stage + (i & 1) * CH, (const char *)src + off, len,
                                      cudaMemcpyDeviceToHost, st);
      return r == cudaSuccess ? cudaEventRecord(ev[i & 1], st) : r;
    };
    e = issue(0);
    for (size_t i = 0; i < n && e == cudaSuccess; i++) {
      if (i + 1 < n) e = issue(i + 1); /* its buffer was emptied in the previous round */
      if (e == cudaSuccess) e = cudaEventSynchronize(ev[i & 1]);
      if (e != cudaSuccess) break;
      size_t off = i * CH, len = off + CH < bytes ? CH : bytes - off;
      parallel_copy((char *)dst + off, stage + (i & 1) * CH, len);
    }
    if (st) cudaStreamSynchronize(st);
  }
  if (ev[0]) cudaEventDestroy(ev[0]);
  if (ev[1]) cudaEventDestroy(ev[1]);
  if (st) cudaStreamDestroy(st);
  if (stage) cudaFreeHost(stage);
  return e;
}

/* Host -> device, fast: copy_back's mirror. Chunks of whole items (`item` bytes) go through two
 * pinned 64 MiB buffers, fill(stage, off, len) writing bytes [off, off + len) of what goes up
 * into one (on every core: an array's copy, or values computed there) while the other's DMA
 * runs (a plain cudaMemcpy from pageable memory is staged by the driver on one thread). Small
 * copies, or pinned memory refused: src when given goes up by cudaMemcpy, else the chunks are
 * filled into a pageable buffer. Synchronous. */
template <typename Fill>
inline cudaError_t copy_up(void *dst, const void *src, size_t bytes, size_t item, Fill fill) {
  const size_t CH = (((size_t)64 << 20) / item) * item;
  char *stage = NULL;
  cudaStream_t st = NULL;
  cudaEvent_t ev[2] = {NULL, NULL};
  cudaError_t e = bytes < 2 * CH ? cudaErrorMemoryAllocation
                                 : cudaMallocHost((void **)&stage, 2 * CH);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming);
  if (e != cudaSuccess) {
    if (bytes >= 2 * CH) cudaGetLastError();
    if (src) {
      e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    } else {
      const size_t cap = bytes < CH ? bytes : CH;
      char *buf = (char *)vx_malloc(cap ? cap : 1);
      e = buf ? cudaSuccess : cudaErrorMemoryAllocation;
      for (size_t off = 0; off < bytes && e == cudaSuccess; off += CH) {
        const size_t len = off + CH < bytes ? CH : bytes - off;
        fill(buf, off, len);
        e = cudaMemcpy((char *)dst + off, buf, len, cudaMemcpyHostToDevice);
      }
      vx_free(buf);
    }
  } else {
    for (size_t i = 0, off = 0; off < bytes && e == cudaSuccess; i++, off += CH) {
      const size_t len = off + CH < bytes ? CH : bytes - off;
      char *b = stage + (i & 1) * CH;
      if (i >= 2) e = cudaEventSynchronize(ev[i & 1]); /* its DMA two rounds ago is done */
      if (e != cudaSuccess) break;
      fill(b, off, len);
      e = cudaMemcpyAsync((char *)dst + off, b, len, cudaMemcpyHostToDevice, st);
      if (e == cudaSuccess) e = cudaEventRecord(ev[i & 1], st);
    }
    cudaError_t w = cudaStreamSynchronize(st);
    if (e == cudaSuccess) e = w;
  }
  if (ev[0]) cudaEventDestroy(ev[0]);
  if (ev[1]) cudaEventDestroy(ev[1]);
  if (st) cudaStreamDestroy(st);
  if (stage) cudaFreeHost(stage);
  return e;
}

/* An array up (copy_up, the chunks copied on every core). */
inline cudaError_t copy_up(void *dst, const void *src, size_t bytes) {
  return copy_up(dst, src, bytes, 1, [=](char *stage, size_t off, size_t len) {
    parallel_copy(stage, (const char *)src + off, len);
  });
}

} /* namespace vxgpu */

#endif
