/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_tri_stream.c - the streaming reader of binary STL and PLY (formats/tri_stream.h)
 * against assimp's reading of the same files (vx_soup_import below the streaming size, or from
 * memory): the same triangles bit for bit, the same ones dropped, for STL, PLY of either byte
 * order, float and double coordinates, index and count types, ignored properties, lines and
 * degenerate and non-finite triangles; files it does not stream (polygons among them) are
 * VX_ERR_FORMAT (the
 * import then uses assimp), damaged ones VX_ERR_CORRUPT; a file over the streaming size imports
 * through it with assimp's triangles. */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_import.h"
#include "formats/tri_stream.h"
#include "sys/alloc.h"
#include "check.h"

#include <sys/resource.h>
#include <unistd.h>

static char dir[256];

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = (unsigned char *)realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void put_str(buf *b, const char *s) { put(b, s, strlen(s)); }
/* an integer or float of n bytes, in the file's byte order */
static void put_num(buf *b, uint64_t u, int n, int big) {
  unsigned char x[8];
  for (int k = 0; k < n; k++) x[big ? n - 1 - k : k] = (unsigned char)(u >> (8 * k));
  put(b, x, (size_t)n);
}
static void put_f32(buf *b, float f, int big) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_num(b, u, 4, big);
}
static void put_f64(buf *b, double d, int big) {
  uint64_t u;
  memcpy(&u, &d, 8);
  put_num(b, u, 8, big);
}

static const char *write_file(const char *name, const buf *b) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(b->p, 1, b->n, f) == b->n);
  if (f) fclose(f);
  return path;
}

/* NV vertices, deterministic: more than the stream decodes at once (4096), so that its bulk
 * decoding on every core is what the PLY cases read */
