/* SPDX-License-Identifier: Apache-2.0 */
/* tri_stream.c - binary STL and binary PLY triangles in one streaming pass (tri_stream.h). */
#define _POSIX_C_SOURCE 200809L
#include "formats/tri_stream.h"
#include "formats/ply_types.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#define TS_BUF ((size_t)1 << 24)     /* bytes read from the file at a time */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define TS_BULK 4096u /* fewer faces or vertices in the buffer: one at a time */
#else
#define TS_BULK 2u /* the fuzzer's small inputs reach the bulk decoders too */
#endif
#define TS_HEAD 65536u               /* a PLY header longer than this is not streamed */
#define TS_MAX_LIST ((uint64_t)1 << 20) /* indices in one face */
#define TS_PROPS 32


typedef struct ts_prop {
  int type, count_type; /* count_type != 0: a list */
  int role;             /* what it is (ROLE_*) */
} ts_prop;

enum { ROLE_SKIP = 0, ROLE_X, ROLE_Y, ROLE_Z, ROLE_INDICES };

struct vx_tri_stream {
  FILE *f;
  uint64_t size, pos; /* the file's bytes, and the stream's place in them */
  unsigned char *buf;
  size_t cap, have, at; /* buf's size (smaller for a small file), bytes in it, the next one */
  int stl, big;    /* binary STL; a big-endian PLY */
  uint64_t faces, face; /* declared, read */
  uint64_t lines;       /* faces of fewer than 3 vertices (points, lines): dropped */
  float *vert;          /* PLY: 3 floats a vertex */
  uint64_t verts;
  ts_prop fprop[TS_PROPS];
  int nfprop;
  uint32_t *poly; /* the face being fanned, its indices */
  uint64_t poly_n, poly_at, poly_cap;
  const char *what;
};

static int ts_fill(vx_tri_stream *s) {
  if (s->at < s->have) return 1;
  s->have = fread(s->buf, 1, s->cap, s->f);
  s->at = 0;
  return s->have > 0;
}

/* n bytes of the file into out; 0 when it ends first. */
static int ts_bytes(vx_tri_stream *s, void *out, size_t n) {
  unsigned char *o = (unsigned char *)out;
  while (n) {
    if (!ts_fill(s)) return 0;
    size_t k = s->have - s->at < n ? s->have - s->at : n;
    memcpy(o, s->buf + s->at, k);
    s->at += k, s->pos += k, o += k, n -= k;
  }
  return 1;
}

/* The scalar of type t at b, as a double (integers exactly up to 2^53). */
static double ply_scalar(const unsigned char *b, int t, int big) {
  const uint64_t u = vx_ply_raw(b, t, big);
  double v;
  switch (t) {
    case T_CHAR: return (double)(int8_t)u;
    case T_SHORT: return (double)(int16_t)u;
    case T_INT: return (double)(int32_t)u;
    case T_FLOAT: {
      float f;
      uint32_t w = (uint32_t)u;
      memcpy(&f, &w, 4);
      return (double)f;
    }
    case T_DOUBLE: memcpy(&v, &u, 8); return v;
    default: return (double)u;
  }
}

/* A scalar of type t from the file; 0 at the end. */
static int ts_value(vx_tri_stream *s, int t, double *v) {
  unsigned char b[8];
  if (!ts_bytes(s, b, (size_t)vx_ply_type_size(t))) return 0;
  *v = ply_scalar(b, t, s->big);
  return 1;
}

/* ---- many records at once, on every core ---------------------------------------------------
 * Vertices, and faces of the common layout, that lie whole in the buffer are decoded where they
 * are, by ranges on all cores (vx_ranges_run), into the same floats as one at a time. */

typedef struct bulk_job {
  const vx_tri_stream *s;
  const unsigned char *b; /* the first record */
  float *out;
  const ts_prop *vp;      /* vertices: their properties, record bytes */
  int nv;
  uint64_t rec;
  atomic_uint_fast64_t bad; /* faces: the first that the fast layout cannot take (or n) */
} bulk_job;

