/* SPDX-License-Identifier: Apache-2.0 */
/* point_file.c - points in (.npy or text), values out (.npy or text): formats/point_file.h.
 *
 * Reading streams: the bytes go through one buffer (1 MiB, grown only for a longer text line or
 * .npy header), so a file's points are held once, never its bytes; a file in memory (the fuzz
 * target's way in) goes through the same code. The .npy header is a Python dict literal
 * ({'descr': '<f4', 'fortran_order': False, 'shape': (N, 3), }); it is parsed as exactly that
 * grammar (three known keys, quoted strings without escapes, True/False, a tuple of integers),
 * not evaluated. Numbers are assembled from their bytes in the file's byte order, so the host's
 * does not matter.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/point_file.h"
#include "sys/alloc.h"
#include "sys/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The buffer's first size; fuzzing builds start small so that inputs cross its boundaries. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define PF_CHUNK ((size_t)1 << 20)
#else
#define PF_CHUNK ((size_t)64)
#endif
#define PF_MAX_LINE ((size_t)1 << 20) /* a text line or an .npy header, at most */

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* ---- the byte source ------------------------------------------------------------------------- */

typedef struct reader {
  int fd;                 /* -1: the bytes are mem[0 .. mem_size) */
  const uint8_t *mem;
  size_t mem_size, mem_at;
  uint8_t *buf;           /* unread bytes: buf[at .. len) */
  size_t cap, len, at;
  uint64_t total, max_bytes;
  uint64_t size;          /* the source's size when known (a regular file, memory), else ~0 */
  int eof;
} reader;

/* Moves the unread bytes to the front, doubles the buffer when `grow`, and reads what fits. */
static vx_status fill(reader *r, int grow, vx_error *err) {
  if (r->at) {
    memmove(r->buf, r->buf + r->at, r->len - r->at);
    r->len -= r->at;
    r->at = 0;
  }
  if (grow || !r->buf) {
    const size_t want = r->buf ? r->cap * 2 : PF_CHUNK;
    uint8_t *b = (uint8_t *)vx_realloc(r->buf, want);
    if (!b) return vx_error_set(err, VX_ERR_NOMEM, "out of memory reading it");
    r->buf = b;
    r->cap = want;
  }
  while (r->len < r->cap && !r->eof) {
    size_t got;
    if (r->fd < 0) {
      got = r->mem_size - r->mem_at < r->cap - r->len ? r->mem_size - r->mem_at : r->cap - r->len;
      if (got) memcpy(r->buf + r->len, r->mem + r->mem_at, got);
      r->mem_at += got;
    } else {
      const ssize_t k = read(r->fd, r->buf + r->len, r->cap - r->len);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return vx_error_set(err, VX_ERR_IO, "cannot read it: %s", strerror(errno));
      got = (size_t)k;
    }
    r->eof = got == 0;
    r->len += got;
    r->total += got;
    if (r->total > r->max_bytes)
      return vx_error_set(err, VX_ERR_LIMIT, "larger than the %.1f MiB a file of points may "
                          "have here", (double)r->max_bytes / 1048576.0);
    if (r->fd < 0 || got == 0) break; /* a pipe gives what it has: parse that first */
  }
  return VX_OK;
}

/* The points read so far: *cap grown (doubling, at most `most`) to hold n + 1. */
static vx_status room(float **out, uint64_t *cap, uint64_t n, uint64_t most, vx_error *err) {
  if (n < *cap) return VX_OK;
  uint64_t c = *cap ? *cap * 2 : 4096;
  if (c > most) c = most;
  float *grown = c <= SIZE_MAX / 12 ? (float *)vx_realloc(*out, (size_t)c * 12) : NULL;
  if (!grown)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory after %llu points",
                        (unsigned long long)n);
  *out = grown;
  *cap = c;
  return VX_OK;
}

/* ---- .npy ------------------------------------------------------------------------------------ */

