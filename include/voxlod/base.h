/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/base.h - the vocabulary every part of libvoxlod shares: version, status codes and error
 * messages, the allocator hook, progress callbacks, devices, cameras and shading modes.
 *
 * Included by voxlod.h (include that). The library's own modules use these same definitions, so
 * a status or a camera means one thing on both sides of the API.
 */
#ifndef VOXLOD_BASE_H
#define VOXLOD_BASE_H

#include <stddef.h>
#include <stdint.h>

#define VOXLOD_VERSION_MAJOR 0
#define VOXLOD_VERSION_MINOR 1
#define VOXLOD_VERSION_PATCH 0
#define VOXLOD_VERSION_STRING "0.1.0"
/* One number for comparisons: VOXLOD_VERSION_NUMBER >= VOXLOD_MAKE_VERSION(0, 1, 0). */
#define VOXLOD_MAKE_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define VOXLOD_VERSION_NUMBER \
  VOXLOD_MAKE_VERSION(VOXLOD_VERSION_MAJOR, VOXLOD_VERSION_MINOR, VOXLOD_VERSION_PATCH)

#if defined(__GNUC__) || defined(__clang__)
#define VX_API __attribute__((visibility("default")))
#else
#define VX_API
#endif

#ifdef __cplusplus
#define VX_EXTERN_C_BEGIN extern "C" {
#define VX_EXTERN_C_END }
#else
#define VX_EXTERN_C_BEGIN
#define VX_EXTERN_C_END
#endif

VX_EXTERN_C_BEGIN

/* The library's own version at run time ("0.1.0"), which may differ from VOXLOD_VERSION_STRING
 * when a program was compiled against another release's header. */
VX_API const char *vx_version(void);

/* ---- status and errors ------------------------------------------------------------------------
 * Every fallible call returns a vx_status and, when given a non-NULL vx_error, leaves one line
 * for the user in it: what failed and why, ending with the library source file and line where
 * the failure was detected, e.g. "cannot open 'x.svo': No such file or directory
 * (formats/svo_read.c:412)". Values of vx_status never change meaning; new ones may be added. */
typedef enum vx_status {
  VX_OK = 0,
  VX_ERR_INVALID_ARG, /* a caller's argument is out of range */
  VX_ERR_IO,          /* a file could not be opened, read or written */
  VX_ERR_NOMEM,       /* an allocation failed (host or GPU memory) */
  VX_ERR_FORMAT,      /* a file is not in a format we read */
  VX_ERR_CORRUPT,     /* a file is truncated or its bytes are inconsistent */
  VX_ERR_VERSION,     /* a file was made by a newer voxlod */
  VX_ERR_EMPTY,       /* nothing to work on (no triangles, no voxels) */
  VX_ERR_LIMIT,       /* the work needs more memory or larger counts than allowed */
  VX_ERR_CUDA,        /* a CUDA call failed */
  VX_ERR_NO_GPU,      /* no usable GPU, or a library built without CUDA */
  VX_ERR_INTERRUPTED  /* cancelled by the caller (progress callback) */
} vx_status;

typedef struct vx_error {
  vx_status status;
  char msg[512];
} vx_error;

/* A short name for a status ("out of memory"). Never NULL. */
VX_API const char *vx_status_str(vx_status s);

/* ---- host memory ------------------------------------------------------------------------------
 * Every host allocation the library makes for its own data (trees, meshes, images, scratch,
 * zstd's contexts) goes through one allocator: malloc/realloc/free unless replaced here. The
 * functions must behave like their C counterparts (realloc(NULL, n) allocates, a failed realloc
 * leaves the block alone) and return memory aligned to at least 16 bytes. Not covered: memory of
 * the C library itself (stdio buffers, thread stacks), of assimp (which runs in a child process
 * for file imports) and the CUDA runtime's (pinned staging buffers, GPU memory).
 * Install it before any other call, while no library object exists; NULL restores the default.
 * Not thread-safe against calls running at the same time. */
typedef struct vx_allocator {
  void *(*alloc_fn)(void *user, size_t size);
  void *(*realloc_fn)(void *user, void *ptr, size_t size);
  void (*free_fn)(void *user, void *ptr);
  void *user;
} vx_allocator;

VX_API vx_status vx_set_allocator(const vx_allocator *a);

/* ---- progress ---------------------------------------------------------------------------------
 * Long calls report a phase name and the fraction of it done, in [0, 1], from the calling thread
 * or a worker thread (never two at once). A nonzero return cancels the call, which then cleans up
 * and returns VX_ERR_INTERRUPTED. */
typedef int (*vx_progress_fn)(void *user, const char *phase, double fraction);

/* ---- devices ---------------------------------------------------------------------------------- */
typedef enum vx_device {
  VX_DEVICE_AUTO = 0, /* the GPU when one is usable, else the CPU (a note says so) */
  VX_DEVICE_CPU = 1,  /* the CPU only */
  VX_DEVICE_GPU = 2   /* the GPU only: VX_ERR_NO_GPU when none is usable */
} vx_device;

/* 1 when this library was built with CUDA and a CUDA device is usable now. */
VX_API int vx_gpu_available(void);
/* The name of the GPU the library would use ("NVIDIA H100 80GB HBM3"), or NULL. */
VX_API const char *vx_gpu_name(void);

/* ---- sign rule ----------------------------------------------------------------------------------
 * How a conversion judges a grid corner inside (negative distance) or outside
 * (vx_convert_opts.sign_rule, convert.h). Here because the voxelizer shares it. */
typedef enum vx_sign_rule {
  VX_SIGN_WINDING = 0,      /* |generalized winding number| > 1/2: robust to holes, soups,
                               duplicates and overlaps (default) */
  VX_SIGN_PSEUDO_NORMAL = 1 /* angle-weighted pseudo-normal: faster, exact on closed manifolds */
} vx_sign_rule;

/* ---- cameras and shading ---------------------------------------------------------------------- */
typedef struct vx_camera {
  double eye[3], target[3], up[3]; /* world coordinates */
  double fov_y_deg;                /* vertical field of view, (0, 180) */
} vx_camera;

typedef enum vx_shade {
  VX_SHADE_SMOOTH = 0, /* zero crossing of the trilinear field, normal from its gradient */
  VX_SHADE_BLOCKS = 1, /* voxel cubes with face normals */
  VX_SHADE_NORMALS = 2, /* smooth surface, normal as colour */
  VX_SHADE_ALBEDO = 3   /* smooth surface, unlit base colour (the tree's colour, else grey) */
} vx_shade;

/* ---- colour --------------------------------------------------------------------------------------
 * Colours are RGBA8: r, g, b sRGB-encoded, a linear (the opaque share of the surface a cell
 * stands for; 0: a hole, neither drawn nor meshed). Averages are taken in linear light. */
typedef enum vx_color_mode {
  VX_COLOR_AUTO = 0, /* a coloured tree when the mesh has colour (textures, vertex or material
                        colours), else a grey one */
  VX_COLOR_OFF = 1   /* a grey tree whatever the mesh has */
} vx_color_mode;

typedef enum vx_color_filter {
  VX_COLOR_FILTER_MEAN = 0,    /* area-weighted mean in linear light of the surface in the voxel,
                                  textures filtered over each part's footprint */
  VX_COLOR_FILTER_DOMINANT = 1 /* the colour of the part with the largest area: no mixed colours
                                  at material borders */
} vx_color_filter;

VX_EXTERN_C_END

#endif