static void vertex_range(void *ctx, uint64_t a, uint64_t z) {
  bulk_job *j = (bulk_job *)ctx;
  for (uint64_t k = a; k < z; k++) {
    const unsigned char *b = j->b + k * j->rec;
    for (int i = 0; i < j->nv; i++) {
      const int t = j->vp[i].type, role = j->vp[i].role;
      if (role >= ROLE_X && role <= ROLE_Z)
        j->out[3 * k + (uint64_t)(role - ROLE_X)] = (float)ply_scalar(b, t, j->s->big);
      b += vx_ply_type_size(t);
    }
  }
}

/* The three indices of a common-layout face (b: its 13 bytes, the count first) into v; 0 when one
 * is out of range (the general reader then says so). */
static int common_face(const vx_tri_stream *s, const unsigned char *b, uint32_t v[3]) {
  const int is_int = s->fprop[0].type == T_INT;
  for (int i = 0; i < 3; i++) {
    v[i] = (uint32_t)vx_ply_raw(b + 1 + 4 * i, T_UINT, 0);
    if ((is_int && v[i] > INT32_MAX) || v[i] >= s->verts) return 0;
  }
  return 1;
}

/* Faces [a, z) of 13 bytes (a count of 3 and three 32-bit indices) into triangles; a face whose
 * index is out of range stops its range and lowers j->bad to it. */
static void face_range(void *ctx, uint64_t a, uint64_t z) {
  bulk_job *j = (bulk_job *)ctx;
  const vx_tri_stream *s = j->s;
  for (uint64_t k = a; k < z; k++) {
    uint32_t v[3];
    if (!common_face(s, j->b + 13 * k, v)) {
      uint_fast64_t cur = atomic_load(&j->bad);
      while (k < cur && !atomic_compare_exchange_weak(&j->bad, &cur, k)) {
      }
      return;
    }
    for (int i = 0; i < 3; i++) memcpy(j->out + 9 * k + 3 * i, s->vert + 3 * (uint64_t)v[i], 12);
  }
}

/* The 9 coordinates of a 50-byte STL record (the vertices at 12, little-endian floats). */
static void stl_record(const unsigned char *r, float t[9]) {
  for (int i = 0; i < 9; i++) {
    const uint32_t u = (uint32_t)vx_ply_raw(r + 12 + 4 * i, T_UINT, 0);
    memcpy(&t[i], &u, 4);
  }
}

/* STL records [a, z). */
static void stl_range(void *ctx, uint64_t a, uint64_t z) {
  bulk_job *j = (bulk_job *)ctx;
  for (uint64_t k = a; k < z; k++) stl_record(j->b + 50 * k, j->out + 9 * k);
}

static vx_status unsupported(const vx_tri_stream *s, vx_error *err, const char *why) {
  return vx_error_set(err, VX_ERR_FORMAT, "%s is not streamed: %s", s->what, why);
}

static vx_status corrupt(const vx_tri_stream *s, vx_error *err, const char *why) {
  return vx_error_set(err, VX_ERR_CORRUPT, "cannot read %s: %s", s->what, why);
}

/* The next header line (at most 255 characters, CR LF or LF) into line, split into at most 6
 * words; the word count, -1 at the end of the file or past TS_HEAD. */
static int ts_line(vx_tri_stream *s, char *line, char *w[6]) {
  size_t n = 0;
  for (;;) {
    unsigned char c;
    if (s->pos >= TS_HEAD || !ts_bytes(s, &c, 1)) return -1;
    if (c == '\n') break;
    if (n == 255) return -1;
    line[n++] = (char)c;
  }
  if (n && line[n - 1] == '\r') n--;
  line[n] = 0;
  int k = 0;
  for (char *p = line; *p && k < 6;) {
    while (*p == ' ' || *p == '\t') *p++ = 0;
    if (!*p) break;
    w[k++] = p;
    while (*p && *p != ' ' && *p != '\t') p++;
  }
  return k;
}

static int parse_count(const char *w, uint64_t *v) {
  uint64_t x = 0;
  if (!*w) return 0;
  for (; *w; w++) {
    if (*w < '0' || *w > '9' || x > (UINT64_MAX - 9) / 10) return 0;
    x = x * 10 + (uint64_t)(*w - '0');
  }
  *v = x;
  return 1;
}

