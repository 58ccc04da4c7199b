/* SPDX-License-Identifier: Apache-2.0 */
/* svo_read_levels.c - the level sections of one tree decoded side by side (vx_svo_decode_levels,
 * svo_codec.h): svo_read.c's path for large trees.
 *
 * Level by level, a reader decodes one zstd frame after another on one thread, and a tree's time
 * goes to its largest frames: the voxels (8 bytes a voxel) and the deepest node levels. Here every
 * section is a task of its own, its check32 another, all on every core, so that a tree takes
 * about as long as its voxel frame. The voxels decompress straight into their array (a voxel's 8
 * corners are the section's 8 bytes), and a node level streams through a small buffer into its
 * nodes, so the raw sections are never held whole.
 *
 * The reader's promise stays: memory grows with what has been proven. Before anything of a
 * level's size is allocated, its count must be what the level above's masks name: the masks are
 * the first bytes of each node level's section, so each node level's stream is first decoded up
 * to the end of its masks, level after level on one thread (a twelfth of the node bytes), and the
 * tasks go on from there.
 *
 * Each node is linked to its children and checked as it is made, so the tree needs only
 * vx_octree_validate_shape afterwards.
 *
 * This path does not name errors. A damaged or unusual file (a frame not as the format wants it,
 * masks that do not add up, a checksum, a zstd window larger than this path streams, memory)
 * makes it give up and free what it allocated; svo_read.c then decodes the file level by level,
 * which reports the first failure in file order with the message it always gave.
 */
#include "formats/svo_codec.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <stddef.h>

#define RECORD 11u                         /* a node's record after its mask byte */
#define CHUNK (RECORD * 32768u)            /* a node level's decoded bytes, at a time */
#define MOST_WINDOW ((uint64_t)16 << 20)   /* the largest zstd window a node level streams */

_Static_assert(sizeof(vx_voxel) == VX_SVO_VOXEL_RECORD && offsetof(vx_voxel, c) == 0,
               "a voxel is its section's 8 bytes");

typedef struct levels_job {
  vx_octree *t;
  uint32_t levels, nodes; /* levels decoded; node levels among them */
  const uint8_t *const *z;
  const uint64_t *zsize;
  const uint32_t *zcheck;
  ZSTD_DCtx *dc[VX_MAX_DEPTH];   /* node level l's stream, stopped after its masks */
  ZSTD_inBuffer in[VX_MAX_DEPTH];
  uint8_t *mask[VX_MAX_DEPTH];   /* node level l's masks */
  uint32_t task[2 * (VX_MAX_DEPTH + 1)]; /* k < levels: decode section k; else check k - levels */
  uint32_t tasks;
  int failed; /* atomic */
} levels_job;

static uint64_t raw_bytes(const vx_octree *t, uint32_t l) {
  return t->level_count[l] * (l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
}

/* One step of a stream: 0 when it failed or went nowhere. */
static int stream_step(ZSTD_DCtx *dc, ZSTD_outBuffer *out, ZSTD_inBuffer *in, size_t *left) {
  const size_t o = out->pos, i = in->pos;
  const size_t r = ZSTD_decompressStream(dc, out, in);
  if (ZSTD_isError(r)) return 0;
  *left = r;
  return r == 0 || out->pos != o || in->pos != i;
}

/* Node level l's stream up to the end of its masks; the children they name must be the next
 * level's count. */
static int masks_of(levels_job *j, uint32_t l) {
  const vx_octree *t = j->t;
  const uint64_t n = t->level_count[l];
  ZSTD_frameHeader fh;
  if (ZSTD_getFrameHeader(&fh, j->z[l], (size_t)j->zsize[l]) != 0) return 0;
  const uint64_t raw = raw_bytes(t, l);
  if ((fh.windowSize < raw ? fh.windowSize : raw) > MOST_WINDOW) return 0;
  if (!(j->mask[l] = (uint8_t *)vx_malloc(n ? (size_t)n : 1))) return 0;
  if (!(j->dc[l] = vx_zstd_dctx())) return 0;
  j->in[l] = (ZSTD_inBuffer){j->z[l], (size_t)j->zsize[l], 0};
  ZSTD_outBuffer out = {j->mask[l], (size_t)n, 0};
  size_t left = 1;
  while (out.pos < out.size)
    if (left == 0 || !stream_step(j->dc[l], &out, &j->in[l], &left)) return 0;
  uint64_t children = 0;
  for (uint64_t i = 0; i < n; i++) children += vx_popcount8(j->mask[l][i]);
  return children == t->level_count[l + 1];
}

/* The rest of node level l's stream: its records, unpacked a chunk at a time, each node linked
 * to its children (vx_octree_link) and checked as vx_octree_validate checks it. */
static int decode_nodes(levels_job *j, uint32_t l) {
  const vx_octree *t = j->t;
  const uint64_t n = t->level_count[l];
  vx_node *nd = t->nodes + t->level_first[l];
  const int linked = l + 1 < j->levels;
  const uint64_t base = l + 1 < t->depth ? t->level_first[l + 1] : 0;
  uint64_t run = 0;
  int sound = 1;
  uint8_t *buf = (uint8_t *)vx_malloc(CHUNK);
  if (!buf) return 0;
  uint64_t done = 0;
  size_t have = 0, left = 1;
  int ok = 1;
  while (ok && left != 0) {
    ZSTD_outBuffer out = {buf, CHUNK, have};
    ok = stream_step(j->dc[l], &out, &j->in[l], &left);
    const uint64_t k = out.pos / RECORD;
    if (!ok || k > n - done) {
      ok = 0;
      break;
    }
    vx_svo_unpack_records(j->mask[l] + done, buf, k, nd + done);
    for (vx_node *q = nd + done; q < nd + done + k; q++) {
      sound &= vx_node_sound(q->info, q->d);
      q->child = linked ? (uint32_t)(base + run) : 0;
      run += vx_popcount8(vx_node_mask(q->info));
    }
    done += k;
    have = out.pos - (size_t)(k * RECORD);
    memmove(buf, buf + k * RECORD, have);
    if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) ok = 0;
  }
  vx_free(buf);
  return ok && sound && done == n && have == 0 && j->in[l].pos == j->in[l].size;
}

