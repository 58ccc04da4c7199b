/* SPDX-License-Identifier: Apache-2.0 */
/* point_file.c - points in (.npy or text), values out (.npy or text): formats/point_file.h.
 *
 * The .npy header is a Python dict literal ({'descr': '<f4', 'fortran_order': False, 'shape':
 * (N, 3), }); it is parsed as exactly that grammar (three known keys, quoted strings without
 * escapes, True/False, a tuple of integers), not evaluated. Numbers are assembled from their
 * bytes in the file's byte order, so the host's does not matter.
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

/* ---- .npy ------------------------------------------------------------------------------------ */

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

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

static vx_status npy_parse(const uint8_t *data, size_t size, uint64_t max_points, float **xyz,
                           uint64_t *count, vx_error *err) {
  if (size < 10) return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header is cut short");
  const unsigned major = data[6], minor = data[7];
  if (major < 1 || major > 3)
    return vx_error_set(err, VX_ERR_FORMAT, ".npy version %u.%u: versions 1 to 3 are read", major,
                        minor);
  const size_t start = major == 1 ? 10 : 12;
  if (size < start) return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header is cut short");
  const uint64_t hlen = load_le(data + 8, major == 1 ? 2 : 4, 0);
  if (hlen > size - start)
    return vx_error_set(err, VX_ERR_CORRUPT, ".npy: the header claims %llu bytes, the file has "
                        "%llu after its start", (unsigned long long)hlen,
                        (unsigned long long)(size - start));
  cursor c = {(const char *)data + start, (const char *)data + start + hlen};
  char key[32], descr[16] = "";
  int fortran = -1, nd = -1;
  uint64_t dims[4];
  if (!take(&c, '{')) return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header is not a dict");
  while (!take(&c, '}')) {
    if (!quoted(&c, key, sizeof key) || !take(&c, ':'))
      return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header is not a dict of quoted keys");
    int ok;
    if (strcmp(key, "descr") == 0 && !descr[0]) ok = quoted(&c, descr, sizeof descr);
    else if (strcmp(key, "fortran_order") == 0 && fortran < 0)
      ok = word(&c, "True") ? (fortran = 1) : word(&c, "False") ? (fortran = 0, 1) : 0;
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
  if (c.p != c.e || !descr[0] || fortran < 0 || nd < 0)
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: the header needs 'descr', 'fortran_order' and "
                        "'shape', and nothing after them");
  const int item = strcmp(descr + 1, "f4") == 0 ? 4 : strcmp(descr + 1, "f8") == 0 ? 8 : 0;
  if (!item || (descr[0] != '<' && descr[0] != '>' && descr[0] != '=')) {
    char shown[64];
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: dtype '%s': points are float32 or float64",
                        vx_text_escape(shown, sizeof shown, descr));
  }
  if (nd != 2 || dims[1] != 3) {
    char shape[96] = "(";
    for (int k = 0; k < nd; k++)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%llu", k ? ", " : "",
               (unsigned long long)dims[k]);
    return vx_error_set(err, VX_ERR_FORMAT, ".npy: shape %s%s): points are an array of shape "
                        "(N, 3)", shape, nd == 1 ? "," : "");
  }
  const int big = descr[0] == '>';
  const uint64_t n = dims[0], body = size - start - hlen;
  if (n > max_points)
    return vx_error_set(err, VX_ERR_LIMIT, ".npy: %llu points, more than the %llu allowed",
                        (unsigned long long)n, (unsigned long long)max_points);
  if (n > body / (3u * (unsigned)item) || body != n * 3u * (unsigned)item)
    return vx_error_set(err, VX_ERR_CORRUPT, ".npy: shape (%llu, 3) of %s needs %llu bytes of "
                        "data, the file holds %llu", (unsigned long long)n, descr + 1,
                        (unsigned long long)n * 3u * (unsigned)item, (unsigned long long)body);
  float *out = n ? (float *)vx_malloc((size_t)n * 3 * sizeof(float)) : NULL;
  if (n && !out) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu points",
                                     (unsigned long long)n);
  const uint8_t *src = data + start + hlen;
  for (uint64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      const uint64_t at = fortran ? (uint64_t)k * n + i : i * 3 + (uint64_t)k;
      const uint64_t bits = load_le(src + at * (uint64_t)item, item, big);
      float v;
      if (item == 4) {
        uint32_t b32 = (uint32_t)bits;
        memcpy(&v, &b32, 4);
      } else {
        double d;
        memcpy(&d, &bits, 8);
        v = (float)d;
      }
      out[i * 3 + (uint64_t)k] = v;
    }
  *xyz = out;
  *count = n;
  return VX_OK;
}

/* ---- text ------------------------------------------------------------------------------------ */

static int separator(char ch) { return ch == ' ' || ch == '\t' || ch == ',' || ch == ';' || ch == '\r'; }

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

