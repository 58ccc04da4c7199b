/* svo_file.c - the .svo codec: a fixed little-endian prologue, a header in a checksummed zstd
 * frame, then one checksummed zstd frame per level (formats/SVO_FORMAT.md is the byte map).
 *
 * Encoding. A node level is stored as all its child masks (one byte each), then one 11-byte
 * record per node (errors, flags, normal, plane offset). Child indices are not stored: they are
 * the running sums of the masks' popcounts, rebuilt by vx_tree_link() (svo.c), which doubles as a
 * consistency check. Voxels are stored as they are, 8 corner bytes per voxel. Both layouts were
 * chosen by measurement against the alternatives (full structure-of-arrays, byte planes,
 * transposed corners): see "Why this layout" in SVO_FORMAT.md.
 *
 * Integrity. Every zstd frame carries its content checksum, and the header stores, for each
 * frame, the low 32 bits of XXH64 of the frame's compressed bytes (taken from zstd itself, see
 * bytes_check), so that a damaged byte that would still decode to the same content is rejected
 * too: every single-byte change of a file is detected.
 *
 * Decoding distrusts every byte. Before any allocation: magic, version, flags, the header frame
 * (checksum verified by zstd), depth, finite transform and band, level counts against the octree's
 * bounds (count[0] = 1, count[l] <= 8^l, count[l+1] <= 8 count[l]), each section's declared raw
 * size against count * record size, the sum of section sizes against the file size (exactly: a
 * truncated or padded file is rejected) and the decoded total against the memory limit. Each
 * section must be exactly one zstd frame with a content checksum and the declared content size.
 * After decoding, vx_tree_link() and vx_tree_validate() must pass. Every failure frees what was
 * allocated and leaves the output tree zeroed.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_file.h"
#include "formats/atomic_file.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/svo_codec.h"

int vx_svo_zstd_level(int requested, uint64_t raw_total) {
  int level = requested > 0               ? requested
              : raw_total < VX_SVO_SMALL_RAW ? 19
              : raw_total < VX_SVO_BIG_RAW   ? 9
                                             : 3;
  return level > ZSTD_maxCLevel() ? ZSTD_maxCLevel() : level;
}

int vx_svo_zstd_workers(uint64_t raw_total) {
  if (raw_total < VX_SVO_BIG_RAW) return 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 1 ? (int)(cpus > 16 ? 16 : cpus) : 0;
}

static uint64_t header_size(uint32_t depth) {
  return VX_SVO_HEADER_FIXED + (uint64_t)VX_SVO_LEVEL_ENTRY * (depth + 1);
}

/* The check of n bytes (svo_codec.h's checker, in one call). */
static int bytes_check(ZSTD_CCtx *cc, const uint8_t *p, uint64_t n, uint32_t *check) {
  vx_svo_checker c;
  c.cc = cc;
  if (!vx_svo_check_begin(&c) || !vx_svo_check_feed(&c, p, (size_t)n, ZSTD_e_end)) return 0;
  *check = vx_svo_check_value(&c);
  return 1;
}

/* ---- section packing ----------------------------------------------------------------------- */

/* Masks first (one byte per node: the topology, which compresses on its own), then one 11-byte
 * record per node: errmax, errrms, flags, normal u32 LE, d f32 LE. */
/* Nodes i in [lo, hi) of a level of `count`: masks first, then 11-byte records. */
static void pack_node_range(const vx_node *n, uint64_t count, uint64_t lo, uint64_t hi,
                            uint8_t *raw) {
  uint8_t *rec = raw + count + lo * 11;
  for (uint64_t i = lo; i < hi; i++, rec += 11) {
    uint32_t info = n[i].info;
    raw[i] = (uint8_t)vx_node_mask(info);
    rec[0] = (uint8_t)vx_node_errmax_code(info);
    rec[1] = (uint8_t)vx_node_errrms_code(info);
    rec[2] = (uint8_t)vx_node_flags(info);
    vx_put_u32(rec + 3, n[i].normal);
    vx_put_f32(rec + 7, n[i].d);
  }
}

typedef struct pack_job {
  const vx_node *n;
  uint64_t count, lo, hi;
  uint8_t *raw;
} pack_job;

static void *pack_worker(void *arg) {
  pack_job *j = (pack_job *)arg;
  pack_node_range(j->n, j->count, j->lo, j->hi, j->raw);
  return NULL;
}