typedef struct cursor {
  const char *p, *e;
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->e && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int take(cursor *c, char ch) {
  skip_space(c);
  if (c->p < c->e && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes into out (cap bytes); 0 when there is none or it is too long. */
static int quoted(cursor *c, char *out, size_t cap) {
  skip_space(c);
  if (c->p >= c->e || (*c->p != '\'' && *c->p != '"')) return 0;
  const char q = *c->p++;
  size_t n = 0;
  while (c->p < c->e && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= cap) return 0;
    out[n++] = *c->p++;
  }
  if (c->p >= c->e) return 0;
  c->p++;
  out[n] = 0;
  return 1;
}

static int word(cursor *c, const char *w) {
  skip_space(c);
  const size_t n = strlen(w);
  if ((size_t)(c->e - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
  c->p += n;
  return 1;
}

/* (d0, d1, ...) with at most 4 entries, each below 2^63; *nd their count. */
static int shape_tuple(cursor *c, uint64_t *dims, int *nd) {
  *nd = 0;
  if (!take(c, '(')) return 0;
  for (;;) {
    if (take(c, ')')) return 1;
    skip_space(c);
    if (c->p >= c->e || *c->p < '0' || *c->p > '9' || *nd == 4) return 0;
    uint64_t v = 0;
    while (c->p < c->e && *c->p >= '0' && *c->p <= '9') {
      if (v > (UINT64_MAX / 2 - 9) / 10) return 0;
      v = v * 10 + (uint64_t)(*c->p++ - '0');
    }
    dims[(*nd)++] = v;
    if (!take(c, ',')) return take(c, ')');
  }
}

static uint64_t load_le(const uint8_t *b, int n, int big) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)b[big ? n - 1 - i : i] << (8 * i);
  return v;
}

typedef struct npy_info {
  uint64_t n;      /* points */
  int item, big, fortran;
  char descr[16];
} npy_info;

/* The header's dict text [c.p, c.e) into *h. */
static vx_status npy_dict(cursor c, npy_info *h, vx_error *err) {
  char key[32];
  int nd = -1;
  uint64_t dims[4];
  h->fortran = -1;
  h->descr[0] = 0;
  if (!take(&c, '{')) return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header is not a dict");
  while (!take(&c, '}')) {
    if (!quoted(&c, key, sizeof key) || !take(&c, ':'))
      return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header is not a dict of quoted keys");
    int ok;
    if (strcmp(key, "descr") == 0 && !h->descr[0]) ok = quoted(&c, h->descr, sizeof h->descr);
    else if (strcmp(key, "fortran_order") == 0 && h->fortran < 0)
      ok = word(&c, "True") ? (h->fortran = 1) : word(&c, "False") ? (h->fortran = 0, 1) : 0;
    else if (strcmp(key, "shape") == 0 && nd < 0) ok = shape_tuple(&c, dims, &nd);
    else {
      char shown[64];
      return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header's key '%s' is unknown or repeated",
                          vx_text_escape(shown, sizeof shown, key));
    }
    if (!ok)
      return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header's '%s' has no value of its kind",
                          key);
    if (!take(&c, ',')) {
      if (!take(&c, '}'))
        return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header dict is not closed");
      break;
    }
  }
  skip_space(&c);
  if (c.p != c.e || !h->descr[0] || h->fortran < 0 || nd < 0)
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header needs 'descr', 'fortran_order' and "
                        "'shape', and nothing after them");
  const char *d = h->descr;
  h->item = strcmp(d + 1, "f4") == 0 ? 4 : strcmp(d + 1, "f8") == 0 ? 8 : 0;
  if (!h->item || (d[0] != '<' && d[0] != '>' && d[0] != '=')) {
    char shown[64];
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: dtype '%s': points are float32 or float64",
                        vx_text_escape(shown, sizeof shown, d));
  }
  if (nd != 2 || dims[1] != 3) {
    char shape[96] = "(";
    for (int k = 0; k < nd; k++)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%llu", k ? ", " : "",
               (unsigned long long)dims[k]);
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: shape %s%s): points are an array of shape "
                        "(N, 3)", shape, nd == 1 ? "," : "");
  }
  h->big = d[0] == '>';
  h->n = dims[0];
  return VX_OK;
}

