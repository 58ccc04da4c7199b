/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_svo.c - the .svo codec: round trip, partial reads, and rejection of every
 * truncated prefix, single-byte corruptions, hostile headers with valid checksums, newer
 * versions, memory limits; atomic writes under a full disk. */
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_file.h"
#include "svo/lod.h"
#include "check.h"
#include "svo_both_ways.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return check_xorshift(&rng_state); }
static char tmpdir[256];

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A tree over n random voxels with random payloads in every field the file stores. */
static void random_tree(uint32_t depth, uint64_t n, vx_octree *t) {
  uint64_t cells = (uint64_t)1 << (3 * depth);
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  for (uint64_t i = 0; i < n; i++) codes[i] = ((uint64_t)rnd() << 20 ^ rnd()) % cells;
  qsort(codes, n, sizeof *codes, cmp_u64);
  uint64_t m = 0;
  for (uint64_t i = 0; i < n; i++)
    if (m == 0 || codes[i] != codes[m - 1]) codes[m++] = codes[i];
  vx_voxel *f = (vx_voxel *)malloc(m * sizeof *f);
  for (uint64_t i = 0; i < m; i++)
    for (int k = 0; k < 8; k++) f[i].c[k] = (int8_t)(rnd() % 255 - 127);
  CHECK(vx_octree_build(depth, codes, f, m, t, NULL) == VX_OK);
  free(codes);
  free(f);
  for (uint64_t k = 0; k < t->node_count; k++) {
    vx_node *nd = &t->nodes[k];
    nd->info = vx_node_info(vx_node_mask(nd->info), rnd() & 255, rnd() & 255,
                            (rnd() & 1) | (rnd() & 63) << 2); /* plane ok, drawn-plane bound */
    nd->normal = rnd() ^ rnd() << 16;
    nd->d = (float)((double)rnd() / 4294967296.0 * 1.8 - 0.9);
  }
  t->band = 2.5f;
  t->prune_error = 0.25f;
  t->xf.origin[0] = -1.25;
  t->xf.origin[1] = 3.5e-3;
  t->xf.origin[2] = 1e5;
  t->xf.scale = 0.0078125;
}

static int trees_equal(const vx_octree *a, const vx_octree *b) {
  if (a->depth != b->depth || a->levels_loaded != b->levels_loaded ||
      a->node_count != b->node_count || a->voxel_count != b->voxel_count)
    return 0;
  if (memcmp(a->level_count, b->level_count, sizeof a->level_count) != 0) return 0;
  if (memcmp(a->level_first, b->level_first, sizeof(uint64_t) * a->depth) != 0) return 0;
  if (memcmp(&a->xf, &b->xf, sizeof a->xf) != 0) return 0;
  if (memcmp(&a->band, &b->band, 4) != 0 || memcmp(&a->prune_error, &b->prune_error, 4) != 0) return 0;
  if (a->node_count && memcmp(a->nodes, b->nodes, a->node_count * sizeof(vx_node)) != 0) return 0;
  if (a->voxel_count && memcmp(a->voxels, b->voxels, a->voxel_count * sizeof(vx_voxel)) != 0) return 0;
  return 1;
}