/* A level of nodes, on up to 16 threads when it is large (the same bytes either way). */
static void pack_nodes(const vx_node *n, uint64_t count, uint8_t *raw) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = count < ((uint64_t)1 << 20) || cpus < 2 ? 1 : cpus > 16 ? 16 : (int)cpus;
  pthread_t th[16];
  pack_job job[16];
  int started = 0;
  for (int k = 0; k < nt; k++) {
    job[k].n = n;
    job[k].count = count;
    job[k].lo = count * (uint64_t)k / (uint64_t)nt;
    job[k].hi = count * (uint64_t)(k + 1) / (uint64_t)nt;
    job[k].raw = raw;
  }
  for (int k = 1; k < nt; k++) {
    if (pthread_create(&th[k], NULL, pack_worker, &job[k]) != 0) break;
    started = k;
  }
  pack_worker(&job[0]);
  for (int k = 1; k <= started; k++) pthread_join(th[k], NULL);
  for (int k = started + 1; k < nt; k++) pack_worker(&job[k]); /* threads refused: here */
}

static void unpack_nodes(const uint8_t *raw, uint64_t count, vx_node *n) {
  const uint8_t *rec = raw + count;
  for (uint64_t i = 0; i < count; i++, rec += 11) {
    n[i].child = 0;
    n[i].info = vx_node_info(raw[i], rec[0], rec[1], rec[2]);
    n[i].normal = vx_get_u32(rec + 3);
    n[i].d = vx_get_f32(rec + 7);
  }
}

/* Version 1 defined flags bits 0 and 1 only; bits 2..7 (the drawn-plane bound code) came with
 * version 2. */
static vx_status no_bound_codes(const vx_node *n, uint64_t count, const char *name,
                                const char *what, vx_error *err) {
  for (uint64_t i = 0; i < count; i++)
    if (vx_node_bound_code(n[i].info) != 0)
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s node %llu: unknown flags 0x%x in a "
                          "version-1 file", name, what, (unsigned long long)i,
                          vx_node_flags(n[i].info));
  return VX_OK;
}

/* Voxels as they are: 8 corners (int8) per voxel, in Morton order (written straight from memory). */
static void unpack_voxels(const uint8_t *raw, uint64_t count, vx_voxel *v) {
  for (uint64_t i = 0; i < count; i++)
    for (int k = 0; k < 8; k++) v[i].c[k] = (int8_t)raw[8 * i + (uint64_t)k];
}

typedef struct check_job {
  ZSTD_CCtx *ck;
  const uint8_t *p;
  uint64_t n;
  uint32_t level, check;
  int ok;
} check_job;

static void *check_worker(void *arg) {
  check_job *j = (check_job *)arg;
  j->ok = bytes_check(j->ck, j->p, j->n, &j->check);
  return NULL;
}