static vx_status text_parse(const uint8_t *data, size_t size, uint64_t max_points, float **xyz,
                            uint64_t *count, vx_error *err) {
  const char *p = (const char *)data, *end = p + size;
  float *out = NULL;
  uint64_t n = 0, cap = 0, line = 0;
  int columns = 0;
  vx_status s = VX_OK;
  while (p < end && s == VX_OK) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    line++;
    const char *q = p;
    while (q < e && separator(*q)) q++;
    if (q < e && *q != '#') {
      double v[3];
      const char *bad = q;
      const int k = line_numbers(q, e, v, &bad);
      if (k < 3) {
        char shown[48], cut[24];
        const size_t len = (size_t)(e - bad) < sizeof cut - 1 ? (size_t)(e - bad) : sizeof cut - 1;
        memcpy(cut, bad, len);
        cut[len] = 0;
        s = k < 0 ? vx_error_set(err, VX_ERR_FORMAT, "line %llu: '%s' is not a number (a line "
                                 "holds x y z; comments start with '#')",
                                 (unsigned long long)line, vx_text_escape(shown, sizeof shown, cut))
                  : vx_error_set(err, VX_ERR_FORMAT, "line %llu: %d number(s), a point needs 3",
                                 (unsigned long long)line, k);
      } else if (columns && k != columns) {
        s = vx_error_set(err, VX_ERR_FORMAT, "line %llu: %d numbers, the lines before it %d",
                         (unsigned long long)line, k, columns);
      } else if (n == max_points) {
        s = vx_error_set(err, VX_ERR_LIMIT, "more than the %llu points allowed",
                         (unsigned long long)max_points);
      } else {
        columns = k;
        if (n == cap) {
          cap = cap ? cap * 2 : 4096;
          if (cap > max_points) cap = max_points;
          float *grown = cap <= SIZE_MAX / 12 ? (float *)vx_realloc(out, (size_t)cap * 12) : NULL;
          if (!grown) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory after %llu points",
                                       (unsigned long long)n);
          else out = grown;
        }
        if (s == VX_OK)
          for (int i = 0; i < 3; i++) out[n * 3 + (uint64_t)i] = (float)v[i];
        n++;
      }
    }
    p = e < end ? e + 1 : end;
  }
  if (s != VX_OK) {
    vx_free(out);
    return s;
  }
  if (!n) {
    vx_free(out);
    out = NULL;
  }
  *xyz = out;
  *count = n;
  return VX_OK;
}

vx_status vx_point_file_parse(const uint8_t *data, size_t size, uint64_t max_points, float **xyz,
                              uint64_t *n, vx_error *err) {
  *xyz = NULL;
  *n = 0;
  if (!data && size) return vx_error_set(err, VX_ERR_INVALID_ARG, "no data");
  if (size >= sizeof npy_magic && memcmp(data, npy_magic, sizeof npy_magic) == 0)
    return npy_parse(data, size, max_points, xyz, n, err);
  return text_parse(data, size, max_points, xyz, n, err);
}

/* ---- reading --------------------------------------------------------------------------------- */

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
    s = vx_error_set(err, VX_ERR_IO, "%s: a directory, socket or block device, not a file of points",
                     path);
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0, first = 1 << 16;
  if (s == VX_OK && S_ISREG(st.st_mode) && st.st_size > 0) {
    if ((uint64_t)st.st_size > max_bytes) s = VX_ERR_LIMIT;
    else first = (size_t)st.st_size + 1; /* +1: the end is seen without growing */
  }
  while (s == VX_OK) {
    if (len == cap) {
      if (cap >= max_bytes) {
        s = VX_ERR_LIMIT;
        break;
      }
      size_t want = cap ? cap * 2 : first;
      if (want > max_bytes) want = (size_t)max_bytes;
      uint8_t *grown = (uint8_t *)vx_realloc(buf, want);
      if (!grown) {
        s = vx_error_set(err, VX_ERR_NOMEM, "%s: out of memory reading it", path);
        break;
      }
      buf = grown;
      cap = want;
    }
    const ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) s = vx_error_set(err, VX_ERR_IO, "%s: cannot read it: %s", path, strerror(errno));
    if (r <= 0) break;
    len += (size_t)r;
  }
  if (!std_in) close(fd);
  if (s == VX_ERR_LIMIT)
    vx_error_set(err, s, "%s: larger than the %.1f MiB a file of points may have here", path,
                 (double)max_bytes / 1048576.0);
  if (s == VX_OK) {
    s = vx_point_file_parse(buf, len, max_points, xyz, n, err);
    if (s != VX_OK) vx_error_prefix(err, path);
  }
  vx_free(buf);
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

static vx_status npy_header(out_buf *o, int f32, uint64_t n, uint32_t columns, vx_error *err) {
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
  (void)err;
  return VX_OK;
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
    if (npy) s = npy_header(o, f32 != NULL, n, columns, err);
    if (s == VX_OK) s = write_rows(o, npy, f32, u8, n, columns, err);
    if (s == VX_OK) s = vx_atomic_commit(&o->af, err);
    else vx_atomic_abort(&o->af);
  }
  vx_free(o);
  return s;
}