#define NV 8192
static float vx_[NV][3];
static void vertices(void) {
  uint64_t r = 12345;
  for (int i = 0; i < NV; i++)
    for (int a = 0; a < 3; a++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      vx_[i][a] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
  vx_[7][1] = 0.0f / 0.0f; /* a NaN vertex: its triangles are dropped */
}

/* face k's vertex c (0..3) */
static int corner(int k, int c) { return (k * 7 + c * 13 + (c == 3 ? 5 : 0)) % NV; }

static void same_as_assimp(const char *name, const buf *b, const char *ext) {
  char fname[64];
  snprintf(fname, sizeof fname, "%s.%s", name, ext);
  const char *path = write_file(fname, b);
  vx_soup a, s;
  vx_error ea, es;
  memset(&ea, 0, sizeof ea);
  memset(&es, 0, sizeof es);
  const vx_status sa = vx_soup_import(path, &a, &ea);
  const vx_status ss = vx_soup_import_stream(path, &s, &es);
  CHECK_MSG(sa == VX_OK && ss == VX_OK, "%s: assimp: %s; stream: %s", name, ea.msg, es.msg);
  if (sa == VX_OK && ss == VX_OK) {
    CHECK_MSG(a.tri_count == s.tri_count && a.tri_count > 0 &&
                  memcmp(a.pos, s.pos, (size_t)a.tri_count * 36) == 0,
              "%s: %llu against %llu triangles", name, (unsigned long long)a.tri_count,
              (unsigned long long)s.tri_count);
    CHECK_MSG(a.skipped_degenerate == s.skipped_degenerate &&
                  a.skipped_nonfinite == s.skipped_nonfinite &&
                  a.skipped_nontriangle == s.skipped_nontriangle,
              "%s: dropped %llu/%llu/%llu against %llu/%llu/%llu", name,
              (unsigned long long)a.skipped_degenerate, (unsigned long long)a.skipped_nonfinite,
              (unsigned long long)a.skipped_nontriangle, (unsigned long long)s.skipped_degenerate,
              (unsigned long long)s.skipped_nonfinite, (unsigned long long)s.skipped_nontriangle);
    CHECK_MSG(s.color == NULL && a.color == NULL, "%s: colour", name);
    for (int i = 0; i < 3; i++)
      CHECK(a.bbox_min[i] == s.bbox_min[i] && a.bbox_max[i] == s.bbox_max[i]);
  }
  vx_soup_free(&a);
  vx_soup_free(&s);
  unlink(path);
}

#define NF 300

static void stl(buf *b, int faces) {
  b->n = 0;
  char head[80];
  memset(head, ' ', 80);
  memcpy(head, "solid but binary", 16); /* binary by its size, as assimp decides */
  put(b, head, 80);
  put_num(b, (uint64_t)faces, 4, 0);
  for (int k = 0; k < faces; k++) {
    for (int a = 0; a < 3; a++) put_f32(b, 0.0f, 0);
    for (int c = 0; c < 3; c++)
      for (int a = 0; a < 3; a++) put_f32(b, vx_[corner(k, k % 50 == 3 ? 0 : c)][a], 0);
    put_num(b, 0, 2, 0);
  }
}

static void binary_stl_as_assimp_reads_it(void) {
  buf b = {0};
  stl(&b, NF);
  same_as_assimp("stl", &b, "stl");
  free(b.p);
}

/* a PLY of nf faces: coordinates float (8: double), index count type ct and index type it
 * (bytes), extra vertex and face properties, quads every 5th face (quads), a line every 40th
 * (lines: else every 10000th, from face 1, so that runs longer than the stream's bulk remain) */
static void ply_n(buf *b, int nf, int lines, int big, int dbl, int ct, int it, int extra,
                  int quads, int crlf) {
  const char *nl = crlf ? "\r\n" : "\n";
  static const char *ints[] = {"", "uchar", "ushort", "", "uint"};
  char h[1024];
  snprintf(h, sizeof h,
           "ply%sformat %s 1.0%scomment made by a test%selement vertex %d%s%s"
           "property %s x%sproperty %s y%sproperty %s z%s%selement face %d%s"
           "property list %s %s vertex_indices%s%send_header%s",
           nl, big ? "binary_big_endian" : "binary_little_endian", nl, nl, NV, nl,
           extra ? "property float nx\nproperty uchar quality\n" : "", dbl ? "double" : "float",
           nl, dbl ? "double" : "float", nl, dbl ? "double" : "float", nl,
           extra ? "property float confidence\n" : "", nf, nl, ints[ct], ints[it], nl,
           extra ? "property int flags\n" : "", nl);
  b->n = 0;
  put_str(b, h);
  for (int i = 0; i < NV; i++) {
    if (extra) put_f32(b, 1.0f, big), put_num(b, 9, 1, big);
    for (int a = 0; a < 3; a++) {
      if (dbl)
        put_f64(b, (double)vx_[i][a], big);
      else
        put_f32(b, vx_[i][a], big);
    }
    if (extra) put_f32(b, 0.5f, big);
  }
  for (int k = 0; k < nf; k++) {
    const int n = k % (lines ? 40 : 10000) == 1 ? 2 : (quads && k % 5 == 0 ? 4 : 3);
    put_num(b, (uint64_t)n, ct, big);
    for (int c = 0; c < n; c++) put_num(b, (uint64_t)corner(k, k % 50 == 3 ? 0 : c), it, big);
    if (extra) put_num(b, 77, 4, big);
  }
}

static void ply(buf *b, int big, int dbl, int ct, int it, int extra, int quads, int crlf) {
  ply_n(b, NF, 1, big, dbl, ct, it, extra, quads, crlf);
}

static void binary_ply_as_assimp_reads_it(void) {
  buf b = {0};
  static const struct {
    int big, dbl, ct, it, extra, quads, crlf;
  } cases[] = {{0, 0, 1, 4, 0, 0, 0}, {1, 0, 1, 4, 1, 0, 0}, {0, 1, 2, 2, 1, 0, 0},
               {1, 1, 4, 4, 0, 0, 1}, {0, 0, 1, 4, 1, 1, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ply(&b, cases[k].big, cases[k].dbl, cases[k].ct, cases[k].it, cases[k].extra,
        cases[k].quads, cases[k].crlf);
    char name[32];
    snprintf(name, sizeof name, "ply%zu", k);
    if (cases[k].quads) { /* polygons: left to assimp's triangulation */
      vx_error e;
      const char *path = write_file("quads.ply", &b);
      vx_soup s;
      CHECK(vx_soup_import_stream(path, &s, &e) == VX_ERR_FORMAT && strstr(e.msg, "more than 3"));
      unlink(path);
      continue;
    }
    same_as_assimp(name, &b, "ply");
  }
  /* the common layout (uchar count, int indices) in runs longer than the bulk, broken by lines
   * now and then; and a binary STL of as many faces */
  ply_n(&b, 30000, 0, 0, 0, 1, 4, 0, 0, 0);
  same_as_assimp("ply_runs", &b, "ply");
  stl(&b, 30000);
  same_as_assimp("stl_runs", &b, "stl");
  free(b.p);
}

/* the stream's status for the bytes of b */
static vx_status stream_status(const buf *b, vx_error *e) {
  const char *path = write_file("x.ply", b);
  vx_soup s;
  memset(e, 0, sizeof *e);
  vx_status st = vx_soup_import_stream(path, &s, e);
  CHECK((s.pos == NULL && s.tri_count == 0) || st == VX_OK);
  vx_soup_free(&s);
  unlink(path);
  return st;
}

static void other_files_left_to_assimp_and_damage_refused(void) {
  buf b = {0};
  vx_error e;
  const char *asc = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float "
                    "y\nproperty float z\nelement face 1\nproperty list uchar int "
                    "vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n";
  put_str(&b, asc);
  CHECK(stream_status(&b, &e) == VX_ERR_FORMAT);
  b.n = 0;
  put_str(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
              "property float y\nproperty float z\nproperty uchar red\nend_header\n");
  CHECK(stream_status(&b, &e) == VX_ERR_FORMAT && strstr(e.msg, "not streamed"));
  b.n = 0;
  put_str(&b, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
  CHECK(stream_status(&b, &e) == VX_ERR_FORMAT);
  /* damaged: an index past the vertices, a file cut short, counts beyond the file */
  ply(&b, 0, 0, 1, 4, 0, 0, 0);
  const size_t whole = b.n;
  b.p[whole - 1] = 0x7f; /* the last index, little-endian int: its high byte */
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT && strstr(e.msg, "vertex the file does not"));
  b.n = whole - 5;
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT && strstr(e.msg, "ends within"));
  /* an index past the vertices in the middle of a run read in bulk: the same error */
  ply_n(&b, 30000, 0, 0, 0, 1, 4, 0, 0, 0);
  /* face 15000's first index, its high byte: 14999 triangles and the line at 20001 after it */
  b.p[b.n - (13 * 14999 + 9) + 4] = 0x7f;
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT && strstr(e.msg, "vertex the file does not"));
  b.n = 0;
  put_str(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
              "property float y\nproperty float z\nelement face 4000000000\nproperty list uchar "
              "int vertex_indices\nend_header\n");
  for (int i = 0; i < 9; i++) put_f32(&b, (float)i, 0);
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT && strstr(e.msg, "more bytes than the file"));
  b.n = 0;
  put_str(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 99999999999\nproperty float "
              "x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int "
              "vertex_indices\nend_header\n");
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT);
  b.n = 0;
  put_str(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
              "property float y\nproperty float z\nelement face 1\nproperty list uint int "
              "vertex_indices\nend_header\n");
  for (int i = 0; i < 9; i++) put_f32(&b, (float)i, 0);
  put_num(&b, 0xffffffffu, 4, 0);
  for (int i = 0; i < 3; i++) put_num(&b, (uint64_t)i, 4, 0);
  CHECK(stream_status(&b, &e) == VX_ERR_CORRUPT && strstr(e.msg, "2^20"));
  free(b.p);
}

