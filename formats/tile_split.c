/* SPDX-License-Identifier: Apache-2.0 */
/* tile_split.c - the parts file's header, index and records (tile_split.h has the byte map). */
#include "formats/tile_split.h"
#include "formats/svo_codec.h"

#include <math.h>

static const char split_magic[8] = {'V', 'X', 'S', 'P', 'L', 'T', '1', '\n'};

static uint32_t bytes_check(const uint8_t *p, uint64_t n) {
  uint32_t c = 0;
  (void)vx_svo_encoded_check(p, (size_t)n, &c, NULL);
  return c;
}

void vx_split_head_encode(const vx_split_head *h, uint8_t out[VX_SPLIT_HEADER]) {
  memset(out, 0, VX_SPLIT_HEADER);
  memcpy(out, split_magic, 8);
  vx_put_u32(out + 8, VX_SPLIT_HEADER);
  vx_put_u32(out + 12, h->sign_rule);
  vx_tiled_header_put(out + 16, &h->h);
  vx_put_u64(out + 72, h->triangles);
  vx_put_u64(out + 80, h->copies);
  vx_put_u64(out + 88, h->records);
  vx_put_u64(out + 96, h->runs);
  vx_put_u64(out + 104, h->tiles);
  vx_put_u64(out + 112, h->max_part);
  vx_put_u64(out + 120, h->index_at);
  vx_put_u32(out + 128, h->index_check);
  vx_put_u32(out + VX_SPLIT_HEADER - 4, bytes_check(out, VX_SPLIT_HEADER - 4));
}

static vx_status corrupt(vx_error *err, const char *name, const char *what) {
  return vx_error_set(err, VX_ERR_CORRUPT, "%s: not a complete parts file of this version (%s)",
                      name, what);
}

vx_status vx_split_head_decode(const uint8_t in[VX_SPLIT_HEADER], uint64_t file_size,
                               const char *name, vx_split_head *h, vx_error *err) {
  memset(h, 0, sizeof *h);
  if (file_size < VX_SPLIT_HEADER || memcmp(in, split_magic, 8) != 0)
    return corrupt(err, name, "no parts header");
  if (vx_get_u32(in + 8) != VX_SPLIT_HEADER)
    return corrupt(err, name, "another header size");
  if (vx_get_u32(in + VX_SPLIT_HEADER - 4) != bytes_check(in, VX_SPLIT_HEADER - 4))
    return corrupt(err, name, "the header's check does not match");
  for (uint32_t i = 132; i < VX_SPLIT_HEADER - 4; i++)
    if (in[i]) return corrupt(err, name, "a reserved byte is not 0");
  h->sign_rule = vx_get_u32(in + 12);
  vx_tiled_header_get(in + 16, &h->h);
  h->triangles = vx_get_u64(in + 72);
  h->copies = vx_get_u64(in + 80);
  h->records = vx_get_u64(in + 88);
  h->runs = vx_get_u64(in + 96);
  h->tiles = vx_get_u64(in + 104);
  h->max_part = vx_get_u64(in + 112);
  h->index_at = vx_get_u64(in + 120);
  h->index_check = vx_get_u32(in + 128);
  vx_status s = vx_tiled_header_check(&h->h, name, err);
  if (s != VX_OK) return s;
  const uint32_t K = h->h.depth - h->h.tile_depth;
  const uint64_t body = file_size - VX_SPLIT_HEADER;
  if (h->sign_rule > 1) return corrupt(err, name, "an unknown sign rule");
  if (h->triangles == 0 || h->triangles >= UINT32_MAX || h->copies >= h->triangles)
    return corrupt(err, name, "its triangle count");
  if (h->records == 0 || h->records > body / VX_SPLIT_RECORD ||
      h->index_at != VX_SPLIT_HEADER + h->records * VX_SPLIT_RECORD)
    return corrupt(err, name, "its records do not fit the file");
  if (h->runs == 0 || h->runs > h->records || h->runs > (file_size - h->index_at) / VX_SPLIT_RUN ||
      file_size - h->index_at != h->runs * VX_SPLIT_RUN)
    return corrupt(err, name, "its index does not end the file");
  if (h->tiles == 0 || h->tiles > h->runs || h->tiles > (UINT64_C(1) << 3 * K))
    return corrupt(err, name, "its tile count");
  if (h->max_part == 0 || h->max_part > h->records || h->max_part > h->triangles)
    return corrupt(err, name, "its largest part");
  return VX_OK;
}

