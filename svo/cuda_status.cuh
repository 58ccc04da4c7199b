/* cuda_status.cuh - the one mapping from CUDA errors to vx_status, for every .cu file.
 *
 * No device, an unusable driver or a binary without code for the GPU: VX_ERR_NO_GPU (callers
 * fall back to the CPU). Out of GPU memory: VX_ERR_NOMEM, as for host memory. Anything else:
 * VX_ERR_CUDA. VX_CUDA_ERROR is a macro so that the message names the failing call's file and
 * line (svo.h's vx_error_set), never this header's.
 */
#ifndef VOXLOD_SVO_CUDA_STATUS_CUH
#define VOXLOD_SVO_CUDA_STATUS_CUH

#include <cuda_runtime.h>
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
  case cudaErrorUnsupportedPtxVersion:
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

#endif