/* The header, whole in the buffer first (the magic is there already). */
static vx_status npy_header(reader *r, npy_info *h, vx_error *err) {
  vx_status s;
  while (r->len - r->at < 12 && !r->eof)
    if ((s = fill(r, r->at == 0 && r->len == r->cap, err)) != VX_OK) return s;
  const uint8_t *b = r->buf + r->at;
  const size_t have = r->len - r->at;
  if (have < 10) return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header is cut short");
  const unsigned major = b[6], minor = b[7];
  if (major < 1 || major > 3)
    return vx_error_set(err, VX_ERR_FORMAT, ".npy version %u.%u: versions 1 to 3 are read", major,
                        minor);
  const size_t start = major == 1 ? 10 : 12;
  if (have < start) return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header is cut short");
  const uint64_t hlen = load_le(b + 8, major == 1 ? 2 : 4, 0);
  if (hlen > PF_MAX_LINE)
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: a header of %llu bytes (at most 1 MiB are read)",
                        (unsigned long long)hlen);
  while (r->len - r->at < start + hlen && !r->eof)
    if ((s = fill(r, r->at == 0 && r->len == r->cap, err)) != VX_OK) return s;
  if (r->len - r->at < start + hlen)
    return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header claims %llu bytes, the file has "
                        "%llu after its start", (unsigned long long)hlen,
                        (unsigned long long)(r->len - r->at - start));
  const char *text = (const char *)r->buf + r->at + start;
  cursor c = {text, text + hlen};
  r->at += start + (size_t)hlen;
  return npy_dict(c, h, err);
}

/* The data after the header: n x 3 values, converted as they arrive; nothing after them. */
static vx_status npy_read(reader *r, uint64_t max_points, float **out, uint64_t *count,
                          vx_error *err) {
  npy_info h;
  vx_status s = npy_header(r, &h, err);
  if (s != VX_OK) return s;
  if (h.n > max_points)
    return vx_error_set(err, VX_ERR_LIMIT, ".npy: %llu points, more than the %llu allowed",
                        (unsigned long long)h.n, (unsigned long long)max_points);
  const uint64_t values = h.n * 3, need = values * (uint64_t)h.item;
  const uint64_t data_at = r->total - (r->len - r->at);
  /* what cannot be there is refused before anything is allocated for it */
  if (r->size != UINT64_MAX && need != r->size - data_at)
    return vx_error_set(err, VX_ERR_CORRUPT, ".npy: shape (%llu, 3) of %s needs %llu bytes of "
                        "data, the file holds %llu", (unsigned long long)h.n, h.descr + 1,
                        (unsigned long long)need, (unsigned long long)(r->size - data_at));
  if (need > r->max_bytes - data_at)
    return vx_error_set(err, VX_ERR_LIMIT, ".npy: shape (%llu, 3) of %s needs %llu bytes, more "
                        "than the %.1f MiB a file of points may have here", (unsigned long long)h.n,
                        h.descr + 1, (unsigned long long)need, (double)r->max_bytes / 1048576.0);
  uint64_t cap = 0, j = 0;
  float *xyz = NULL;
  while (j < values && s == VX_OK) {
    if (r->len - r->at < (size_t)h.item) {
      if (r->eof) break;
      s = fill(r, 0, err);
      continue;
    }
    /* grown to the points this buffer completes (a forged shape allocates no more than that) */
    uint64_t k = (r->len - r->at) / (size_t)h.item;
    if (k > values - j) k = values - j;
    const uint64_t upto = h.fortran ? h.n : (j + k + 2) / 3;
    while (cap < upto && s == VX_OK) s = room(&xyz, &cap, cap, h.n, err);
    for (uint64_t e = 0; e < k && s == VX_OK; e++, j++) {
      const uint64_t bits = load_le(r->buf + r->at, h.item, h.big);
      r->at += (size_t)h.item;
      float v;
      if (h.item == 4) {
        const uint32_t b32 = (uint32_t)bits;
        memcpy(&v, &b32, 4);
      } else {
        double d;
        memcpy(&d, &bits, 8);
        v = (float)d;
      }
      xyz[h.fortran ? (j % h.n) * 3 + j / h.n : j] = v;
    }
  }
  uint64_t extra = 0; /* what follows the data, counted to the end */
  while (s == VX_OK && j == values) {
    extra += r->len - r->at;
    r->at = r->len;
    if (r->eof) break;
    s = fill(r, 0, err);
  }
  if (s == VX_OK && (j < values || extra))
    s = vx_error_set(err, VX_ERR_CORRUPT, ".npy: shape (%llu, 3) of %s needs %llu bytes of "
                     "data, the file holds %llu", (unsigned long long)h.n, h.descr + 1,
                     (unsigned long long)need,
                     (unsigned long long)(j < values ? r->total - data_at : need + extra));
  if (s != VX_OK) {
    vx_free(xyz);
    return s;
  }
  *out = xyz;
  *count = h.n;
  return VX_OK;
}