void vx_split_runs_encode(const vx_split_run *r, uint64_t n, uint8_t *out) {
  for (uint64_t i = 0; i < n; i++, out += VX_SPLIT_RUN) {
    vx_put_u64(out, r[i].code);
    vx_put_u64(out + 8, r[i].at);
    vx_put_u64(out + 16, r[i].n);
    vx_put_u32(out + 24, r[i].check);
    vx_put_u32(out + 28, 0);
  }
}

vx_status vx_split_runs_decode(const uint8_t *in, const vx_split_head *h, const char *name,
                               vx_split_run *r, vx_error *err) {
  if (bytes_check(in, h->runs * VX_SPLIT_RUN) != h->index_check)
    return corrupt(err, name, "the index's check does not match");
  const uint32_t K = h->h.depth - h->h.tile_depth;
  uint64_t sum = 0, tiles = 0, part = 0;
  for (uint64_t i = 0; i < h->runs; i++, in += VX_SPLIT_RUN) {
    r[i].code = vx_get_u64(in);
    r[i].at = vx_get_u64(in + 8);
    r[i].n = vx_get_u64(in + 16);
    r[i].check = vx_get_u32(in + 24);
    if (vx_get_u32(in + 28) != 0) return corrupt(err, name, "a reserved index byte is not 0");
    if (r[i].code >= (UINT64_C(1) << 3 * K)) return corrupt(err, name, "a tile outside the grid");
    if (r[i].n == 0 || r[i].n > h->records || r[i].at < VX_SPLIT_HEADER ||
        (r[i].at - VX_SPLIT_HEADER) % VX_SPLIT_RECORD != 0 || r[i].at > h->index_at ||
        r[i].n > (h->index_at - r[i].at) / VX_SPLIT_RECORD)
      return corrupt(err, name, "a run outside the records");
    const int next = i == 0 || r[i].code != r[i - 1].code;
    if (!next && r[i].at <= r[i - 1].at) return corrupt(err, name, "runs out of order");
    if (i && r[i].code < r[i - 1].code) return corrupt(err, name, "tiles out of order");
    sum += r[i].n;
    tiles += next;
    part = next ? r[i].n : part + r[i].n;
    if (part > h->max_part) return corrupt(err, name, "a part larger than the largest");
  }
  if (sum != h->records) return corrupt(err, name, "the runs do not hold the records");
  if (tiles != h->tiles) return corrupt(err, name, "the runs do not name the tiles");
  return VX_OK;
}

void vx_split_record_put(uint8_t *out, uint32_t tri, const float *p) {
  vx_put_u32(out, tri);
  for (int k = 0; k < 9; k++) vx_put_f32(out + 4 + 4 * k, p[k]);
}

vx_status vx_split_run_decode(const uint8_t *raw, const vx_split_run *run,
                              const vx_split_head *h, const char *name, int verify,
                              int64_t *last, uint32_t *idx, float *pos, vx_error *err) {
  if (verify && bytes_check(raw, run->n * VX_SPLIT_RECORD) != run->check)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: the part of tile %llu is damaged (its check "
                        "does not match)", name, (unsigned long long)run->code);
  for (uint64_t t = 0; t < run->n; t++, raw += VX_SPLIT_RECORD) {
    const uint32_t i = vx_get_u32(raw);
    if ((int64_t)i <= *last || i >= h->triangles)
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: the part of tile %llu names triangle %u "
                          "out of order or past the mesh's %llu", name,
                          (unsigned long long)run->code, i, (unsigned long long)h->triangles);
    *last = i;
    idx[t] = i;
    for (int k = 0; k < 9; k++) {
      const float v = vx_get_f32(raw + 4 + 4 * k);
      if (!isfinite(v))
        return vx_error_set(err, VX_ERR_CORRUPT, "%s: the part of tile %llu holds a coordinate "
                            "that is not finite", name, (unsigned long long)run->code);
      pos[9 * t + k] = v;
    }
  }
  return VX_OK;
}