static uint64_t level_raw_size(const vx_tree *t, uint32_t l) {
  return t->level_count[l] * (l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
}

/* ---- encoding ------------------------------------------------------------------------------ */

typedef struct svo_parts {
  uint8_t prologue_header[VX_SVO_PROLOGUE + VX_SVO_MAX_HEADER_FRAME];
  size_t prologue_header_size;
  uint8_t *sections; /* level l's frame at slot[l], size[l] bytes (the file puts them back to back) */
  size_t slot[VX_MAX_DEPTH + 1], size[VX_MAX_DEPTH + 1];
  uint32_t levels;
  size_t sections_size; /* sum of size[] */
} svo_parts;

typedef struct validate_job {
  const vx_tree *t;
  vx_error err;
  vx_status status;
} validate_job;

static void *validate_worker(void *arg) {
  validate_job *j = (validate_job *)arg;
  j->status = vx_tree_validate(j->t, &j->err);
  return NULL;
}


/* Compresses every level into its own slot; each finished frame's check runs on a thread of its
 * own while the next levels compress, and the tree's validation runs beside them all (it must
 * pass before anything is kept). */
static vx_status encode_parts(const vx_tree *t, int zstd_level, svo_parts *p, vx_error *err) {
  p->sections = NULL;
  p->sections_size = 0;
  if (!t || t->levels_loaded != t->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "cannot write a partially loaded tree (levels %u of %u)",
                        t ? t->levels_loaded : 0, t ? t->depth + 1 : 0);
  if (!isfinite(t->xf.origin[0]) || !isfinite(t->xf.origin[1]) || !isfinite(t->xf.origin[2]) ||
      !isfinite(t->xf.scale) || !isfinite(t->prune_error) || t->prune_error < 0.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tree transform or prune error is not finite");
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tree depth %u out of range", t->depth);
  validate_job vj;
  memset(&vj, 0, sizeof vj);
  vj.t = t;
  pthread_t vth;
  int vthread = pthread_create(&vth, NULL, validate_worker, &vj) == 0;
  if (!vthread) validate_worker(&vj);

  uint64_t raw_total = 0, raw_max = 0, bound_total = 0;
  p->levels = t->depth + 1;
  for (uint32_t l = 0; l <= t->depth; l++) {
    uint64_t r = level_raw_size(t, l);
    raw_total += r;
    if (l < t->depth && r > raw_max) raw_max = r; /* voxels are compressed in place */
    p->slot[l] = (size_t)bound_total;
    bound_total += ZSTD_compressBound((size_t)r);
  }
  int level = vx_svo_zstd_level(zstd_level, raw_total);

  ZSTD_CCtx *cc = ZSTD_createCCtx(), *ck = ZSTD_createCCtx();
  uint8_t *raw = (uint8_t *)malloc(raw_max ? (size_t)raw_max : 1);
  p->sections = (uint8_t *)malloc((size_t)bound_total);
  check_job cj[VX_MAX_DEPTH + 1];
  pthread_t cth[VX_MAX_DEPTH + 1];
  int threaded[VX_MAX_DEPTH + 1];
  memset(cj, 0, sizeof cj);
  memset(threaded, 0, sizeof threaded);
  size_t rc = (size_t)-1;
  if (cc && ck && raw && p->sections) {
    rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    int workers = vx_svo_zstd_workers(raw_total);
    if (!ZSTD_isError(rc) && workers)
      (void)ZSTD_CCtx_setParameter(cc, ZSTD_c_nbWorkers, workers); /* may be absent */
  }
  /* The voxels (the largest section) first, so that their frame's check runs while the node
   * levels compress; a frame does not depend on what the context compressed before (each call
   * starts a new session), so the order changes no byte. */
  for (int o = 0; o <= (int)t->depth && p->sections && !ZSTD_isError(rc); o++) {
    const int l = o == 0 ? (int)t->depth : o - 1;
    uint64_t count = t->level_count[l], r = level_raw_size(t, (uint32_t)l);
    /* Voxels are stored as they lie in memory (8 int8 corners each): no packing. */
    const uint8_t *src = raw;
    if (l < (int)t->depth)
      pack_nodes(t->nodes + t->level_first[l], count, raw);
    else
      src = (const uint8_t *)t->voxels;
    size_t z = ZSTD_compress2(cc, p->sections + p->slot[l], (size_t)bound_total - p->slot[l],
                              src, (size_t)r);
    if (ZSTD_isError(z)) {
      rc = z;
      break;
    }
    p->size[l] = z;
    cj[l].ck = ZSTD_createCCtx();
    cj[l].p = p->sections + p->slot[l];
    cj[l].n = z;
    cj[l].level = (uint32_t)l;
    if (!cj[l].ck) {
      rc = (size_t)-1;
      break;
    }
    threaded[l] = pthread_create(&cth[l], NULL, check_worker, &cj[l]) == 0;
    if (!threaded[l]) check_worker(&cj[l]); /* no thread: check here */
  }
  uint8_t hdr[VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * (VX_MAX_DEPTH + 1)];
  size_t hsize = (size_t)header_size(t->depth);
  vx_put_u32(hdr + 0, t->depth);
  vx_put_f32(hdr + 4, t->band);
  vx_put_f32(hdr + 8, t->prune_error);
  vx_put_u32(hdr + 12, 0);
  for (int i = 0; i < 3; i++) vx_put_f64(hdr + 16 + 8 * i, t->xf.origin[i]);
  vx_put_f64(hdr + 40, t->xf.scale);
  for (uint32_t l = 0; l <= t->depth; l++) {
    if (threaded[l]) pthread_join(cth[l], NULL);
    ZSTD_freeCCtx(cj[l].ck);
    if (!cj[l].ok && !ZSTD_isError(rc)) rc = (size_t)-1;
    uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * l;
    vx_put_u64(e, t->level_count[l]);
    vx_put_u64(e + 8, p->size[l]);
    vx_put_u64(e + 16, level_raw_size(t, l));
    vx_put_u32(e + 24, cj[l].check);
    vx_put_u32(e + 28, 0);
    p->sections_size += p->size[l];
  }
  free(raw);
  if (vthread) pthread_join(vth, NULL);
  if (vj.status != VX_OK || ZSTD_isError(rc) || !p->sections) {
    ZSTD_freeCCtx(cc);
    ZSTD_freeCCtx(ck);
    free(p->sections);
    p->sections = NULL;
    if (vj.status != VX_OK) {
      if (err) *err = vj.err;
      return vj.status;
    }
    if (!ZSTD_isError(rc) || rc == (size_t)-1)
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to compress the tree",
                          (double)(raw_max + bound_total) / 1048576.0);
    return vx_svo_zstd_fail(err, "compressing a level", rc);
  }
  /* The header: one small frame, always single-threaded at a high level. */
  (void)ZSTD_CCtx_setParameter(cc, ZSTD_c_nbWorkers, 0);
  (void)ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 19);
  size_t hz = ZSTD_compress2(cc, p->prologue_header + VX_SVO_PROLOGUE, VX_SVO_MAX_HEADER_FRAME, hdr, hsize);
  ZSTD_freeCCtx(cc);
  uint32_t hcheck = 0;
  if (!ZSTD_isError(hz) && !bytes_check(ck, p->prologue_header + VX_SVO_PROLOGUE, hz, &hcheck))
    hz = (size_t)-1;
  ZSTD_freeCCtx(ck);
  if (ZSTD_isError(hz)) {
    free(p->sections);
    p->sections = NULL;
    return vx_svo_zstd_fail(err, "compressing the header", hz);
  }
  memcpy(p->prologue_header, VX_SVO_MAGIC, 8);
  vx_put_u32(p->prologue_header + 8, VX_SVO_VERSION);
  vx_put_u32(p->prologue_header + 12, 0);
  vx_put_u32(p->prologue_header + 16, (uint32_t)hz);
  vx_put_u32(p->prologue_header + 20, (uint32_t)hsize);
  vx_put_u32(p->prologue_header + 24, hcheck);
  vx_put_u32(p->prologue_header + 28, 0);
  p->prologue_header_size = VX_SVO_PROLOGUE + hz;
  return VX_OK;
}