/* Reads the vertices (positions) of a PLY whose header was read: vertex props vp[nv]. */
static vx_status ply_vertices(vx_tri_stream *s, const ts_prop *vp, int nv, vx_error *err) {
  uint64_t rec = 0;
  for (int i = 0; i < nv; i++) rec += (uint64_t)vx_ply_type_size(vp[i].type);
  if (rec == 0 || s->verts > (s->size - s->pos) / rec)
    return corrupt(s, err, "its vertices need more bytes than the file has");
  s->vert = (float *)vx_malloc((size_t)(s->verts ? s->verts : 1) * 3 * sizeof(float));
  if (!s->vert) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %s's vertices", s->what);
  for (uint64_t k = 0; k < s->verts;) {
    if (!ts_fill(s)) return corrupt(s, err, "it ends within its vertices");
    uint64_t n = (s->have - s->at) / rec;
    if (n > s->verts - k) n = s->verts - k;
    if (n >= TS_BULK) { /* whole records in the buffer */
      bulk_job j = {.s = s, .b = s->buf + s->at, .out = s->vert + 3 * k, .vp = vp, .nv = nv, .rec = rec};
      vx_ranges_run(0, n, vertex_range, &j);
      s->at += (size_t)(n * rec), s->pos += n * rec, k += n;
      continue;
    }
    for (int i = 0; i < nv; i++) {
      double v;
      if (!ts_value(s, vp[i].type, &v)) return corrupt(s, err, "it ends within its vertices");
      if (vp[i].role >= ROLE_X && vp[i].role <= ROLE_Z) s->vert[3 * k + vp[i].role - ROLE_X] = (float)v;
    }
    k++;
  }
  return VX_OK;
}

static vx_status ply_open(vx_tri_stream *s, vx_error *err) {
  char line[256], *w[6];
  int nw = ts_line(s, line, w);
  if (nw != 1 || strcmp(w[0], "ply") != 0) return unsupported(s, err, "not a PLY");
  nw = ts_line(s, line, w);
  if (nw != 3 || strcmp(w[0], "format") != 0 || strcmp(w[2], "1.0") != 0)
    return unsupported(s, err, "no PLY format line");
  if (strcmp(w[1], "binary_big_endian") == 0)
    s->big = 1;
  else if (strcmp(w[1], "binary_little_endian") != 0)
    return unsupported(s, err, "not a binary PLY");
  ts_prop vp[TS_PROPS];
  int nv = 0, elem = 0; /* 1 vertex, 2 face, 3 any element after the faces */
  int have[4] = {0, 0, 0, 0};
  for (;;) {
    nw = ts_line(s, line, w);
    if (nw < 0) return unsupported(s, err, "no end_header within 64 KiB");
    if (nw == 0 || strcmp(w[0], "comment") == 0 || strcmp(w[0], "obj_info") == 0) {
      if (nw > 1 && strcmp(w[0], "comment") == 0 && strcmp(w[1], "TextureFile") == 0)
        return unsupported(s, err, "a textured PLY");
      continue;
    }
    if (strcmp(w[0], "end_header") == 0 && nw == 1) break;
    if (strcmp(w[0], "element") == 0 && nw == 3) {
      uint64_t n;
      if (!parse_count(w[2], &n)) return unsupported(s, err, "an element count it cannot read");
      if (elem == 2 || elem == 3)
        elem = 3;
      else if (strcmp(w[1], "vertex") == 0 && elem == 0)
        elem = 1, s->verts = n;
      else if (strcmp(w[1], "face") == 0 && elem == 1)
        elem = 2, s->faces = n;
      else
        return unsupported(s, err, "an element other than vertex and face before the faces");
      continue;
    }
    if (strcmp(w[0], "property") != 0 || elem == 0) return unsupported(s, err, "a header line");
    if (elem == 3) continue; /* after the faces: never read */
    const int list = nw == 5 && strcmp(w[1], "list") == 0;
    if (!(list || nw == 3)) return unsupported(s, err, "a property line");
    ts_prop p;
    memset(&p, 0, sizeof p);
    p.type = vx_ply_type((const unsigned char *)w[list ? 3 : 1], strlen(w[list ? 3 : 1]));
    p.count_type = list ? vx_ply_type((const unsigned char *)w[2], strlen(w[2])) : 0;
    const char *name = w[list ? 4 : 2];
    if (!p.type || (list && (!p.count_type || p.count_type >= T_FLOAT)))
      return unsupported(s, err, "a property type");
    if (elem == 1) {
      if (list) return unsupported(s, err, "a list in the vertices");
      if (strcmp(name, "x") == 0) p.role = ROLE_X;
      else if (strcmp(name, "y") == 0) p.role = ROLE_Y;
      else if (strcmp(name, "z") == 0) p.role = ROLE_Z;
      else if (strcmp(name, "nx") && strcmp(name, "ny") && strcmp(name, "nz") &&
               strcmp(name, "quality") && strcmp(name, "confidence"))
        return unsupported(s, err, "a vertex property other than a position or normal");
      if (p.role && (p.type != T_FLOAT && p.type != T_DOUBLE))
        return unsupported(s, err, "integer coordinates");
      if (p.role && have[p.role]++) return unsupported(s, err, "a coordinate given twice");
      if (nv == TS_PROPS) return unsupported(s, err, "too many vertex properties");
      vp[nv++] = p;
    } else {
      if (list && (strcmp(name, "vertex_indices") == 0 || strcmp(name, "vertex_index") == 0)) {
        if (p.type >= T_FLOAT) return unsupported(s, err, "real-valued face indices");
        p.role = ROLE_INDICES;
        if (have[0]++) return unsupported(s, err, "two index lists");
      } else if (list || (strcmp(name, "flags") && strcmp(name, "quality"))) {
        return unsupported(s, err, "a face property other than its indices");
      }
      if (s->nfprop == TS_PROPS) return unsupported(s, err, "too many face properties");
      s->fprop[s->nfprop++] = p;
    }
  }
  if (elem < 2 || !have[ROLE_X] || !have[ROLE_Y] || !have[ROLE_Z] || !have[0])
    return unsupported(s, err, "no vertex positions or no face indices");
  vx_status st = ply_vertices(s, vp, nv, err);
  if (st != VX_OK) return st;
  /* the smallest face: its scalars and its lists' counts */
  uint64_t least = 0;
  for (int i = 0; i < s->nfprop; i++)
    least += (uint64_t)vx_ply_type_size(s->fprop[i].count_type ? s->fprop[i].count_type
                                                        : s->fprop[i].type);
  if (s->faces > (s->size - s->pos) / least)
    return corrupt(s, err, "its faces need more bytes than the file has");
  return VX_OK;
}

