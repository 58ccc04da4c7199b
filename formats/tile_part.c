/* SPDX-License-Identifier: Apache-2.0 */
/* tile_part.c - the record of a tile built apart (tile_part.h), little-endian:
 *   0 "VXPART2\n"   8 flags u32 (1 empty, 2 built on the GPU, 4 coloured build, 8 its filter
 *     is dominant, 16 the root has colour sums)   12 reserved u32 (0)
 *  16 the build's header fields as the tiled header record holds them (56 bytes: depth, tile
 *     depth, band, prune error, origin, scale, build id; vx_tiled_header_put)
 *  72 code u64  80 voxels u64  88 nodes u64  96 corners u64
 * 104 file length u64  112 file check32 u32  116 reserved u32 (0)
 * 120 fit: n, s[3], ss[6], f, fs[3], ff, bound, lo[3], hi[3] (22 x f64)
 * 296 seconds building f64  304 seconds compressing f64
 * 312 the root's colour sums: area, opaque area, r, g, b (5 x f64; 0 without flag 16)
 * 352 reserved u32 (0)  356 check32 of bytes 0 .. 355 */
#include "formats/tile_part.h"
#include "formats/svo_codec.h"

#include <errno.h>
#include <stdio.h>

static const char part_magic[8] = {'V', 'X', 'P', 'A', 'R', 'T', '2', '\n'};

#define F_EMPTY 1u
#define F_GPU 2u
#define F_COLOR 4u
#define F_DOMINANT 8u
#define F_SUMS 16u

#define FIT_DOUBLES 22

static void fit_out(const vx_fit_root *f, double *d) {
  int k = 0;
  d[k++] = f->m.n;
  for (int i = 0; i < 3; i++) d[k++] = f->m.s[i];
  for (int i = 0; i < 6; i++) d[k++] = f->m.ss[i];
  d[k++] = f->m.f;
  for (int i = 0; i < 3; i++) d[k++] = f->m.fs[i];
  d[k++] = f->m.ff;
  d[k++] = f->bound;
  for (int i = 0; i < 3; i++) d[k++] = f->lo[i];
  for (int i = 0; i < 3; i++) d[k++] = f->hi[i];
}

static void fit_in(const double *d, vx_fit_root *f) {
  int k = 0;
  memset(f, 0, sizeof *f);
  f->m.n = d[k++];
  for (int i = 0; i < 3; i++) f->m.s[i] = d[k++];
  for (int i = 0; i < 6; i++) f->m.ss[i] = d[k++];
  f->m.f = d[k++];
  for (int i = 0; i < 3; i++) f->m.fs[i] = d[k++];
  f->m.ff = d[k++];
  f->bound = d[k++];
  for (int i = 0; i < 3; i++) f->lo[i] = d[k++];
  for (int i = 0; i < 3; i++) f->hi[i] = d[k++];
}

static vx_status record_check(const uint8_t *p, uint32_t *check, vx_error *err) {
  ZSTD_CCtx *cc = vx_zstd_cctx();
  const int ok = cc && vx_svo_bytes_check(cc, p, VX_TILE_PART_BYTES - 4, check);
  ZSTD_freeCCtx(cc);
  return ok ? VX_OK : vx_svo_zstd_fail(err, "checksumming a tile record", 0);
}

vx_status vx_tile_part_encode(const vx_tile_part_rec *r, uint8_t out[VX_TILE_PART_BYTES],
                              vx_error *err) {
  memset(out, 0, VX_TILE_PART_BYTES);
  memcpy(out, part_magic, 8);
  vx_put_u32(out + 8, (r->empty ? F_EMPTY : 0u) | (r->gpu ? F_GPU : 0u) |
                         (r->h.color ? F_COLOR : 0u) | (r->dominant ? F_DOMINANT : 0u) |
                         (r->color_has ? F_SUMS : 0u));
  vx_tiled_header_put(out + 16, &r->h);
  vx_put_u64(out + 72, r->code);
  vx_put_u64(out + 80, r->voxels);
  vx_put_u64(out + 88, r->nodes);
  vx_put_u64(out + 96, r->corners);
  vx_put_u64(out + 104, r->length);
  vx_put_u32(out + 112, r->check);
  double d[FIT_DOUBLES];
  fit_out(&r->fit, d);
  for (int i = 0; i < FIT_DOUBLES; i++) vx_put_f64(out + 120 + 8 * i, d[i]);
  vx_put_f64(out + 296, r->sec_build);
  vx_put_f64(out + 304, r->sec_encode);
  for (int i = 0; r->color_has && i < 5; i++) vx_put_f64(out + 312 + 8 * i, r->color_sum[i]);
  return vx_tile_part_seal(out, err);
}

vx_status vx_tile_part_seal(uint8_t rec[VX_TILE_PART_BYTES], vx_error *err) {
  uint32_t check = 0;
  vx_status s = record_check(rec, &check, err);
  vx_put_u32(rec + VX_TILE_PART_BYTES - 4, check);
  return s;
}

/* finite, and small enough that sums of them stay so (a root's moments are far below 1e30) */
static int is_finite(double v) { return v == v && v <= 1e30 && v >= -1e30; }