/* ---- text ------------------------------------------------------------------------------------ */

static int separator(char ch) {
  return ch == ' ' || ch == '\t' || ch == ',' || ch == ';' || ch == '\r';
}

/* The numbers of the line [p, e): up to 3 into v; returns their count, -1 for a token that is not
 * a number (its start in *bad). */
static int line_numbers(const char *p, const char *e, double *v, const char **bad) {
  int count = 0;
  for (;;) {
    while (p < e && separator(*p)) p++;
    if (p >= e) return count;
    const char *t = p;
    while (p < e && !separator(*p)) p++;
    char tok[64];
    const size_t len = (size_t)(p - t);
    *bad = t;
    if (len >= sizeof tok) return -1;
    memcpy(tok, t, len);
    tok[len] = 0;
    char *end;
    const double d = strtod(tok, &end);
    if (end != tok + len) return -1;
    if (count < 3) v[count] = d;
    if (count < 1 << 20) count++;
  }
}

typedef struct text_state {
  float *out;
  uint64_t n, cap, line, max_points;
  int columns;
} text_state;

/* One line [p, e): a point, a comment, a blank, or a refusal naming it. */
static vx_status text_line(text_state *t, const char *p, const char *e, vx_error *err) {
  t->line++;
  while (p < e && separator(*p)) p++;
  if (p == e || *p == '#') return VX_OK;
  double v[3];
  const char *bad = p;
  const int k = line_numbers(p, e, v, &bad);
  if (k < 3) {
    char shown[48], cut[24];
    const size_t len = (size_t)(e - bad) < sizeof cut - 1 ? (size_t)(e - bad) : sizeof cut - 1;
    memcpy(cut, bad, len);
    cut[len] = 0;
    return k < 0 ? vx_error_set(err, VX_ERR_FORMAT, "line %llu: '%s' is not a number (a line "
                                "holds x y z; comments start with '#')",
                                (unsigned long long)t->line,
                                vx_text_escape(shown, sizeof shown, cut))
                 : vx_error_set(err, VX_ERR_FORMAT, "line %llu: %d number(s), a point needs 3",
                                (unsigned long long)t->line, k);
  }
  if (t->columns && k != t->columns)
    return vx_error_set(err, VX_ERR_FORMAT, "line %llu: %d numbers, the lines before it %d",
                        (unsigned long long)t->line, k, t->columns);
  if (t->n == t->max_points)
    return vx_error_set(err, VX_ERR_LIMIT, "more than the %llu points allowed",
                        (unsigned long long)t->max_points);
  t->columns = k;
  vx_status s = room(&t->out, &t->cap, t->n, t->max_points, err);
  if (s != VX_OK) return s;
  for (int i = 0; i < 3; i++) t->out[t->n * 3 + (uint64_t)i] = (float)v[i];
  t->n++;
  return VX_OK;
}