vx_status vx_tri_stream_open(FILE *f, uint64_t size, const char *what, vx_tri_stream **out,
                             uint64_t *faces, vx_error *err) {
  *out = NULL;
  *faces = 0;
  vx_tri_stream *s = (vx_tri_stream *)vx_calloc(1, sizeof *s);
  if (!s) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  s->f = f;
  s->size = size;
  s->what = what ? what : "the mesh";
  s->cap = size < TS_BUF ? (size < 4096 ? 4096 : (size_t)size) : TS_BUF;
  s->buf = (unsigned char *)vx_malloc(s->cap);
  vx_status st = VX_OK;
  unsigned char head[84];
  if (!s->buf) {
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  } else if (size >= 84 && ts_bytes(s, head, 84) &&
             84 + 50 * (uint64_t)(head[80] | head[81] << 8 | head[82] << 16 |
                                  (uint32_t)head[83] << 24) == size) {
    s->stl = 1;
    s->faces = (size - 84) / 50;
    for (int i = 0; i + 6 <= 80; i++)
      if (memcmp(head + i, "COLOR=", 6) == 0) st = unsupported(s, err, "an STL with colours");
  } else if (fseek(f, 0, SEEK_SET) != 0) {
    st = vx_error_set(err, VX_ERR_IO, "cannot read %s: %s", s->what, strerror(errno));
  } else {
    s->have = s->at = 0;
    s->pos = 0;
    st = ply_open(s, err);
  }
  if (st != VX_OK) {
    vx_tri_stream_close(s);
    return st;
  }
  *faces = s->faces;
  *out = s;
  return VX_OK;
}

/* The common face layout: the only property a list of a uchar count and int or uint indices,
 * little-endian (13 bytes a triangle). */
static int ply_common_faces(const vx_tri_stream *s) {
  const ts_prop *p = &s->fprop[0];
  return s->nfprop == 1 && !s->big && p->role == ROLE_INDICES && p->count_type == T_UCHAR &&
         (p->type == T_INT || p->type == T_UINT);
}