vx_status vx_svo_encode(const vx_tree *t, int zstd_level, uint8_t **out, size_t *out_size,
                        vx_error *err) {
  *out = NULL;
  *out_size = 0;
  svo_parts *p = (svo_parts *)malloc(sizeof *p);
  if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = encode_parts(t, zstd_level, p, err);
  if (s == VX_OK) {
    size_t n = p->prologue_header_size + p->sections_size;
    uint8_t *buf = (uint8_t *)malloc(n);
    if (!buf) {
      s = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB for the file",
                       (double)n / 1048576.0);
    } else {
      memcpy(buf, p->prologue_header, p->prologue_header_size);
      size_t at = p->prologue_header_size;
      for (uint32_t l = 0; l < p->levels; l++) {
        memcpy(buf + at, p->sections + p->slot[l], p->size[l]);
        at += p->size[l];
      }
      *out = buf;
      *out_size = n;
    }
  }
  free(p->sections);
  free(p);
  return s;
}

vx_status vx_svo_write(const char *path, const vx_tree *t, int zstd_level, vx_error *err) {
  svo_parts *p = (svo_parts *)malloc(sizeof *p);
  if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = encode_parts(t, zstd_level, p, err);
  if (s == VX_OK) {
    vx_atomic_file af;
    s = vx_atomic_open(&af, path, err);
    if (s == VX_OK) {
      s = vx_atomic_write(&af, p->prologue_header, p->prologue_header_size, err);
      for (uint32_t l = 0; l < p->levels && s == VX_OK; l++)
        s = vx_atomic_write(&af, p->sections + p->slot[l], p->size[l], err);
      if (s == VX_OK)
        s = vx_atomic_commit(&af, err);
      else
        vx_atomic_abort(&af);
    }
  }
  free(p->sections);
  free(p);
  return s;
}

/* ---- decoding ------------------------------------------------------------------------------ */

/* Where the bytes come from: memory (zero-copy) or an open file (read into a scratch buffer). */
typedef struct svo_src {
  const uint8_t *mem;
  FILE *f;
  uint64_t size;
  const char *name;
  uint8_t *scratch;
  size_t scratch_cap;
} svo_src;