static void run_task(void *ctx, uint64_t item) {
  levels_job *j = (levels_job *)ctx;
  if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) return;
  const uint32_t k = j->task[item];
  int ok;
  if (k >= j->levels) { /* a section's check32 */
    const uint32_t l = k - j->levels;
    ZSTD_CCtx *cc = vx_zstd_cctx();
    uint32_t got = 0;
    ok = cc && vx_svo_bytes_check(cc, j->z[l], j->zsize[l], &got) && got == j->zcheck[l];
    ZSTD_freeCCtx(cc);
  } else if (k < j->nodes) {
    ok = decode_nodes(j, k);
  } else { /* the voxels, straight into their array */
    ZSTD_DCtx *dc = vx_zstd_dctx();
    const uint64_t raw = raw_bytes(j->t, k);
    uint8_t none;
    const size_t r = dc ? ZSTD_decompressDCtx(dc, raw ? (void *)j->t->voxels : &none, (size_t)raw,
                                              j->z[k], (size_t)j->zsize[k])
                        : 0;
    ok = dc && !ZSTD_isError(r) && r == raw;
    ZSTD_freeDCtx(dc);
  }
  if (!ok) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Tasks largest first (a section's raw bytes to decode, its compressed bytes to check), so that
 * the voxels start at once and no large task is left alone at the end. */
static void order_tasks(levels_job *j) {
  uint64_t cost[2 * (VX_MAX_DEPTH + 1)];
  j->tasks = 2 * j->levels;
  for (uint32_t k = 0; k < j->tasks; k++) {
    j->task[k] = k;
    cost[k] = k < j->levels ? raw_bytes(j->t, k) : j->zsize[k - j->levels];
  }
  for (uint32_t a = 1; a < j->tasks; a++)
    for (uint32_t b = a; b > 0 && cost[j->task[b - 1]] < cost[j->task[b]]; b--) {
      const uint32_t x = j->task[b];
      j->task[b] = j->task[b - 1];
      j->task[b - 1] = x;
    }
}

vx_status vx_svo_decode_levels(vx_octree *t, uint32_t levels, const uint8_t *const *z,
                               const uint64_t *zsize, const uint32_t *zcheck, int threads) {
  levels_job j;
  memset(&j, 0, sizeof j);
  j.t = t;
  j.levels = levels;
  j.nodes = levels < t->depth ? levels : t->depth;
  j.z = z;
  j.zsize = zsize;
  j.zcheck = zcheck;
  int ok = 1;
  for (uint32_t l = 0; ok && l < levels; l++)
    ok = vx_svo_frame_problem(z[l], zsize[l], raw_bytes(t, l), NULL) == NULL;
  for (uint32_t l = 0; ok && l < j.nodes; l++) ok = masks_of(&j, l);
  const uint64_t nodes = j.nodes ? t->level_first[j.nodes - 1] + t->level_count[j.nodes - 1] : 0;
  const uint64_t voxels = levels > t->depth ? t->level_count[t->depth] : 0;
  if (ok && nodes) ok = (t->nodes = (vx_node *)vx_malloc((size_t)nodes * sizeof(vx_node))) != NULL;
  if (ok && voxels)
    ok = (t->voxels = (vx_voxel *)vx_malloc((size_t)voxels * sizeof(vx_voxel))) != NULL;
  if (ok) {
    order_tasks(&j);
    vx_items_run(threads, j.tasks, run_task, &j);
    ok = !j.failed;
  }
  for (uint32_t l = 0; l < j.nodes; l++) {
    ZSTD_freeDCtx(j.dc[l]);
    vx_free(j.mask[l]);
  }
  if (!ok) {
    vx_free(t->nodes);
    vx_free(t->voxels);
    t->nodes = NULL;
    t->voxels = NULL;
    return VX_ERR_CORRUPT;
  }
  t->node_count = nodes;
  t->voxel_count = voxels;
  return VX_OK;
}

/* ---- colours ------------------------------------------------------------------------------- */

#define COLOR_PIECE ((uint64_t)1 << 16) /* parents whose children's colours are a task */

typedef struct colors_job {
  vx_octree *t;
  uint32_t levels, level;
  const uint8_t *const *z;
  const uint64_t *zsize;
  const uint32_t *zcheck;
  uint8_t *raw[VX_MAX_DEPTH + 1]; /* level l's decoded section */
  int failed;                     /* atomic */
} colors_job;

/* Item 2 l: colour section l decompressed; 2 l + 1: its check32. */
static void color_task(void *ctx, uint64_t item) {
  colors_job *j = (colors_job *)ctx;
  if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) return;
  const uint32_t l = (uint32_t)(item / 2);
  const uint64_t raw = j->t->level_count[l] * VX_SVO_COLOR_RECORD;
  int ok;
  if (item & 1u) {
    ZSTD_CCtx *cc = vx_zstd_cctx();
    uint32_t got = 0;
    ok = cc && vx_svo_bytes_check(cc, j->z[l], j->zsize[l], &got) && got == j->zcheck[l];
    ZSTD_freeCCtx(cc);
  } else {
    ZSTD_DCtx *dc = vx_zstd_dctx();
    uint8_t none;
    const size_t r = dc ? ZSTD_decompressDCtx(dc, raw ? j->raw[l] : &none, (size_t)raw, j->z[l],
                                              (size_t)j->zsize[l])
                        : 0;
    ok = dc && !ZSTD_isError(r) && r == raw;
    ZSTD_freeDCtx(dc);
  }
  if (!ok) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Piece k of level j->level's colours: the children of parents k COLOR_PIECE .. (k + 1)
 * COLOR_PIECE - 1, from the first child index of the first (the tree is linked). */
static void unpack_piece(void *ctx, uint64_t k) {
  colors_job *j = (colors_job *)ctx;
  vx_octree *t = j->t;
  const uint32_t l = j->level;
  const uint64_t n = t->level_count[l];
  uint32_t *c = l < t->depth ? t->node_color + t->level_first[l] : t->voxel_color;
  if (l == 0) {
    vx_svo_unpack_colors(j->raw[0], n, NULL, NULL, 0, c);
    return;
  }
  const uint64_t np = t->level_count[l - 1], a = k * COLOR_PIECE,
                 b = a + COLOR_PIECE < np ? a + COLOR_PIECE : np;
  const vx_node *up = t->nodes + t->level_first[l - 1];
  const uint64_t first = up[a].child - (l < t->depth ? t->level_first[l] : 0);
  vx_svo_unpack_colors_from(j->raw[l], n, first, up + a, t->node_color + t->level_first[l - 1] + a,
                            b - a, c);
}

vx_status vx_svo_decode_colors(vx_octree *t, const uint8_t *const *z, const uint64_t *zsize,
                               const uint32_t *zcheck, int threads) {
  colors_job j;
  memset(&j, 0, sizeof j);
  j.t = t;
  j.levels = t->levels_loaded;
  j.z = z;
  j.zsize = zsize;
  j.zcheck = zcheck;
  int ok = 1;
  uint8_t *all = NULL;
  uint64_t total = 0;
  for (uint32_t l = 0; ok && l < j.levels; l++) {
    const uint64_t raw = t->level_count[l] * VX_SVO_COLOR_RECORD;
    ok = vx_svo_frame_problem(z[l], zsize[l], raw, NULL) == NULL;
    total += raw;
  }
  if (ok) ok = (all = (uint8_t *)vx_malloc(total ? (size_t)total : 1)) != NULL;
  if (ok && t->node_count)
    ok = (t->node_color = (uint32_t *)vx_malloc((size_t)t->node_count * sizeof(uint32_t))) != NULL;
  if (ok && t->voxel_count)
    ok = (t->voxel_color = (uint32_t *)vx_malloc((size_t)t->voxel_count * sizeof(uint32_t))) !=
         NULL;
  if (ok) {
    uint64_t at = 0;
    for (uint32_t l = 0; l < j.levels; l++) {
      j.raw[l] = all + at;
      at += t->level_count[l] * VX_SVO_COLOR_RECORD;
    }
    vx_items_run(threads, 2 * (uint64_t)j.levels, color_task, &j);
    ok = !j.failed;
  }
  for (uint32_t l = 0; ok && l < j.levels; l++) { /* each level from its parents' colours */
    j.level = l;
    vx_items_run(l ? threads : 1, l ? (t->level_count[l - 1] + COLOR_PIECE - 1) / COLOR_PIECE : 1,
                 unpack_piece, &j);
  }
  vx_free(all);
  if (!ok) {
    vx_free(t->node_color);
    vx_free(t->voxel_color);
    t->node_color = NULL;
    t->voxel_color = NULL;
    return VX_ERR_CORRUPT;
  }
  return VX_OK;
}
