/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_precheck.c - header counts against file size (mesh_precheck.h).
 *
 * Every byte looked at comes from an untrusted file: the parsers stop at the end of the bytes
 * given, every count is read with saturation and multiplied with saturation, and anything they do
 * not understand is left to the importer (VX_OK). They only refuse a header they have parsed whose
 * counts cannot fit in the file.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_precheck.h"
#include "formats/precheck_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static int ext_is(const char *ext, const char *want) {
  if (!ext) return 0;
  size_t i = 0;
  for (; want[i]; i++)
    if (lower((unsigned char)ext[i]) != want[i]) return 0;
  return ext[i] == 0;
}

/* ---- binary STL ------------------------------------------------------------------------------ */

static vx_status check_stl(const unsigned char *p, size_t n, uint64_t size, const char *what,
                           vx_error *err) {
  if (size < 84 || n < 84) return VX_OK; /* too short to be binary: assimp decides */
  const uint64_t count = (uint64_t)p[80] | (uint64_t)p[81] << 8 | (uint64_t)p[82] << 16 |
                         (uint64_t)p[83] << 24;
  const uint64_t need = 84 + 50 * count; /* count < 2^32: no overflow */
  if (need <= size) return VX_OK;
  /* "solid" after blanks: an ascii STL, whose bytes 80..83 are text, not a count */
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
  if (n - i >= 5 && memcmp(p + i, "solid", 5) == 0) return VX_OK;
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its binary STL header declares %llu triangles (%llu "
                      "bytes), but the file has only %llu bytes",
                      what, (unsigned long long)count, (unsigned long long)need,
                      (unsigned long long)size);
}

/* ---- OFF ------------------------------------------------------------------------------------- */

/* Skips blanks, line ends and '#' comments, as assimp's OFF reader does between tokens. */
static void off_skip(const unsigned char *p, size_t n, size_t *i) {
  for (;;) {
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\r' || p[*i] == '\n')) (*i)++;
    if (*i >= n || p[*i] != '#') return;
    /* assimp's SkipLine: a comment ends at a CR, a LF or a NUL */
    while (*i < n && p[*i] != '\n' && p[*i] != '\r' && p[*i] != 0) (*i)++;
  }
}

static vx_status check_off(const unsigned char *p, size_t n, uint64_t size, int named_off,
                           const char *what, vx_error *err) {
  size_t i = 0;
  off_skip(p, n, &i);
  /* [ST][C][N][4][n]OFF; the keyword is optional in a file named .off */
  size_t k = i;
  int dim_given = 0;
  if (n - k >= 2 && p[k] == 'S' && p[k + 1] == 'T') k += 2;
  if (k < n && p[k] == 'C') k++;
  if (k < n && p[k] == 'N') k++;
  if (k < n && p[k] == '4') k++;
  if (k < n && p[k] == 'n') {
    dim_given = 1;
    k++;
  }
  /* assimp needs no separator after the keyword: "OFF40000000 3" declares 4e7 vertices */
  int keyword = n - k >= 3 && memcmp(p + k, "OFF", 3) == 0;
  if (!keyword && !named_off) return VX_OK;
  uint64_t dims = 3, nv = 0, nf = 0;
  if (keyword) {
    i = k + 3;
    off_skip(p, n, &i);
    if (dim_given) {
      if (!vx_pc_read_u64(p, n, &i, &dims)) return VX_OK;
      off_skip(p, n, &i);
    }
  }
  if (!vx_pc_read_u64(p, n, &i, &nv)) return VX_OK;
  off_skip(p, n, &i);
  if (!vx_pc_read_u64(p, n, &i, &nf)) return VX_OK;
  if (i >= n && n < size) return VX_OK; /* the count may go on past the bytes looked at */
  if (dims > 3) return VX_OK;           /* assimp refuses those */
  const uint64_t data = size > i ? size - i : 0;
  uint64_t need = vx_pc_add(vx_pc_mul(nv, dims ? 2 * dims : 1), vx_pc_mul(nf, 2));
  if (need > 0) need--; /* the last line needs no line end */
  if (need <= data) return VX_OK;
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its OFF header declares %llu vertices and %llu faces "
                      "(%llu bytes at the least), but only %llu bytes follow the counts",
                      what, (unsigned long long)nv, (unsigned long long)nf,
                      (unsigned long long)need, (unsigned long long)data);
}

/* ---- entry points ---------------------------------------------------------------------------- */

vx_status vx_mesh_precheck(const unsigned char *head, size_t n, uint64_t size, const char *ext,
                           const char *what, vx_error *err) {
  if (!head) return VX_OK;
  if (n > size) n = (size_t)size;
  if (n > VX_MESH_PRECHECK_HEAD) n = VX_MESH_PRECHECK_HEAD;
  if (!what) what = "the mesh data";
  /* a PLY the import rewrites (vx_ply_rewrite) is checked once rewritten */
  if (vx_ply_misread(head, n)) return VX_OK;
  vx_status s = vx_precheck_ply(head, n, size, what, err);
  if (s == VX_OK && ext_is(ext, "stl")) s = check_stl(head, n, size, what, err);
  if (s == VX_OK) s = check_off(head, n, size, ext_is(ext, "off"), what, err);
  return s;
}

const char *vx_mesh_path_ext(const char *path) {
  if (!path) return NULL;
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  return dot ? dot + 1 : NULL;
}

vx_status vx_mesh_precheck_file(const char *path, vx_error *err) {
  if (!path) return VX_OK;
  /* Non-blocking: a FIFO must not stall the check (the import refuses it with a message). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return VX_OK;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    close(fd);
    return VX_OK;
  }
  unsigned char *head = (unsigned char *)vx_malloc(VX_MESH_PRECHECK_HEAD);
  if (!head) {
    close(fd);
    return VX_OK; /* the import will meet the same shortage and say so */
  }
  size_t got = 0;
  while (got < VX_MESH_PRECHECK_HEAD) {
    ssize_t r = read(fd, head + got, VX_MESH_PRECHECK_HEAD - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  char what[600];
  snprintf(what, sizeof what, "'%s'", path);
  vx_status s = vx_mesh_precheck(head, got, (uint64_t)st.st_size, vx_mesh_path_ext(path), what,
                                 err);
  vx_free(head);
  return s;
}