/* Up to max triangles of the common layout that lie whole in the buffer, at once; stops before a
 * face it cannot take (a count other than 3, an index out of range: the general reader takes
 * it). Returns the triangles made; 0 when there are fewer than TS_BULK such faces. */
static uint64_t ply_faces_bulk(vx_tri_stream *s, float *tri, uint64_t max) {
  if (!ply_common_faces(s) || s->poly_at + 2 < s->poly_n) return 0;
  uint64_t n = (s->have - s->at) / 13;
  if (n > s->faces - s->face) n = s->faces - s->face;
  if (n > max) n = max;
  /* up to the first face that is not a triangle (a line, a polygon): a file with many of those
   * is read one face at a time, not in bursts of a few */
  const unsigned char *b = s->buf + s->at;
  uint64_t k = 0;
  while (k < n && b[13 * k] == 3) k++;
  n = k;
  if (n < TS_BULK) return 0;
  bulk_job j = {.s = s, .b = b, .out = tri};
  atomic_init(&j.bad, n);
  vx_ranges_run(0, n, face_range, &j);
  n = atomic_load(&j.bad);
  s->at += (size_t)(13 * n), s->pos += 13 * n, s->face += n;
  return n;
}

/* STL records whole in the buffer, up to max, at once; 0 when fewer than TS_BULK. */
static uint64_t stl_bulk(vx_tri_stream *s, float *tri, uint64_t max) {
  uint64_t n = (s->have - s->at) / 50;
  if (n > s->faces - s->face) n = s->faces - s->face;
  if (n > max) n = max;
  if (n < TS_BULK) return 0;
  bulk_job j = {.s = s, .b = s->buf + s->at, .out = tri};
  vx_ranges_run(0, n, stl_range, &j);
  s->at += (size_t)(50 * n), s->pos += 50 * n, s->face += n;
  return n;
}

/* The common face, read straight from the buffer, all 13 bytes in it, count 3. 1 when read (the
 * indices checked as below), 0 when the general reader must take it. */
static int ply_face_fast(vx_tri_stream *s) {
  if (!ply_common_faces(s) || s->have - s->at < 13 || s->buf[s->at] != 3 || s->poly_cap < 3)
    return 0;
  uint32_t v[3];
  if (!common_face(s, s->buf + s->at, v)) return 0; /* said there */
  memcpy(s->poly, v, sizeof v);
  s->poly_n = 3;
  s->poly_at = 0;
  s->at += 13;
  s->pos += 13;
  return 1;
}

/* The next face of a PLY into s->poly (its indices checked). */
static vx_status ply_face(vx_tri_stream *s, vx_error *err) {
  if (ply_face_fast(s)) return VX_OK;
  s->poly_n = s->poly_at = 0;
  for (int i = 0; i < s->nfprop; i++) {
    const ts_prop *p = &s->fprop[i];
    double v;
    if (!p->count_type) {
      if (!ts_value(s, p->type, &v)) return corrupt(s, err, "it ends within its faces");
      continue;
    }
    if (!ts_value(s, p->count_type, &v)) return corrupt(s, err, "it ends within its faces");
    if (!(v >= 0.0 && v <= (double)TS_MAX_LIST))
      return corrupt(s, err, "a face claims more than 2^20 vertices");
    const uint64_t n = (uint64_t)v;
    if (p->role == ROLE_INDICES && n > s->poly_cap) {
      uint32_t *np = (uint32_t *)vx_realloc(s->poly, (size_t)n * sizeof *np);
      if (!np) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
      s->poly = np;
      s->poly_cap = n;
    }
    for (uint64_t k = 0; k < n; k++) {
      if (!ts_value(s, p->type, &v)) return corrupt(s, err, "it ends within its faces");
      if (p->role != ROLE_INDICES) continue;
      if (!(v >= 0.0 && v < (double)s->verts))
        return corrupt(s, err, "a face names a vertex the file does not have");
      s->poly[k] = (uint32_t)v;
    }
    if (p->role == ROLE_INDICES) s->poly_n = n;
  }
  /* assimp triangulates polygons its own way (the concave corner of a quad, ear clipping):
   * such a file is left to it */
  if (s->poly_n > 3) return unsupported(s, err, "a face with more than 3 vertices");
  return VX_OK;
}