static vx_status src_get(svo_src *s, uint64_t off, uint64_t n, const uint8_t **out, vx_error *err) {
  if (off > s->size || n > s->size - off)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated (needs %llu bytes, has %llu)", s->name,
                        (unsigned long long)(off + n), (unsigned long long)s->size);
  if (s->mem) {
    *out = s->mem + off;
    return VX_OK;
  }
  if (n > s->scratch_cap) {
    uint8_t *b = (uint8_t *)realloc(s->scratch, n ? (size_t)n : 1);
    if (!b)
      return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB to read a section",
                          s->name, (double)n / 1048576.0);
    s->scratch = b;
    s->scratch_cap = (size_t)n;
  }
  if (fseeko(s->f, (off_t)off, SEEK_SET) != 0 || fread(s->scratch, 1, (size_t)n, s->f) != n)
    return vx_error_set(err, ferror(s->f) ? VX_ERR_IO : VX_ERR_CORRUPT, "%s: cannot read %llu bytes at %llu%s%s",
                        s->name, (unsigned long long)n, (unsigned long long)off,
                        ferror(s->f) ? ": " : " (truncated)", ferror(s->f) ? strerror(errno) : "");
  *out = s->scratch;
  return VX_OK;
}

/* Decompresses exactly one zstd frame of `zsize` bytes that must carry a content checksum and
 * declare `raw` content bytes into dst. */
static vx_status unframe(ZSTD_DCtx *dc, const uint8_t *z, uint64_t zsize, uint8_t *dst, uint64_t raw,
                         const char *name, const char *what, vx_error *err) {
  static const uint8_t zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  if (zsize < 6 || memcmp(z, zmagic, 4) != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is not a zstd frame", name, what);
  uint8_t fhd = z[4];
  if (!(fhd & 0x04) || (fhd & 0x03))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s lacks its checksum", name, what);
  unsigned long long fcs = ZSTD_getFrameContentSize(z, (size_t)zsize);
  if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs != raw)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s declares the wrong size", name, what);
  size_t fz = ZSTD_findFrameCompressedSize(z, (size_t)zsize);
  if (ZSTD_isError(fz) || fz != zsize)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (%s)", name, what,
                        ZSTD_isError(fz) ? ZSTD_getErrorName(fz) : "frame size mismatch");
  uint8_t dummy;
  size_t r = ZSTD_decompressDCtx(dc, raw ? dst : &dummy, (size_t)raw, z, (size_t)zsize);
  if (ZSTD_isError(r) || r != raw)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (%s)", name, what,
                        ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short");
  return VX_OK;
}

/* The stored check of a frame's compressed bytes must match. */
static vx_status checked(ZSTD_CCtx *ck, const uint8_t *z, uint64_t n, uint32_t want,
                         const char *name, const char *what, vx_error *err) {
  uint32_t got = 0;
  if (!bytes_check(ck, z, n, &got))
    return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum %s", name, what);
  if (got != want)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (checksum mismatch)", name, what);
  return VX_OK;
}

static int finite_d(double v) { return v == v && v <= 1.7e308 && v >= -1.7e308; }

