/* SPDX-License-Identifier: Apache-2.0 */
/* abi.h - versioned structs: every option and statistics struct of the API starts with
 * `uint32_t struct_size`, and its fields are only ever appended. A caller compiled against an
 * older header passes a smaller struct, or 0 for the struct's first published layout (0.1).
 *
 * Every entry point copies an option struct in with VX_OPTS_IN (at most the caller's size and
 * this library's, the rest zero: defaults) and writes a statistics struct out with VX_STATS_OUT
 * (at most the caller's size), so that the library never reads or writes past an older caller's
 * struct. The first layouts' sizes are the table below.
 */
#ifndef VOXLOD_LIB_ABI_H
#define VOXLOD_LIB_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef VOXLOD_EXPERIMENTAL
#define VOXLOD_EXPERIMENTAL
#endif
#include "voxlod.h"
#include "svo/svo.h"

/* Each versioned struct, the last field of its first published layout, and that layout's size on
 * LP64 (x86-64, aarch64) for the check below. The size is the end of that field rounded up to the
 * struct's alignment: appending fields does not change it. */
#define VX_ABI_STRUCTS(X)                     \
  X(vx_mesh_load_opts, mem_limit, 24)         \
  X(vx_mesh_info, load_seconds, 104)          \
  X(vx_read_opts, mem_limit, 16)              \
  X(vx_save_opts, user, 24)                   \
  X(vx_tree_info, file_version, 96)           \
  X(vx_level_stats, dense_bytes, 80)          \
  X(vx_tile_info, edge, 88)                   \
  X(vx_convert_opts, user, 72)                \
  X(vx_conversion_stats, sec_gpu_tree, 176)   \
  X(vx_grid_opts, timeout_s, 24)              \
  X(vx_tile_plan_info, sec_plan, 48)          \
  X(vx_tile_record_info, sec_encode, 64)      \
  X(vx_renderer_opts, threads, 12)            \
  X(vx_render_opts, camera, 112)              \
  X(vx_frame_stats, pixels_hit, 40)           \
  X(vx_renderer_info, ms_create, 280)         \
  X(vx_renderer_bench_stats, regs_per_thread, 80) \
  X(vx_sample_opts, band_cache, 40)           \
  X(vx_sample_stats, ms_copy, 56)             \
  X(vx_sampler_opts, renderer, 24)            \
  X(vx_sampler_bench_stats, cache_bytes, 144) \
  X(vx_tiled_sample_opts, cache_bytes, 16)    \
  X(vx_surface_points_opts, shuffle, 24)      \
  X(vx_export_opts, user, 56)                 \
  X(vx_export_stats, seconds, 64)             \
  X(vx_mesher_opts, user, 40)                 \
  X(vx_mesher_stats, sec_total, 120)

#define VX_ABI_END(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define VX_ABI_FIRST(type, last) \
  ((VX_ABI_END(type, last) + _Alignof(type) - 1) / _Alignof(type) * _Alignof(type))

/* Enum fields took the place of 0.1's ints: they must keep their size. */
_Static_assert(sizeof(vx_sign_rule) == sizeof(int) && sizeof(vx_nonfinite) == sizeof(int) &&
                   sizeof(vx_device) == sizeof(int) && sizeof(vx_mesher_cut) == sizeof(int),
               "enums must be int-sized (no -fshort-enums)");

#if defined(__LP64__)
#define VX_ABI_CHECK(type, last, lp64) \
  _Static_assert(VX_ABI_FIRST(type, last) == (lp64), "first layout of " #type " changed");
VX_ABI_STRUCTS(VX_ABI_CHECK)
#undef VX_ABI_CHECK
#endif

/* The first layout's size and the name of the struct x (an lvalue of one of the types above,
 * const or not). */
struct vx_abi_none;
#define VX_ABI_SIZE_CASE(type, last, lp64) \
  type * : VX_ABI_FIRST(type, last), const type * : VX_ABI_FIRST(type, last),
#define VX_ABI_NAME_CASE(type, last, lp64) type * : #type, const type * : #type,
#define VX_ABI_FIRST_SIZE(x) \
  _Generic(&(x), VX_ABI_STRUCTS(VX_ABI_SIZE_CASE) struct vx_abi_none * : (size_t)0)
#define VX_ABI_NAME(x) _Generic(&(x), VX_ABI_STRUCTS(VX_ABI_NAME_CASE) struct vx_abi_none * : "")

/* Copies a caller's option struct (src, may be NULL: all defaults) into the zeroed local dst of
 * this library's size `known`: struct_size 0 means the first layout (`first` bytes); a larger
 * struct_size (a newer header) copies only what this version knows; one below the first layout
 * is refused. dst's struct_size is set to the bytes taken. */
static inline vx_status vx_struct_in(void *dst, size_t known, size_t first, const char *name,
                                     const void *src, vx_error *err) {
  memset(dst, 0, known);
  if (!src) return VX_OK;
  uint32_t n;
  memcpy(&n, src, sizeof n);
  if (n == 0) n = (uint32_t)first;
  if (n < first)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "%s.struct_size %u is below its first layout's size (%zu bytes): set it "
                        "to sizeof(%s) or 0", name, n, first, name);
  size_t take = n < known ? n : known;
  memcpy(dst, src, take);
  uint32_t got = (uint32_t)take;
  memcpy(dst, &got, sizeof got);
  return VX_OK;
}
#define VX_OPTS_IN(dst, src, err) \
  vx_struct_in(&(dst), sizeof(dst), VX_ABI_FIRST_SIZE(dst), VX_ABI_NAME(dst), (src), (err))

/* Fills a caller's statistics struct dst from the full local src: at most the caller's
 * struct_size bytes (0: the first layout's), at most this version's; dst's struct_size is set to
 * the bytes written. */
static inline void vx_struct_out(void *dst, const void *src, size_t known, size_t first) {
  uint32_t n;
  memcpy(&n, dst, sizeof n);
  if (n == 0) n = (uint32_t)first;
  size_t take = n < known ? n : known;
  if (take < sizeof n) return; /* not even struct_size: nothing the caller can read */
  memcpy(dst, src, take);
  uint32_t got = (uint32_t)take;
  memcpy(dst, &got, sizeof got);
}
#define VX_STATS_OUT(dst, src) \
  vx_struct_out((dst), &(src), sizeof(src), VX_ABI_FIRST_SIZE(src))

#endif