/* A binary STL over the streaming size: vx_soup_import streams it; assimp from memory gives the
 * same triangles. */
static void large_file_imported_by_the_stream(void) {
  buf b = {0};
  const int faces = (64 << 20) / 50 + 100;
  stl(&b, faces);
  const char *path = write_file("large.stl", &b);
  free(b.p); /* read back below, after the streamed import */
  b.p = NULL;
  vx_soup a, s;
  vx_error e;
  struct rusage u0, u1;
  getrusage(RUSAGE_SELF, &u0);
  CHECK_MSG(vx_soup_import(path, &s, &e) == VX_OK, "%s", e.msg);
  getrusage(RUSAGE_SELF, &u1);
  /* streamed: the peak grew by the triangles (36 B each) and a buffer, not by the file and a
   * scene as well (assimp holds both). Not under AddressSanitizer, whose quarantine keeps freed
   * blocks resident. */
  const double grew = (double)(u1.ru_maxrss - u0.ru_maxrss) * 1024.0;
#if !defined(__SANITIZE_ADDRESS__)
  CHECK_MSG(grew < 36.0 * faces + 24.0 * 1048576.0, "peak grew by %.0f MiB", grew / 1048576.0);
#else
  (void)grew;
#endif
  FILE *f = fopen(path, "rb");
  b.cap = b.n;
  b.p = (unsigned char *)malloc(b.n);
  CHECK(f && b.p && fread(b.p, 1, b.n, f) == b.n);
  if (f) fclose(f);
  CHECK_MSG(vx_soup_import_memory(b.p, b.n, "stl", &a, &e) == VX_OK, "%s", e.msg);
  CHECK(a.tri_count == s.tri_count && s.tri_count > 1000000 &&
        memcmp(a.pos, s.pos, (size_t)a.tri_count * 36) == 0);
  CHECK(a.skipped_degenerate == s.skipped_degenerate && a.skipped_nonfinite == s.skipped_nonfinite);
  vx_soup_free(&a);
  vx_soup_free(&s);
  unlink(path);
  free(b.p);
}