vx_status vx_tile_part_decode(const uint8_t in[VX_TILE_PART_BYTES], vx_tile_part_rec *r,
                              vx_error *err) {
  memset(r, 0, sizeof *r);
  if (memcmp(in, part_magic, 8) != 0)
    return vx_error_set(err, VX_ERR_FORMAT, "not a voxlod tile record");
  uint32_t check = 0;
  vx_status s = record_check(in, &check, err);
  if (s != VX_OK) return s;
  if (check != vx_get_u32(in + VX_TILE_PART_BYTES - 4))
    return vx_error_set(err, VX_ERR_CORRUPT, "tile record: its check does not match its bytes");
  const uint32_t flags = vx_get_u32(in + 8);
  if ((flags & ~31u) || vx_get_u32(in + 12) || vx_get_u32(in + 116) || vx_get_u32(in + 352) ||
      ((flags & (F_DOMINANT | F_SUMS)) && !(flags & F_COLOR)) ||
      ((flags & F_SUMS) && (flags & F_EMPTY)))
    return vx_error_set(err, VX_ERR_CORRUPT, "tile record: unknown flags or reserved fields set");
  r->empty = (flags & F_EMPTY) != 0;
  r->gpu = (flags & F_GPU) != 0;
  r->dominant = (flags & F_DOMINANT) != 0;
  r->color_has = (flags & F_SUMS) != 0;
  for (int i = 0; i < 5; i++) r->color_sum[i] = vx_get_f64(in + 312 + 8 * i);
  vx_tiled_header_get(in + 16, &r->h);
  r->h.color = (flags & F_COLOR) != 0;
  r->code = vx_get_u64(in + 72);
  r->voxels = vx_get_u64(in + 80);
  r->nodes = vx_get_u64(in + 88);
  r->corners = vx_get_u64(in + 96);
  r->length = vx_get_u64(in + 104);
  r->check = vx_get_u32(in + 112);
  double d[FIT_DOUBLES];
  for (int i = 0; i < FIT_DOUBLES; i++) d[i] = vx_get_f64(in + 120 + 8 * i);
  fit_in(d, &r->fit);
  r->sec_build = vx_get_f64(in + 296);
  r->sec_encode = vx_get_f64(in + 304);
  vx_status hs = vx_tiled_header_check(&r->h, "tile record", err);
  if (hs != VX_OK) return hs;
  if ((r->code >> 3 * (r->h.depth - r->h.tile_depth)) != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "tile record: cell %llu is outside the grid of "
                        "tiles", (unsigned long long)r->code);
  int ok = is_finite(r->sec_build) && is_finite(r->sec_encode);
  for (int i = 0; i < FIT_DOUBLES; i++) ok = ok && is_finite(d[i]);
  for (int i = 0; i < 5; i++) /* sums: finite, areas not negative, all 0 without them */
    ok = ok && is_finite(r->color_sum[i]) && !(i < 2 && r->color_sum[i] < 0.0) &&
         (r->color_has || r->color_sum[i] == 0.0);
  if (!ok || !(r->fit.m.n >= 0.0) || !(r->fit.bound >= 0.0))
    return vx_error_set(err, VX_ERR_CORRUPT, "tile record: a value is not finite or negative");
  if (r->empty ? (r->voxels || r->nodes || r->length || r->check)
               : ((!r->voxels && !(r->h.prune_error > 0.0f)) || !r->nodes || r->length < 64))
    return vx_error_set(err, VX_ERR_CORRUPT, "tile record: %llu voxels, %llu nodes and %llu "
                        "bytes do not make a%s tile", (unsigned long long)r->voxels,
                        (unsigned long long)r->nodes, (unsigned long long)r->length,
                        r->empty ? "n empty" : "");
  return VX_OK;
}

vx_status vx_svo_file_check(const char *path, uint64_t *length, uint32_t *check, vx_error *err) {
  FILE *f = NULL;
  uint64_t size = 0;
  vx_status s = vx_svo_open_regular(path, &f, &size, err);
  if (s != VX_OK) return s;
  vx_svo_checker *ck = (vx_svo_checker *)vx_malloc(sizeof *ck);
  uint8_t *buf = (uint8_t *)vx_malloc(1u << 20);
  if (ck) ck->cc = vx_zstd_cctx();
  if (!ck || !buf || !ck->cc) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK && !vx_svo_check_begin(ck)) s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
  for (uint64_t done = 0; s == VX_OK && done < size;) {
    const size_t k = size - done < (1u << 20) ? (size_t)(size - done) : (size_t)1 << 20;
    if (fread(buf, 1, k, f) != k)
      s = vx_error_set(err, VX_ERR_IO, "cannot read '%s': %s", path,
                       ferror(f) ? strerror(errno) : "it shrank");
    else if (!vx_svo_check_feed(ck, buf, k, ZSTD_e_continue))
      s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
    done += k;
  }
  if (s == VX_OK && !vx_svo_check_feed(ck, NULL, 0, ZSTD_e_end))
    s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
  if (s == VX_OK) {
    *length = size;
    *check = vx_svo_check_value(ck);
  }
  if (ck) ZSTD_freeCCtx(ck->cc);
  vx_free(ck);
  vx_free(buf);
  fclose(f);
  return s;
}