static uint8_t *encode(const vx_octree *t, size_t *n) {
  uint8_t *buf = NULL;
  vx_error e;
  vx_status s = vx_svo_encode(t, 0, &buf, n, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return buf;
}

static void svo_file_round_trip_keeps_every_byte(void) {
  for (uint32_t depth = 1; depth <= 7; depth++) {
    vx_octree t, r;
    random_tree(depth, depth < 3 ? 5 : 60 * depth * depth, &t);
    size_t n;
    uint8_t *buf = encode(&t, &n);
    vx_svo_file_info info;
    vx_error e;
    vx_status s = vx_svo_decode(buf, n, NULL, &r, &info, &e);
    CHECK_MSG(s == VX_OK, "depth %u: %s", depth, e.msg);
    CHECK(trees_equal(&t, &r));
    CHECK(vx_octree_validate(&r, NULL) == VX_OK);
    CHECK(info.version == 2 && info.file_bytes == n);
    uint64_t sum = info.header_bytes;
    for (uint32_t l = 0; l <= depth; l++) sum += info.level_disk_bytes[l];
    CHECK(sum == n);
    free(buf);
    vx_octree_free(&t);
    vx_octree_free(&r);
  }
}

/* A tree of more than 4 MiB decoded goes side by side on every core by default, with node levels
 * longer than the decoder's buffer: the same tree as level by level, for whole and partial reads,
 * from memory and from a file. */
static void svo_file_large_tree_side_by_side(void) {
  vx_octree t;
  random_tree(9, 700000, &t);
  CHECK(t.level_count[8] > 65536 && t.voxel_count * 8 > ((uint64_t)4 << 20));
  size_t n;
  uint8_t *buf = encode(&t, &n);
  char path[600];
  snprintf(path, sizeof path, "%s/large.svo", tmpdir);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(buf, 1, n, f) == n);
  if (f) fclose(f);
  for (int L = -1; L <= 8; L += 3) {
    for (int threads = 0; threads <= 2; threads++) {
      vx_svo_read_opts o = {L, 0, 0, threads};
      vx_octree r, rf;
      vx_error e;
      CHECK_MSG(decode_both(buf, n, &o, &r, &e) == VX_OK, "L=%d: %s", L, e.msg);
      vx_svo_file_info fi;
      CHECK_MSG(vx_svo_read(path, &o, &rf, &fi, &e) == VX_OK, "L=%d: %s", L, e.msg);
      CHECK(trees_equal(&r, &rf));
      /* by default side by side only when large: reads to levels 2 and 5 are not */
      CHECK(fi.side_by_side == (threads == 1 ? 0 : threads > 1 || L < 0 || L == 8));
      if (L < 0) CHECK(trees_equal(&t, &r));
      CHECK(vx_octree_validate(&r, NULL) == VX_OK);
      vx_octree_free(&r);
      vx_octree_free(&rf);
    }
  }
  /* a few damaged bytes in each level's section: the same message both ways */
  vx_octree h;
  vx_error e;
  vx_svo_file_info info;
  CHECK(vx_svo_decode(buf, n, NULL, &h, &info, &e) == VX_OK);
  vx_octree_free(&h);
  uint64_t at = info.header_bytes;
  for (uint32_t l = 0; l <= 9; at += info.level_disk_bytes[l], l++) {
    for (int k = 0; k < 3; k++) {
      const uint64_t i = at + (info.level_disk_bytes[l] * (uint64_t)(2 * k + 1)) / 6;
      buf[i] ^= 0x40;
      vx_octree r;
      CHECK_MSG(decode_both(buf, n, NULL, &r, &e) == VX_ERR_CORRUPT, "level %u byte %llu", l,
                (unsigned long long)i);
      buf[i] ^= 0x40;
    }
  }
  unlink(path);
  free(buf);
  vx_octree_free(&t);
}

