/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_status.cuh - the one mapping from CUDA errors to vx_status, for every .cu file, and the
 * one check that the GPU can run this build's code (vx_cuda_usable).
 *
 * No device, an unusable driver or a binary without code for the GPU: VX_ERR_NO_GPU (callers
 * fall back to the CPU). Out of GPU memory: VX_ERR_NOMEM, as for host memory. Anything else:
 * VX_ERR_CUDA. VX_CUDA_ERROR is a macro so that the message names the failing call's file and
 * line (svo.h's vx_error_set), never this header's.
 */
#ifndef VOXLOD_SVO_CUDA_STATUS_CUH
#define VOXLOD_SVO_CUDA_STATUS_CUH

#include <cuda_runtime.h>
#include <stdio.h>

#include "svo/svo.h"

static inline vx_status vx_cuda_status(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return VX_OK;
  case cudaErrorMemoryAllocation:
    return VX_ERR_NOMEM;
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorInitializationError:
  case cudaErrorDevicesUnavailable:
  case cudaErrorSystemDriverMismatch:
  case cudaErrorCompatNotSupportedOnDevice:
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorInvalidKernelImage:
  case cudaErrorUnsupportedPtxVersion:
  case cudaErrorInvalidPtx:
  case cudaErrorJitCompilerNotFound:
  case cudaErrorJitCompilationDisabled:
    return VX_ERR_NO_GPU;
  default:
    return VX_ERR_CUDA;
  }
}

/* Sets err from CUDA error e while doing `what` (clearing CUDA's sticky last error); returns the
 * status. */
#define VX_CUDA_ERROR(err, e, what)                                                            \
  (cudaGetLastError(),                                                                         \
   vx_error_set((err), vx_cuda_status(e), "GPU: %s failed: %s", (what), cudaGetErrorString(e)))

/* The usual shape of a CUDA call in a function with `vx_status st`, `vx_error *err` and a `done:`
 * label that cleans up: on failure, st is set and control jumps to done. */
#define VX_CU(call, what)                                                                      \
  do {                                                                                         \
    cudaError_t vx_e_ = (call);                                                                \
    if (vx_e_ != cudaSuccess) {                                                                \
      st = VX_CUDA_ERROR(err, vx_e_, what);                                                    \
      goto done;                                                                               \
    }                                                                                          \
  } while (0)

/* The compute capabilities in nvcc's __CUDA_ARCH_LIST__ form ("750,860,1210") as "7.5, 8.6,
 * 12.1", into buf (n > 0 bytes, always terminated). */
static inline const char *vx_cuda_arch_names(const char *list, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = '\0';
  while (list && *list && o + 1 < n) {
    unsigned v = 0;
    int digits = 0;
    while (*list >= '0' && *list <= '9') v = v * 10u + (unsigned)(*list++ - '0'), digits++;
    if (digits) {
      int w = snprintf(buf + o, n - o, "%s%u.%u", o ? ", " : "", v / 100u, v / 10u % 10u);
      if (w < 0 || (size_t)w >= n - o) {
        buf[o] = '\0'; /* whole entries only */
        break;
      }
      o += (size_t)w;
    }
    if (*list) list++; /* the comma (or anything else) */
  }
  return buf;
}

/* variadic: the list holds commas */
#define VX_CUDA_STR2_(...) #__VA_ARGS__
#define VX_CUDA_STR_(...) VX_CUDA_STR2_(__VA_ARGS__)
#ifdef __CUDA_ARCH_LIST__
#define VX_CUDA_ARCH_LIST VX_CUDA_STR_(__CUDA_ARCH_LIST__)
#else
#define VX_CUDA_ARCH_LIST ""
#endif

/* Whether the current CUDA device can run this build's GPU code, checked before a GPU path is
 * chosen. `kernel` is one of the caller's own kernels: the code checked is its file's (every .cu
 * file is compiled for the same architectures, CMAKE_CUDA_ARCHITECTURES). VX_OK, or
 * VX_ERR_NO_GPU with one sentence naming the reason: no NVIDIA driver, a driver older than this
 * build's CUDA, no device, or a GPU (named, with its compute capability) for which the build
 * carries neither machine code nor PTX that the driver can compile (CUDA_DISABLE_PTX_JIT=1 forbids
 * the latter). Clears CUDA's last error. A macro, so that the message's location is the caller's. */
#define vx_cuda_usable(kernel, err) vx_cuda_usable_at(__FILE__, __LINE__, (kernel), (err))
static inline vx_status vx_cuda_usable_at(const char *file, int line, const void *kernel,
                                          vx_error *err) {
  int n = 0, dev = 0, drv = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorCallRequiresNewerDriver) {
    cudaGetLastError();
    cudaDriverGetVersion(&drv);
    if (drv == 0)
      return vx_error_set_at(file, line, err, VX_ERR_NO_GPU, "GPU: no NVIDIA driver found");
    return vx_error_set_at(file, line, err, VX_ERR_NO_GPU,
                           "GPU: the NVIDIA driver supports CUDA %d.%d; this build of voxlod "
                           "needs a driver for CUDA %d.%d or newer",
                           drv / 1000, drv % 1000 / 10, CUDART_VERSION / 1000,
                           CUDART_VERSION % 1000 / 10);
  }
  if (e != cudaSuccess || n <= 0) {
    cudaGetLastError();
    return vx_error_set_at(file, line, err, VX_ERR_NO_GPU, "GPU: no usable CUDA device (%s)",
                           e != cudaSuccess ? cudaGetErrorString(e) : "none found");
  }
  /* loads the kernel's module: the SASS for this GPU, else the PTX compiled by the driver */
  cudaFuncAttributes fa;
  e = cudaFuncGetAttributes(&fa, kernel);
  if (e == cudaSuccess) return VX_OK;
  cudaGetLastError();
  cudaDeviceProp prop;
  cudaError_t q = cudaGetDevice(&dev);
  if (q == cudaSuccess) q = cudaGetDeviceProperties(&prop, dev);
  if (q != cudaSuccess) {
    cudaGetLastError();
    return vx_error_set_at(file, line, err, VX_ERR_NO_GPU, "GPU: cannot use CUDA device %d (%s)",
                           dev, cudaGetErrorString(e));
  }
  vx_status s = vx_cuda_status(e);
  if (e == cudaErrorInvalidDeviceFunction) s = VX_ERR_NO_GPU; /* no image holds the kernel */
  if (s != VX_ERR_NO_GPU)
    return vx_error_set_at(file, line, err, s,
                           "GPU: %s (compute capability %d.%d): loading the GPU code failed: %s",
                           prop.name, prop.major, prop.minor, cudaGetErrorString(e));
  char archs[160];
  return vx_error_set_at(file, line, err, VX_ERR_NO_GPU,
                         "GPU: %s (compute capability %d.%d) cannot run this build of voxlod, "
                         "which carries GPU code for compute capabilities %s (%s)",
                         prop.name, prop.major, prop.minor,
                         vx_cuda_arch_names(VX_CUDA_ARCH_LIST, archs, sizeof archs),
                         cudaGetErrorString(e));
}

#endif