vx_status vx_tri_stream_read(vx_tri_stream *s, float *tri, uint64_t max, uint64_t *got,
                             vx_error *err) {
  *got = 0;
  while (*got < max) {
    float *t = tri + 9 * *got;
    const uint64_t bulk = s->stl ? stl_bulk(s, t, max - *got) : ply_faces_bulk(s, t, max - *got);
    if (bulk) {
      *got += bulk;
      continue;
    }
    if (s->stl) {
      if (s->face == s->faces) break;
      unsigned char r[50];
      if (!ts_bytes(s, r, 50)) return corrupt(s, err, "it ends within its triangles");
      stl_record(r, t);
      s->face++;
      (*got)++;
      continue;
    }
    /* PLY: the fan of the current face, then the next face */
    if (s->poly_at + 2 < s->poly_n) {
      const uint32_t c[3] = {s->poly[0], s->poly[s->poly_at + 1], s->poly[s->poly_at + 2]};
      for (int k = 0; k < 3; k++) memcpy(t + 3 * k, s->vert + 3 * (uint64_t)c[k], 12);
      s->poly_at++;
      (*got)++;
      continue;
    }
    if (s->face == s->faces) break;
    vx_status st = ply_face(s, err);
    if (st != VX_OK) return st;
    s->lines += s->poly_n < 3;
    s->face++;
  }
  return VX_OK;
}

uint64_t vx_tri_stream_dropped(const vx_tri_stream *s) { return s->lines; }

void vx_tri_stream_close(vx_tri_stream *s) {
  if (!s) return;
  vx_free(s->buf);
  vx_free(s->vert);
  vx_free(s->poly);
  vx_free(s);
}

/* Triangles read a piece at a time, each piece checked on every core (vx_soup_keep). */
enum { PIECE = 1 << 20 };

struct vx_tri_pieces {
  FILE *f;
  vx_tri_stream *s;
  char what[600];         /* the file's name in messages (the stream keeps a pointer to it) */
  float *buf;
};

void vx_tri_pieces_close(vx_tri_pieces *p) {
  if (!p) return;
  vx_tri_stream_close(p->s);
  if (p->f) fclose(p->f);
  vx_free(p->buf);
  vx_free(p);
}