static vx_status text_read(reader *r, uint64_t max_points, float **out, uint64_t *count,
                           vx_error *err) {
  text_state t = {NULL, 0, 0, 0, max_points, 0};
  vx_status s = VX_OK;
  while (s == VX_OK) {
    const char *p = (const char *)r->buf + r->at, *end = (const char *)r->buf + r->len;
    const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
    if (nl) {
      s = text_line(&t, p, nl, err);
      r->at += (size_t)(nl - p) + 1;
    } else if (r->eof) {
      if (p < end) s = text_line(&t, p, end, err);
      break;
    } else if (r->at == 0 && r->len == r->cap && r->cap >= PF_MAX_LINE) {
      s = vx_error_set(err, VX_ERR_FORMAT, "line %llu: longer than 1 MiB",
                       (unsigned long long)t.line + 1);
    } else {
      s = fill(r, r->at == 0 && r->len == r->cap, err);
    }
  }
  if (s != VX_OK || !t.n) {
    vx_free(t.out);
    t.out = NULL;
    t.n = 0;
  }
  *out = t.out;
  *count = t.n;
  return s;
}

/* ---- reading --------------------------------------------------------------------------------- */

static vx_status read_points(reader *r, uint64_t max_points, float **xyz, uint64_t *n,
                             vx_error *err) {
  vx_status s = fill(r, 0, err);
  while (s == VX_OK && r->len < sizeof npy_magic && !r->eof) s = fill(r, 0, err);
  if (s == VX_OK)
    s = r->len >= sizeof npy_magic && memcmp(r->buf, npy_magic, sizeof npy_magic) == 0
            ? npy_read(r, max_points, xyz, n, err)
            : text_read(r, max_points, xyz, n, err);
  vx_free(r->buf);
  return s;
}

vx_status vx_point_file_parse(const uint8_t *data, size_t size, uint64_t max_points, float **xyz,
                              uint64_t *n, vx_error *err) {
  *xyz = NULL;
  *n = 0;
  if (!data && size) return vx_error_set(err, VX_ERR_INVALID_ARG, "no data");
  reader r;
  memset(&r, 0, sizeof r);
  r.fd = -1;
  r.mem = data;
  r.mem_size = size;
  r.max_bytes = size;
  r.size = size;
  return read_points(&r, max_points, xyz, n, err);
}

vx_status vx_point_file_read(const char *path, uint64_t max_bytes, uint64_t max_points,
                             float **xyz, uint64_t *n, vx_error *err) {
  *xyz = NULL;
  *n = 0;
  const int std_in = strcmp(path, "-") == 0;
  const int fd = std_in ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return vx_error_set(err, VX_ERR_IO, "%s: cannot open it: %s", path, strerror(errno));
  struct stat st;
  vx_status s = VX_OK;
  if (fstat(fd, &st) != 0) s = vx_error_set(err, VX_ERR_IO, "%s: %s", path, strerror(errno));
  else if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode))
    s = vx_error_set(err, VX_ERR_IO, "%s: a directory, socket or block device, not a file of "
                     "points", path);
  else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes)
    s = vx_error_set(err, VX_ERR_LIMIT, "%s: larger than the %.1f MiB a file of points may have "
                     "here", path, (double)max_bytes / 1048576.0);
  if (s == VX_OK) {
    reader r;
    memset(&r, 0, sizeof r);
    r.fd = fd;
    r.max_bytes = max_bytes;
    r.size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
    s = read_points(&r, max_points, xyz, n, err);
    if (s != VX_OK) vx_error_prefix(err, path);
  }
  if (!std_in) close(fd);
  return s;
}