static vx_status decode(svo_src *src, const vx_read_opts *opts, vx_tree *t, vx_file_info *info,
                        vx_error *err) {
  const char *name = src->name;
  const uint8_t *p;
  vx_status s;
  size_t have = src->size < 8 ? (size_t)src->size : 8;
  if (have == 0) return vx_error_set(err, VX_ERR_FORMAT, "%s: empty file, not a .svo", name);
  if ((s = src_get(src, 0, have, &p, err)) != VX_OK) return s;
  if (memcmp(p, VX_SVO_MAGIC, have) != 0) {
    if (have >= 5 && memcmp(p, VX_SVO_MAGIC, 5) == 0)
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: damaged .svo signature", name);
    return vx_error_set(err, VX_ERR_FORMAT, "%s: not a voxlod .svo file (bad signature)", name);
  }
  if (src->size < VX_SVO_PROLOGUE)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated .svo file (%llu bytes)", name,
                        (unsigned long long)src->size);
  if ((s = src_get(src, 0, VX_SVO_PROLOGUE, &p, err)) != VX_OK) return s;
  uint32_t version = vx_get_u32(p + 8), flags = vx_get_u32(p + 12);
  uint32_t hz = vx_get_u32(p + 16), hraw = vx_get_u32(p + 20);
  uint32_t hcheck = vx_get_u32(p + 24), preserved = vx_get_u32(p + 28);
  if (info) {
    memset(info, 0, sizeof *info);
    info->version = version;
    info->file_bytes = src->size;
  }
  if (version > VX_SVO_VERSION)
    return vx_error_set(err, VX_ERR_VERSION,
                        "%s: made by a newer voxlod (file version %u, this reads up to %u)", name,
                        version, VX_SVO_VERSION);
  if (version == 0) return vx_error_set(err, VX_ERR_CORRUPT, "%s: file version 0 is invalid", name);
  if (flags != 0 || preserved != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: unknown flags 0x%x in a version-%u file", name,
                        flags, version);
  if (hraw < header_size(VX_MIN_DEPTH) || hraw > header_size(VX_MAX_DEPTH) ||
      (hraw - VX_SVO_HEADER_FIXED) % VX_SVO_LEVEL_ENTRY != 0 || hz > VX_SVO_MAX_HEADER_FRAME)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: header sizes %u/%u are impossible", name, hz, hraw);
  uint8_t hdr[VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * (VX_MAX_DEPTH + 1)];
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  ZSTD_CCtx *ck = ZSTD_createCCtx();
  if (!dc || !ck) {
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(ck);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if ((s = src_get(src, VX_SVO_PROLOGUE, hz, &p, err)) != VX_OK ||
      (s = checked(ck, p, hz, hcheck, name, "the header", err)) != VX_OK ||
      (s = unframe(dc, p, hz, hdr, hraw, name, "the header", err)) != VX_OK) {
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(ck);
    return s;
  }
  memset(t, 0, sizeof *t);
  t->depth = vx_get_u32(hdr);
  t->band = vx_get_f32(hdr + 4);
  t->prune_error = vx_get_f32(hdr + 8);
  uint32_t reserved = vx_get_u32(hdr + 12);
  for (int i = 0; i < 3; i++) t->xf.origin[i] = vx_get_f64(hdr + 16 + 8 * i);
  t->xf.scale = vx_get_f64(hdr + 40);
  s = VX_OK;
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH || header_size(t->depth) != hraw)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: depth %u is out of range or disagrees with the header", name, t->depth);
  else if (reserved != 0)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: reserved header field is %u, not 0", name, reserved);
  else if (!(t->band > 0.0f) || !(t->band < 1e6f) || !(t->prune_error >= 0.0f) ||
           !(t->prune_error < 1e30f))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: field band %g or prune error %g is invalid", name,
                     t->band, t->prune_error);
  else if (!finite_d(t->xf.origin[0]) || !finite_d(t->xf.origin[1]) || !finite_d(t->xf.origin[2]) ||
           !(t->xf.scale > 0.0) || !finite_d(t->xf.scale))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: grid-to-world transform is not finite", name);
  uint64_t zsize[VX_MAX_DEPTH + 1];
  uint32_t zcheck[VX_MAX_DEPTH + 1];
  uint64_t offset = (uint64_t)VX_SVO_PROLOGUE + hz, end = offset;
  for (uint32_t l = 0; s == VX_OK && l <= t->depth; l++) {
    const uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * l;
    uint64_t count = vx_get_u64(e), z = vx_get_u64(e + 8), raw = vx_get_u64(e + 16);
    zcheck[l] = vx_get_u32(e + 24);
    uint64_t rec = l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD;
    if (vx_get_u32(e + 28) != 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u: reserved field is not 0", name, l);
    else if (l == 0 && count != 1)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level 0 holds %llu nodes, not 1", name, (unsigned long long)count);
    else if (count > (UINT64_C(1) << (3 * l)) || (l > 0 && count > 8 * t->level_count[l - 1]))
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u holds %llu cells, more than its parents allow",
                       name, l, (unsigned long long)count);
    else if (raw != count * rec)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u declares %llu bytes for %llu cells", name, l,
                       (unsigned long long)raw, (unsigned long long)count);
    else if (z > src->size || end > src->size - z)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated: level %u ends past the end of the file (%llu bytes)",
                       name, l, (unsigned long long)src->size);
    t->level_count[l] = count;
    zsize[l] = z;
    if (info && s == VX_OK) info->level_disk_bytes[l] = z;
    end += z;
  }
  if (info) info->header_bytes = (uint64_t)VX_SVO_PROLOGUE + hz;
  if (s == VX_OK && end != src->size)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: file has %llu bytes but its header describes %llu", name,
                     (unsigned long long)src->size, (unsigned long long)end);
  /* Levels to load, and the memory they need, before any allocation. */
  uint32_t levels = t->depth + 1;
  if (opts && opts->max_level >= 0 && (uint32_t)opts->max_level < t->depth)
    levels = (uint32_t)opts->max_level + 1;
  uint64_t nodes = 0, voxels = 0, raw_max = 0, z_max = 0;
  for (uint32_t l = 0; s == VX_OK && l < levels; l++) {
    uint64_t rec = l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD;
    if (l < t->depth) nodes += t->level_count[l];
    else voxels = t->level_count[l];
    if (t->level_count[l] * rec > raw_max) raw_max = t->level_count[l] * rec;
    if (zsize[l] > z_max) z_max = zsize[l];
  }
  if (s == VX_OK && (nodes > UINT32_MAX || voxels > UINT32_MAX))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: more than 2^32 nodes or voxels", name);
  uint64_t limit = opts && opts->mem_limit ? opts->mem_limit : VX_SVO_DEFAULT_MEM_LIMIT;
  uint64_t need = nodes * sizeof(vx_node) + voxels * sizeof(vx_voxel) + raw_max + (src->mem ? 0 : z_max);
  if (s == VX_OK && need > limit)
    s = vx_error_set(err, VX_ERR_LIMIT, "%s: loading needs %.1f MiB, over the %.1f MiB limit", name,
                     (double)need / 1048576.0, (double)limit / 1048576.0);
  uint8_t *raw = NULL;
  if (s == VX_OK) {
    t->levels_loaded = levels;
    s = vx_tree_alloc(t, err);
    if (s == VX_OK && !(raw = (uint8_t *)malloc(raw_max ? (size_t)raw_max : 1)))
      s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB", name, (double)raw_max / 1048576.0);
  }
  for (uint32_t l = 0; s == VX_OK && l < levels; l++) {
    char what[32];
    snprintf(what, sizeof what, "level %u", l);
    uint64_t rs = l < t->depth ? t->level_count[l] * VX_SVO_NODE_RECORD : t->level_count[l] * VX_SVO_VOXEL_RECORD;
    if ((s = src_get(src, offset, zsize[l], &p, err)) != VX_OK) break;
    if ((s = checked(ck, p, zsize[l], zcheck[l], name, what, err)) != VX_OK) break;
    if ((s = unframe(dc, p, zsize[l], raw, rs, name, what, err)) != VX_OK) break;
    if (l < t->depth) {
      unpack_nodes(raw, t->level_count[l], t->nodes + t->level_first[l]);
      if (version < 2 && (s = no_bound_codes(t->nodes + t->level_first[l], t->level_count[l], name,
                                             what, err)) != VX_OK)
        break;
    } else
      unpack_voxels(raw, t->level_count[l], t->voxels);
    offset += zsize[l];
  }
  free(raw);
  ZSTD_freeDCtx(dc);
  ZSTD_freeCCtx(ck);
  if (s == VX_OK) s = vx_tree_link(t, err);
  if (s == VX_OK) s = vx_tree_validate(t, err);
  if (s != VX_OK) {
    if (err && s == VX_ERR_CORRUPT && strncmp(err->msg, name, strlen(name)) != 0) {
      char m[sizeof err->msg];
      snprintf(m, sizeof m, "%.200s: %.300s", name, err->msg);
      memcpy(err->msg, m, sizeof m);
    }
    vx_tree_free(t);
  }
  return s;
}

vx_status vx_svo_decode(const uint8_t *data, size_t size, const vx_read_opts *opts, vx_tree *out,
                        vx_file_info *info, vx_error *err) {
  memset(out, 0, sizeof *out);
  svo_src src;
  memset(&src, 0, sizeof src);
  src.mem = data ? data : (const uint8_t *)"";
  src.size = data ? size : 0;
  src.name = "svo data";
  return decode(&src, opts, out, info, err);
}

vx_status vx_svo_read(const char *path, const vx_read_opts *opts, vx_tree *out, vx_file_info *info,
                      vx_error *err) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return vx_error_set(err, VX_ERR_IO, "cannot read '%s': not a regular file", path);
  }
  svo_src src;
  memset(&src, 0, sizeof src);
  src.f = f;
  src.size = (uint64_t)st.st_size;
  src.name = path;
  vx_status s = decode(&src, opts, out, info, err);
  free(src.scratch);
  fclose(f);
  return s;
}