vx_status vx_tri_pieces_open(const char *path, vx_tri_pieces **out, uint64_t *faces,
                             vx_error *err) {
  *out = NULL;
  vx_tri_pieces *p = (vx_tri_pieces *)vx_calloc(1, sizeof *p);
  if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  p->f = fopen(path, "rb");
  if (!p->f) {
    vx_free(p);
    return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  }
  struct stat st;
  snprintf(p->what, sizeof p->what, "'%s'", path);
  vx_status r = fstat(fileno(p->f), &st) == 0 && S_ISREG(st.st_mode)
                    ? vx_tri_stream_open(p->f, (uint64_t)st.st_size, p->what, &p->s, faces, err)
                    : vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", path);
  if (r == VX_OK && *faces > (UINT64_C(1) << 32))
    r = vx_error_set(err, VX_ERR_LIMIT, "cannot read '%s': more than 2^32 triangles", path);
  if (r == VX_OK) {
    p->buf = (float *)vx_malloc((size_t)PIECE * 9 * sizeof(float));
    if (!p->buf) r = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (r != VX_OK) {
    vx_tri_pieces_close(p);
    return r;
  }
  *out = p;
  return VX_OK;
}

vx_status vx_tri_pieces_next(vx_tri_pieces *p, vx_soup *tally, const float **tri, uint64_t *n,
                             vx_error *err) {
  *tri = p->buf;
  *n = 0;
  for (;;) { /* a piece whose triangles were all dropped is not the end */
    uint64_t got = 0;
    vx_status r = vx_tri_stream_read(p->s, p->buf, PIECE, &got, err);
    tally->skipped_nontriangle = vx_tri_stream_dropped(p->s);
    if (r != VX_OK || got == 0) return r;
    vx_soup piece;
    memset(&piece, 0, sizeof piece);
    piece.pos = p->buf;
    for (int i = 0; i < 3; i++) piece.bbox_min[i] = INFINITY, piece.bbox_max[i] = -INFINITY;
    r = vx_soup_keep(&piece, got, 0, err);
    if (r != VX_OK) return r;
    tally->tri_count += piece.tri_count;
    tally->skipped_nonfinite += piece.skipped_nonfinite;
    tally->skipped_degenerate += piece.skipped_degenerate;
    for (int i = 0; i < 3; i++) {
      if (piece.bbox_min[i] < tally->bbox_min[i]) tally->bbox_min[i] = piece.bbox_min[i];
      if (piece.bbox_max[i] > tally->bbox_max[i]) tally->bbox_max[i] = piece.bbox_max[i];
    }
    if (piece.tri_count) {
      *n = piece.tri_count;
      return VX_OK;
    }
  }
}

vx_status vx_soup_import_stream(const char *path, vx_soup *out, vx_error *err) {
  return vx_soup_import_stream_limited(path, 0, 0.0, out, NULL, err);
}

vx_status vx_soup_import_stream_limited(const char *path, uint64_t mem_limit, double timeout_s,
                                        vx_soup *out, int *taken, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (taken) *taken = 0;
  const double deadline = timeout_s > 0 ? vx_clock_seconds() + timeout_s : 0.0;
  FILE *f = fopen(path, "rb");
  if (!f) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  char what[600];
  snprintf(what, sizeof what, "'%s'", path);
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", path);
  }
  vx_tri_stream *s = NULL;
  uint64_t faces = 0;
  vx_status r = vx_tri_stream_open(f, (uint64_t)st.st_size, what, &s, &faces, err);
  if (taken) *taken = r != VX_ERR_FORMAT;
  /* the vertices are held by now; the triangles take at most 36 bytes a face */
  if (r == VX_OK && mem_limit &&
      (double)vx_resident_bytes() + 36.0 * (double)faces > (double)mem_limit) {
    char lim[32];
    r = vx_error_set(err, VX_ERR_LIMIT, "cannot read '%s': its %llu triangles (%.1f MiB) do not "
                     "fit under the memory limit (%s)", path, (unsigned long long)faces,
                     36.0 * (double)faces / 1048576.0,
                     vx_bytes_text((double)mem_limit, lim, sizeof lim));
  }
  /* The triangles are read straight into the soup, which holds at most one a face (a face of
   * more than 3 vertices is not streamed), checked a piece at a time. */
  if (r == VX_OK && faces > (UINT64_C(1) << 32))
    r = vx_error_set(err, VX_ERR_LIMIT, "cannot read '%s': more than 2^32 triangles", path);
  if (r == VX_OK) out->pos = (float *)vx_malloc((size_t)(faces ? faces : 1) * 9 * sizeof(float));
  if (r == VX_OK && !out->pos)
    r = vx_error_set(err, VX_ERR_NOMEM, "cannot hold the %llu triangles of '%s' in memory",
                     (unsigned long long)faces, path);
  for (int i = 0; i < 3; i++) out->bbox_min[i] = INFINITY, out->bbox_max[i] = -INFINITY;
  while (r == VX_OK) {
    uint64_t got = 0, room = faces - out->tri_count;
    r = vx_tri_stream_read(s, out->pos + 9 * out->tri_count, room < PIECE ? room : PIECE, &got,
                           err);
    if (r != VX_OK || got == 0) break;
    r = vx_soup_keep(out, got, 0, err);
    if (r == VX_OK && deadline > 0 && vx_clock_seconds() > deadline)
      r = vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the import did not finish within "
                       "%g s", path, timeout_s);
  }
  if (s) out->skipped_nontriangle = vx_tri_stream_dropped(s);
  if (r == VX_OK && out->tri_count < faces) { /* faces dropped: give their room back */
    float *fit = (float *)vx_realloc(out->pos, (size_t)(out->tri_count ? out->tri_count : 1) * 9 *
                                                   sizeof(float));
    if (fit) out->pos = fit;
  }
  vx_tri_stream_close(s);
  fclose(f);
  if (r == VX_OK && out->tri_count == 0)
    r = vx_error_set(err, VX_ERR_EMPTY,
                     "'%s' has no usable triangles (dropped %llu degenerate, %llu non-finite)",
                     path, (unsigned long long)out->skipped_degenerate,
                     (unsigned long long)out->skipped_nonfinite);
  if (r != VX_OK) {
    vx_soup_free(out);
    memset(out, 0, sizeof *out);
    return r;
  }
  out->mesh_count = 1;
  return VX_OK;
}