/* A large binary PLY ("list uchar int", the layout read straight from the buffer) read by the
 * isolated import in this process: the triangles assimp gives; refused under a memory limit its
 * triangles do not fit and past its time limit, before or while reading them. */
static void large_ply_read_in_process(void) {
  buf b = {0};
  const int nv = 1 << 20, faces = (64 << 20) / 13 + 100;
  char h[512];
  snprintf(h, sizeof h, "ply\nformat binary_little_endian 1.0\nelement vertex %d\nproperty "
           "float x\nproperty float y\nproperty float z\nelement face %d\nproperty list uchar "
           "int vertex_indices\nend_header\n", nv, faces);
  put_str(&b, h);
  for (int i = 0; i < nv; i++) {
    put_f32(&b, (float)(i & 1023), 0);
    put_f32(&b, (float)(i >> 10), 0);
    put_f32(&b, (float)((i * 7) % 13), 0);
  }
  for (int k = 0; k < faces; k++) {
    put_num(&b, 3, 1, 0);
    const uint32_t a = (uint32_t)(k * 3u) % (uint32_t)(nv - 1100);
    put_num(&b, a, 4, 0);
    put_num(&b, a + 1, 4, 0);
    put_num(&b, k % 97 == 5 ? a : a + 1025, 4, 0); /* now and then degenerate */
  }
  const char *path = write_file("large.ply", &b);
  vx_soup a, s;
  vx_error e;
  CHECK_MSG(vx_soup_import_isolated(path, 0, 0, &s, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_soup_import_memory(b.p, b.n, "ply", &a, &e) == VX_OK, "%s", e.msg);
  CHECK(a.tri_count == s.tri_count && s.tri_count > 4000000 &&
        memcmp(a.pos, s.pos, (size_t)a.tri_count * 36) == 0);
  CHECK(a.skipped_degenerate == s.skipped_degenerate && s.skipped_degenerate > 40000);
  vx_soup_free(&a);
  vx_soup_free(&s);
  /* limits: the triangles' 36 bytes a face over the limit; a time-out */
  vx_status st = vx_soup_import_isolated(path, 0, (uint64_t)faces * 36 / 2, &s, &e);
  CHECK_MSG(st == VX_ERR_LIMIT && strstr(e.msg, "do not fit under the memory limit") &&
                s.pos == NULL, "%d: %s", (int)st, e.msg);
  CHECK(vx_soup_import_isolated(path, 1e-6, 0, &s, &e) == VX_ERR_FORMAT &&
        strstr(e.msg, "did not finish") && s.pos == NULL);
  unlink(path);
  free(b.p);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/vx_test_stream.XXXXXX");
  if (!mkdtemp(dir)) CHECK_FATAL("cannot make a temporary directory");
  vertices();
  RUN(binary_stl_as_assimp_reads_it);
  RUN(binary_ply_as_assimp_reads_it);
  RUN(other_files_left_to_assimp_and_damage_refused);
  RUN(large_file_imported_by_the_stream);
  RUN(large_ply_read_in_process);
  CHECK(rmdir(dir) == 0);
  return check_summary();
}