/* ---- writing --------------------------------------------------------------------------------- */

typedef struct out_buf {
  vx_atomic_file af;
  char data[1 << 20];
  size_t len;
} out_buf;

static vx_status out_flush(out_buf *o, vx_error *err) {
  vx_status s = o->len ? vx_atomic_write(&o->af, o->data, o->len, err) : VX_OK;
  o->len = 0;
  return s;
}

/* Room for `need` more bytes (need <= the buffer). */
static vx_status out_room(out_buf *o, size_t need, vx_error *err) {
  return o->len + need > sizeof o->data ? out_flush(o, err) : VX_OK;
}

/* The .npy header into the empty buffer (it is at most 192 bytes). */
static void npy_write_header(out_buf *o, int f32, uint64_t n, uint32_t columns) {
  char dict[128];
  int len = columns == 1
                ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': "
                           "(%llu,), }", f32 ? "<f4" : "|u1", (unsigned long long)n)
                : snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': "
                           "(%llu, %u), }", f32 ? "<f4" : "|u1", (unsigned long long)n, columns);
  /* magic, version 1.0, length, dict, spaces, '\n': a multiple of 64 bytes, as numpy writes */
  const size_t total = (10 + (size_t)len + 1 + 63) / 64 * 64, hlen = total - 10;
  memcpy(o->data, npy_magic, 6);
  o->data[6] = 1;
  o->data[7] = 0;
  o->data[8] = (char)(hlen & 0xff);
  o->data[9] = (char)(hlen >> 8);
  memcpy(o->data + 10, dict, (size_t)len);
  memset(o->data + 10 + len, ' ', total - 11 - (size_t)len);
  o->data[total - 1] = '\n';
  o->len = total;
}

static vx_status write_rows(out_buf *o, int npy, const float *f32, const uint8_t *u8, uint64_t n,
                            uint32_t columns, vx_error *err) {
  vx_status s = VX_OK;
  const uint64_t values = n * columns;
  for (uint64_t i = 0; i < values && s == VX_OK; i++) {
    if ((s = out_room(o, 32, err)) != VX_OK) break;
    char *d = o->data + o->len;
    if (npy && f32) {
      uint32_t b;
      memcpy(&b, &f32[i], 4);
      for (int k = 0; k < 4; k++) d[k] = (char)(b >> (8 * k));
      o->len += 4;
    } else if (npy) {
      d[0] = (char)u8[i];
      o->len++;
    } else {
      const char sep = (i + 1) % columns ? ' ' : '\n';
      const int w = f32 ? snprintf(d, 32, "%.9g%c", (double)f32[i], sep)
                        : snprintf(d, 32, "%u%c", (unsigned)u8[i], sep);
      o->len += (size_t)w;
    }
  }
  return s == VX_OK ? out_flush(o, err) : s;
}

vx_status vx_value_file_write(const char *path, const float *f32, const uint8_t *u8, uint64_t n,
                              uint32_t columns, vx_error *err) {
  if (!path || (!f32) == (!u8) || columns < 1 || columns > 16 || n > UINT64_MAX / 16)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "values to write: a path, one array (float32 or "
                        "uint8) and 1 to 16 columns");
  const size_t pl = strlen(path);
  const int npy = pl >= 4 && strcmp(path + pl - 4, ".npy") == 0;
  out_buf *o = (out_buf *)vx_malloc(sizeof *o);
  if (!o) return vx_error_set(err, VX_ERR_NOMEM, "out of memory writing %s", path);
  o->len = 0;
  vx_status s = vx_atomic_open(&o->af, path, err);
  if (s == VX_OK) {
    if (npy) npy_write_header(o, f32 != NULL, n, columns);
    s = write_rows(o, npy, f32, u8, n, columns, err);
    if (s == VX_OK) s = vx_atomic_commit(&o->af, err);
    else vx_atomic_abort(&o->af);
  }
  vx_free(o);
  return s;
}