static void svo_file_round_trip_pruned_tree(void) {
  vx_octree t, r;
  random_tree(6, 3000, &t);
  for (uint64_t i = 0; i < t.voxel_count; i++)
    for (int k = 0; k < 8; k++) t.voxels[i].c[k] = (int8_t)((k & 1) * 20 - 10);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  CHECK(vx_octree_prune(&t, 3.0f, NULL) == VX_OK);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  vx_error e;
  CHECK_MSG(vx_svo_decode(buf, n, NULL, &r, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK(trees_equal(&t, &r));
  free(buf);
  vx_octree_free(&t);
  vx_octree_free(&r);
}

static void svo_file_partial_read_loads_prefix_levels(void) {
  vx_octree t;
  random_tree(6, 2000, &t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  for (int L = -1; L <= 8; L++) {
    vx_svo_read_opts o = {L, 0, 0, 0};
    vx_octree r;
    vx_error e;
    CHECK_MSG(decode_both(buf, n, &o, &r, &e) == VX_OK, "L=%d: %s", L, e.msg);
    uint32_t want = (L < 0 || L >= 6) ? 7 : (uint32_t)L + 1;
    CHECK(r.levels_loaded == want);
    uint64_t nodes = 0;
    for (uint32_t l = 0; l < want && l < 6; l++) nodes += t.level_count[l];
    CHECK(r.node_count == nodes);
    CHECK((want == 7) == (r.voxels != NULL));
    for (uint32_t l = 0; l <= 6; l++) CHECK(r.level_count[l] == t.level_count[l]);
    for (uint64_t k = 0; k < nodes; k++) {
      int last = k >= r.level_first[want - 1] && want < 7;
      CHECK(r.nodes[k].info == t.nodes[k].info && r.nodes[k].normal == t.nodes[k].normal &&
            memcmp(&r.nodes[k].d, &t.nodes[k].d, 4) == 0);
      if (!last) CHECK(r.nodes[k].child == t.nodes[k].child);
    }
    CHECK(vx_octree_validate(&r, NULL) == VX_OK);
    vx_octree_free(&r);
  }
  free(buf);
  vx_octree_free(&t);
}

static void svo_file_rejects_every_truncated_prefix(void) {
  vx_octree t;
  random_tree(4, 60, &t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  int rejected = 0;
  for (size_t k = 0; k < n; k++) {
    uint8_t *cut = (uint8_t *)malloc(k ? k : 1);
    memcpy(cut, buf, k);
    vx_octree r;
    vx_error e;
    memset(&e, 0, sizeof e);
    vx_status s = vx_svo_decode(cut, k, NULL, &r, NULL, &e);
    CHECK_MSG(s != VX_OK, "prefix %zu accepted", k);
    CHECK(r.nodes == NULL && r.voxels == NULL);
    CHECK(e.msg[0] != 0);
    rejected += s != VX_OK;
    free(cut);
  }
  fprintf(stderr, "  truncation: %d of %zu prefixes rejected\n", rejected, n);
  free(buf);
  vx_octree_free(&t);
}

static void svo_file_single_byte_corruption_sweep(void) {
  static const uint8_t patterns[] = {0x01, 0x02, 0x10, 0x80, 0xff};
  long tried = 0, rejected = 0, accepted_identical = 0;
  for (int which = 0; which < 2; which++) {
    vx_octree t;
    random_tree(which ? 5 : 3, which ? 400 : 20, &t);
    size_t n;
    uint8_t *buf = encode(&t, &n);
    for (size_t i = 0; i < n; i++) {
      for (size_t p = 0; p < sizeof patterns; p++) {
        buf[i] ^= patterns[p];
        vx_octree r;
        vx_error e;
        /* side by side too for one pattern or two of each byte */
        vx_status s = (i + p) % 3 ? vx_svo_decode(buf, n, NULL, &r, NULL, &e)
                                  : decode_both(buf, n, NULL, &r, &e);
        tried++;
        if (s != VX_OK) {
          rejected++;
          CHECK(r.nodes == NULL && r.voxels == NULL);
        } else {
          CHECK(vx_octree_validate(&r, NULL) == VX_OK);
          accepted_identical += trees_equal(&t, &r);
          CHECK_MSG(0, "corruption at byte %zu ^ 0x%02x accepted (%s)", i, patterns[p],
                    trees_equal(&t, &r) ? "same tree" : "different tree");
          vx_octree_free(&r);
        }
        buf[i] ^= patterns[p];
      }
    }
    free(buf);
    vx_octree_free(&t);
  }
  fprintf(stderr, "  corruption sweep: %ld corrupted files, %ld rejected, %ld accepted (%ld same tree)\n",
          tried, rejected, tried - rejected, accepted_identical);
}

/* Version 1 (before the drawn-plane bound codes in flags bits 2..7) still reads, as long as those
 * bits are 0 there. */
static void svo_file_reads_version_1(void) {
  vx_octree t, r;
  random_tree(4, 200, &t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  buf[8] = 1;
  vx_error e;
  CHECK(vx_svo_decode(buf, n, NULL, &r, NULL, &e) == VX_ERR_CORRUPT);
  CHECK_MSG(strstr(e.msg, "version-1 file") != NULL, "%s", e.msg);
  free(buf);
  for (uint64_t k = 0; k < t.node_count; k++)
    t.nodes[k].info = vx_node_info(vx_node_mask(t.nodes[k].info), vx_node_errmax_code(t.nodes[k].info),
                                   vx_node_errrms_code(t.nodes[k].info),
                                   vx_node_flags(t.nodes[k].info) & 3u);
  buf = encode(&t, &n);
  buf[8] = 1;
  vx_svo_file_info info;
  CHECK_MSG(vx_svo_decode(buf, n, NULL, &r, &info, &e) == VX_OK, "%s", e.msg);
  CHECK(info.version == 1 && trees_equal(&t, &r));
  vx_octree_free(&r);
  free(buf);
  vx_octree_free(&t);
}

static void svo_file_rejects_newer_version(void) {
  vx_octree t;
  random_tree(3, 10, &t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  buf[8] = 4;
  vx_octree r;
  vx_error e;
  CHECK(vx_svo_decode(buf, n, NULL, &r, NULL, &e) == VX_ERR_VERSION);
  CHECK_MSG(strstr(e.msg, "newer voxlod (file version 4, this reads up to 2)") != NULL, "%s", e.msg);
  buf[8] = 3; /* a tiled file's version: not one tree (formats/svo_tiled.h reads it) */
  CHECK(vx_svo_decode(buf, n, NULL, &r, NULL, &e) == VX_ERR_FORMAT);
  CHECK_MSG(strstr(e.msg, "a tiled tree") != NULL, "%s", e.msg);
  buf[8] = 2;
  memcpy(buf, "PK\3\4xxxx", 8);
  CHECK(vx_svo_decode(buf, n, NULL, &r, NULL, &e) == VX_ERR_FORMAT);
  free(buf);
  vx_octree_free(&t);
}

static void svo_file_respects_memory_limit(void) {
  vx_octree t;
  random_tree(5, 500, &t);
  size_t n;
  uint8_t *buf = encode(&t, &n);
  vx_svo_read_opts o = {-1, 1000, 0, 0};
  vx_octree r;
  vx_error e;
  CHECK(vx_svo_decode(buf, n, &o, &r, NULL, &e) == VX_ERR_LIMIT);
  CHECK(r.nodes == NULL);
  o.mem_limit = 1 << 20;
  CHECK(vx_svo_decode(buf, n, &o, &r, NULL, &e) == VX_OK);
  vx_octree_free(&r);
  free(buf);
  vx_octree_free(&t);
}

/* ---- hostile files with valid checksums: decode the header, edit, re-frame ----------------- */

typedef struct parts {
  uint8_t hdr[1024];
  size_t hdr_size;
  uint8_t *sections; /* raw, decompressed per level */
  size_t sec_raw[16];
  uint8_t *sec_data[16];
} parts;

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static size_t zframe(const void *src, size_t n, uint8_t *dst, size_t cap) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  size_t z = ZSTD_compress2(c, dst, cap, src, n);
  ZSTD_freeCCtx(c);
  CHECK(!ZSTD_isError(z));
  return z;
}

/* Splits a file into its decoded header and decoded sections. */
static void split(const uint8_t *buf, parts *p, uint32_t *depth) {
  uint32_t hz = (uint32_t)rd64(buf + 16) & 0xffffffffu;
  p->hdr_size = ZSTD_decompress(p->hdr, sizeof p->hdr, buf + 32, hz);
  CHECK(!ZSTD_isError(p->hdr_size));
  *depth = p->hdr[0];
  size_t off = 32 + hz;
  for (uint32_t l = 0; l <= *depth; l++) {
    const uint8_t *e = p->hdr + 48 + 32 * l;
    size_t z = (size_t)rd64(e + 8);
    p->sec_raw[l] = (size_t)rd64(e + 16);
    p->sec_data[l] = (uint8_t *)malloc(p->sec_raw[l] + 1);
    CHECK(ZSTD_decompress(p->sec_data[l], p->sec_raw[l], buf + off, z) == p->sec_raw[l]);
    off += z;
  }
}

/* XXH64 low 32 bits of bytes, from a one-shot zstd frame's checksum (independent of the codec's
 * streaming route). */
static uint32_t frame_check(const uint8_t *p, size_t n) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *tmp = (uint8_t *)malloc(cap);
  size_t z = zframe(p, n, tmp, cap);
  uint32_t c = (uint32_t)tmp[z - 4] | (uint32_t)tmp[z - 3] << 8 | (uint32_t)tmp[z - 2] << 16 |
               (uint32_t)tmp[z - 1] << 24;
  free(tmp);
  return c;
}

/* Reassembles with correct frame sizes and checks. */
static uint8_t *join(parts *p, uint32_t depth, size_t *n) {
  size_t cap = 1 << 20;
  uint8_t *out = (uint8_t *)malloc(cap);
  uint8_t *secs = (uint8_t *)malloc(cap);
  size_t used = 0;
  for (uint32_t l = 0; l <= depth; l++) {
    size_t z = zframe(p->sec_data[l], p->sec_raw[l], secs + used, cap - used);
    wr64(p->hdr + 48 + 32 * l + 8, z);
    wr32(p->hdr + 48 + 32 * l + 24, frame_check(secs + used, z));
    used += z;
  }
  memcpy(out, "VXLOD\0\r\n", 8);
  wr32(out + 8, 2);
  wr32(out + 12, 0);
  size_t hz = zframe(p->hdr, p->hdr_size, out + 32, cap - 32);
  wr32(out + 16, (uint32_t)hz);
  wr32(out + 20, (uint32_t)p->hdr_size);
  wr32(out + 24, frame_check(out + 32, hz));
  wr32(out + 28, 0);
  memcpy(out + 32 + hz, secs, used);
  free(secs);
  *n = 32 + hz + used;
  return out;
}

static void free_parts(parts *p, uint32_t depth) {
  for (uint32_t l = 0; l <= depth; l++) free(p->sec_data[l]);
}

static vx_status decode_edited(const vx_octree *t, int edit, vx_error *e) {
  size_t n;
  uint8_t *buf = encode(t, &n);
  parts p;
  uint32_t depth;
  split(buf, &p, &depth);
  free(buf);
  uint8_t *lv = p.hdr + 48;
  switch (edit) {
  case 0: break;
  case 11: p.hdr[48 + 32 * 2 + 28] = 1; break;                 /* reserved field */                                              /* control: re-framed file is fine */
  case 1: wr64(lv, 2); break;                                 /* two roots */
  case 2: wr64(lv + 32 * 2, rd64(lv + 32) * 8 + 1); break;    /* level 2 > 8 * level 1 */
  case 3: wr64(lv + 32 * 1 + 16, rd64(lv + 32 + 16) + 12); break; /* raw size != count * 12 */
  case 4: { float nanf_ = NAN; memcpy(p.hdr + 4, &nanf_, 4); } break; /* band NaN */
  case 5: { double inf = INFINITY; memcpy(p.hdr + 40, &inf, 8); } break; /* scale inf */
  case 6: p.sec_data[1][0] ^= 0x01; break;                    /* a mask bit: links no longer add up */
  case 7: p.sec_data[0][3 * 1] = 0x02; break;                 /* root marked as a pruned leaf */
  case 8: p.hdr[0] = 15; break;                               /* depth 15 */
  case 9: { uint64_t c = rd64(lv + 32 * depth); wr64(lv + 32 * depth, c * 4);
            wr64(lv + 32 * depth + 16, c * 4 * 8); } break;   /* voxel count inflated, sizes agree */
  case 10: memset(p.sec_data[0], 0, 1); p.sec_data[0][3] = 0; break; /* root without children */
  }
  size_t m;
  uint8_t *f = join(&p, depth, &m);
  free_parts(&p, depth);
  vx_octree r;
  vx_status s = decode_both(f, m, NULL, &r, e);
  if (s == VX_OK) vx_octree_free(&r);
  free(f);
  return s;
}

static void svo_file_rejects_hostile_headers_with_valid_checksums(void) {
  vx_octree t;
  random_tree(4, 80, &t);
  vx_error e;
  CHECK_MSG(decode_edited(&t, 0, &e) == VX_OK, "%s", e.msg);
  for (int edit = 1; edit <= 11; edit++) {
    vx_status s = decode_edited(&t, edit, &e);
    CHECK_MSG(s == VX_ERR_CORRUPT, "edit %d gave %s", edit, vx_status_str(s));
    fprintf(stderr, "  edit %d: %s\n", edit, e.msg);
  }
  vx_octree_free(&t);
}

/* ---- a decompression bomb: a header that claims full levels the sections do not have --------- */

/* A zstd frame (with checksum and content size) of n zero bytes, streamed: the raw bytes never
 * exist in memory. Returns its size (dst holds cap bytes). */
static size_t zeros_frame(uint64_t n, uint8_t *dst, size_t cap) {
  static uint8_t zero[1 << 16];
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setPledgedSrcSize(c, n);
  ZSTD_outBuffer out = {dst, cap, 0};
  uint64_t fed = 0;
  size_t r;
  do {
    size_t k = n - fed < sizeof zero ? (size_t)(n - fed) : sizeof zero;
    ZSTD_inBuffer in = {zero, k, 0};
    fed += k;
    r = ZSTD_compressStream2(c, &out, &in, fed == n ? ZSTD_e_end : ZSTD_e_continue);
    CHECK(!ZSTD_isError(r) && in.pos == in.size);
  } while (fed < n || r != 0);
  ZSTD_freeCCtx(c);
  return out.pos;
}

/* A depth-D file whose header declares 8^l cells at every level l (the most the octree allows)
 * while level 1's masks name no children; every frame and check is valid. */
static uint8_t *bomb(uint32_t depth, size_t *n) {
  size_t cap = (size_t)1 << 22;
  uint8_t *secs = (uint8_t *)malloc(cap), *out = (uint8_t *)malloc(cap);
  uint8_t hdr[48 + 32 * 16];
  memset(hdr, 0, sizeof hdr);
  wr32(hdr, depth);
  float band = 2.0f;
  memcpy(hdr + 4, &band, 4);
  double scale = 1.0;
  memcpy(hdr + 40, &scale, 8);
  size_t used = 0;
  for (uint32_t l = 0; l <= depth; l++) {
    uint64_t count = (uint64_t)1 << (3 * l), raw = count * (l < depth ? 12 : 8);
    size_t z;
    if (l == 0) {
      uint8_t root[12] = {0xff}; /* eight children, a plain node */
      z = zframe(root, sizeof root, secs + used, cap - used);
    } else {
      z = zeros_frame(raw, secs + used, cap - used); /* masks 0: no children below level 1 */
    }
    uint8_t *e = hdr + 48 + 32 * l;
    wr64(e, count);
    wr64(e + 8, z);
    wr64(e + 16, raw);
    wr32(e + 24, frame_check(secs + used, z));
    used += z;
  }
  size_t hsize = 48 + 32 * (depth + 1);
  memcpy(out, "VXLOD\0\r\n", 8);
  wr32(out + 8, 2);
  wr32(out + 12, 0);
  size_t hz = zframe(hdr, hsize, out + 32, cap - 32);
  wr32(out + 16, (uint32_t)hz);
  wr32(out + 20, (uint32_t)hsize);
  wr32(out + 24, frame_check(out + 32, hz));
  wr32(out + 28, 0);
  memcpy(out + 32 + hz, secs, used);
  free(secs);
  *n = 32 + hz + used;
  return out;
}

static long peak_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* The reader allocates a level only after the level above proved its count: a 9-level claim of
 * 1.4 GiB of nodes and 1 GiB of voxels in a ~60 KB file is refused at level 1, at once. */
static void svo_file_decompression_bomb_is_refused_early(void) {
  size_t n;
  uint8_t *f = bomb(9, &n);
  char path[600];
  snprintf(path, sizeof path, "%s/bomb.svo", tmpdir);
  FILE *o = fopen(path, "wb");
  CHECK(o && fwrite(f, 1, n, o) == n);
  if (o) fclose(o);
  free(f);
  long before = peak_kib();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  vx_octree t;
  vx_error e;
  vx_svo_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.max_level = -1;
  ro.mem_limit = (uint64_t)8 << 30; /* what it claims is under the limit: only the masks stop it */
  vx_status s = vx_svo_read(path, &ro, &t, NULL, &e);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  long grew = peak_kib() - before;
  CHECK_MSG(s == VX_ERR_CORRUPT && strstr(e.msg, "level 1") && strstr(e.msg, "masks"), "status %d: %s", (int)s, e.msg);
  CHECK_MSG(sec < 2.0 && grew < 64 * 1024, "%zu-byte bomb: %.2f s, peak RSS grew %ld KiB", n, sec,
            grew);
  fprintf(stderr, "  %zu-byte file claiming 9 full levels: refused in %.3f s, peak RSS +%ld KiB: "
          "%s\n", n, sec, grew, e.msg);
  unlink(path);
}

/* ---- files --------------------------------------------------------------------------------- */


static int dir_has_temporaries(void) {
  DIR *d = opendir(tmpdir);
  struct dirent *de;
  int found = 0;
  while (d && (de = readdir(d)) != NULL) found |= strstr(de->d_name, ".tmp.") != NULL;
  if (d) closedir(d);
  return found;
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc(sz ? (size_t)sz : 1);
  *n = fread(b, 1, (size_t)sz, f);
  fclose(f);
  return b;
}

static void svo_file_write_read_and_errors(void) {
  vx_octree t, r;
  random_tree(5, 300, &t);
  char path[512];
  snprintf(path, sizeof path, "%s/a.svo", tmpdir);
  vx_error e;
  CHECK_MSG(vx_svo_write(path, &t, 0, NULL, NULL, &e) == VX_OK, "%s", e.msg);
  vx_svo_file_info info;
  CHECK_MSG(vx_svo_read(path, NULL, &r, &info, &e) == VX_OK, "%s", e.msg);
  CHECK(trees_equal(&t, &r));
  struct stat st;
  CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == info.file_bytes);
  vx_octree_free(&r);
  vx_svo_read_opts o = {2, 0, 0, 0};
  CHECK(vx_svo_read(path, &o, &r, NULL, &e) == VX_OK && r.levels_loaded == 3);
  vx_octree_free(&r);
  CHECK(!dir_has_temporaries());

  char bad[600];
  snprintf(bad, sizeof bad, "%s/missing.svo", tmpdir);
  CHECK(vx_svo_read(bad, NULL, &r, NULL, &e) == VX_ERR_IO && strstr(e.msg, "No such file"));
  CHECK(vx_svo_read(tmpdir, NULL, &r, NULL, &e) == VX_ERR_IO);
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.svo", tmpdir);
  CHECK(vx_svo_write(bad, &t, 0, NULL, NULL, &e) == VX_ERR_IO && strstr(e.msg, "does not exist"));
  snprintf(bad, sizeof bad, "%s/a.svo/x.svo", tmpdir); /* parent is a file */
  CHECK(vx_svo_write(bad, &t, 0, NULL, NULL, &e) == VX_ERR_IO);
  CHECK(vx_svo_write(tmpdir, &t, 0, NULL, NULL, &e) == VX_ERR_IO); /* a directory */
  /* An invalid tree is refused before the old file is touched. */
  size_t n0, n1;
  uint8_t *before = slurp(path, &n0);
  vx_octree broken = t;
  broken.band = -1.0f;
  CHECK(vx_svo_write(path, &broken, 0, NULL, NULL, &e) != VX_OK);
  uint8_t *after = slurp(path, &n1);
  CHECK(n0 == n1 && memcmp(before, after, n0) == 0);
  free(before);
  free(after);
  CHECK(!dir_has_temporaries());
  vx_octree_free(&t);
}

static void svo_file_full_disk_keeps_old_file(void) {
  vx_octree small, big;
  random_tree(3, 10, &small);
  random_tree(7, 20000, &big);
  char path[512];
  snprintf(path, sizeof path, "%s/b.svo", tmpdir);
  CHECK(vx_svo_write(path, &small, 0, NULL, NULL, NULL) == VX_OK);
  size_t n0, n1;
  uint8_t *before = slurp(path, &n0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &rl);
    vx_error e;
    vx_status s = vx_svo_write(path, &big, 1, NULL, NULL, &e);
    if (s == VX_ERR_IO) fprintf(stderr, "  full disk: %s\n", e.msg);
    _exit(s == VX_ERR_IO ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  uint8_t *after = slurp(path, &n1);
  CHECK(after && n0 == n1 && memcmp(before, after, n0) == 0);
  CHECK(!dir_has_temporaries());
  vx_octree r;
  CHECK(vx_svo_read(path, NULL, &r, NULL, NULL) == VX_OK && trees_equal(&small, &r));
  vx_octree_free(&r);
  free(before);
  free(after);
  vx_octree_free(&small);
  vx_octree_free(&big);
}

static void cleanup_dir(void) {
  DIR *d = opendir(tmpdir);
  struct dirent *de;
  char p[600];
  while (d && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", tmpdir, de->d_name);
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(tmpdir);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_svo.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("cannot make a temporary directory");
  RUN(svo_file_round_trip_keeps_every_byte);
  RUN(svo_file_round_trip_pruned_tree);
  RUN(svo_file_large_tree_side_by_side);
  RUN(svo_file_partial_read_loads_prefix_levels);
  RUN(svo_file_rejects_every_truncated_prefix);
  RUN(svo_file_single_byte_corruption_sweep);
  RUN(svo_file_rejects_newer_version);
  RUN(svo_file_reads_version_1);
  RUN(svo_file_respects_memory_limit);
  RUN(svo_file_rejects_hostile_headers_with_valid_checksums);
  RUN(svo_file_decompression_bomb_is_refused_early);
  RUN(svo_file_write_read_and_errors);
  RUN(svo_file_full_disk_keeps_old_file);
  cleanup_dir();
  return check_summary();
}
