/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_point_file.c - the point files of `voxlod sample` (formats/point_file.h): .npy
 * files assembled here byte by byte from numpy's format description (versions 1 to 3, both byte
 * orders, both array orders, float32 and float64), text in its accepted shapes, every refusal
 * naming what is wrong, and the values written back as .npy and text checked byte for byte. (The
 * Python tests read the command's outputs with numpy itself.) */
#define _POSIX_C_SOURCE 200809L
#include "formats/point_file.h"
#include "sys/alloc.h"
#include "check.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

/* An .npy file: version major, the dict text, then raw data bytes. */
static size_t npy(uint8_t *out, int major, const char *dict, const void *data, size_t n) {
  const size_t start = major == 1 ? 10 : 12, dl = strlen(dict);
  const size_t hlen = (start + dl + 1 + 63) / 64 * 64 - start;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major;
  out[7] = 0;
  for (size_t k = 0; k < start - 8; k++) out[8 + k] = (uint8_t)(hlen >> (8 * k));
  memcpy(out + start, dict, dl);
  memset(out + start + dl, ' ', hlen - dl - 1);
  out[start + hlen - 1] = '\n';
  if (n) memcpy(out + start + hlen, data, n); /* data may be NULL for no points */
  return start + hlen + n;
}

static const float pts[4][3] = {{1.5f, -2.25f, 3.0f}, {0.0f, 1e-7f, -1e20f}, {7.0f, 8.0f, 9.0f},
                                {-0.5f, 0.25f, 100.0f}};

static int same_points(const float *got, uint64_t n) {
  if (n != 4 || !got) return 0;
  return memcmp(got, pts, sizeof pts) == 0;
}

static void swap_bytes(uint8_t *p, size_t item, size_t count) {
  for (size_t i = 0; i < count; i++)
    for (size_t k = 0; k < item / 2; k++) {
      uint8_t t = p[i * item + k];
      p[i * item + k] = p[i * item + item - 1 - k];
      p[i * item + item - 1 - k] = t;
    }
}

static void npy_versions_orders_and_types_read(void) {
  static uint8_t buf[4096];
  float *xyz;
  uint64_t n;
  vx_error e;
  for (int major = 1; major <= 3; major++) {
    size_t len = npy(buf, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }",
                     pts, sizeof pts);
    CHECK_MSG(vx_point_file_parse(buf, len, 100, &xyz, &n, &e) == VX_OK, "v%d: %s", major, e.msg);
    CHECK(same_points(xyz, n));
    vx_free(xyz);
  }
  /* float64, Fortran order (x of every point, then y, then z), big-endian, other spacing */
  double cols[12];
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 3; k++) cols[k * 4 + i] = (double)pts[i][k];
  size_t len = npy(buf, 1, "{\"shape\":(4,3),\"fortran_order\":True,\"descr\":\"<f8\"}", cols,
                   sizeof cols);
  CHECK_MSG(vx_point_file_parse(buf, len, 100, &xyz, &n, &e) == VX_OK, "%s", e.msg);
  CHECK(same_points(xyz, n));
  vx_free(xyz);
  float be[12];
  memcpy(be, pts, sizeof be);
  swap_bytes((uint8_t *)be, 4, 12);
  len = npy(buf, 2, "{'descr': '>f4', 'fortran_order': False, 'shape': (4, 3)}", be, sizeof be);
  CHECK_MSG(vx_point_file_parse(buf, len, 100, &xyz, &n, &e) == VX_OK, "%s", e.msg);
  CHECK(same_points(xyz, n));
  vx_free(xyz);
  /* no points */
  len = npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0);
  CHECK(vx_point_file_parse(buf, len, 100, &xyz, &n, &e) == VX_OK && n == 0 && !xyz);
}

static void npy_refusals_name_the_fault(void) {
  static uint8_t buf[4096];
  float *xyz = (float *)1;
  uint64_t n = 99;
  vx_error e;
  static const struct {
    const char *dict;
    size_t data;
    vx_status want;
    const char *says;
  } bad[] = {
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (4, 3), }", 48, VX_ERR_FORMAT, "'<i4'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", 32, VX_ERR_FORMAT, "(N, 3)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (12,), }", 48, VX_ERR_FORMAT, "(N, 3)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", 47, VX_ERR_CORRUPT,
       "holds 47"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", 49, VX_ERR_CORRUPT,
       "holds 49"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), 'x': 1}", 48, VX_ERR_FORMAT,
       "'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'shape': (4, 3), }", 48, VX_ERR_FORMAT, "repeated"},
      {"{'descr': '<f4', 'shape': (4, 3), }", 48, VX_ERR_FORMAT, "'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4, 3), }", 48, VX_ERR_FORMAT, "value"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), } x", 48, VX_ERR_FORMAT, "after"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3)}", 48,
       VX_ERR_FORMAT, "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 3)}", 48,
       VX_ERR_LIMIT, "allowed"},
      {"['descr', '<f4']", 48, VX_ERR_FORMAT, "dict"},
      {"{'de\\scr': '<f4'}", 48, VX_ERR_FORMAT, "dict"},
  };
  static uint8_t zeros[64];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const uint64_t max = bad[i].want == VX_ERR_LIMIT ? 1000 : 100;
    size_t len = npy(buf, 1, bad[i].dict, zeros, bad[i].data);
    memset(&e, 0, sizeof e);
    vx_status s = vx_point_file_parse(buf, len, max, &xyz, &n, &e);
    CHECK_MSG(s == bad[i].want && strstr(e.msg, bad[i].says) && !xyz && n == 0,
              "case %zu: status %d, '%s'", i, (int)s, e.msg);
  }
  /* more points than allowed; a header longer than the file; an unknown version; cut short */
  size_t len = npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", pts,
                   sizeof pts);
  CHECK(vx_point_file_parse(buf, len, 3, &xyz, &n, &e) == VX_ERR_LIMIT);
  CHECK(vx_point_file_parse(buf, 60, 100, &xyz, &n, &e) == VX_ERR_CORRUPT &&
        strstr(e.msg, "header claims"));
  buf[6] = 4;
  CHECK(vx_point_file_parse(buf, len, 100, &xyz, &n, &e) == VX_ERR_FORMAT &&
        strstr(e.msg, "version 4"));
  CHECK(vx_point_file_parse(buf, 8, 100, &xyz, &n, &e) == VX_ERR_CORRUPT);
}

static vx_status text(const char *s, uint64_t max, float **xyz, uint64_t *n, vx_error *e) {
  return vx_point_file_parse((const uint8_t *)s, strlen(s), max, xyz, n, e);
}

static void text_lines_read_and_refusals_name_the_line(void) {
  float *xyz;
  uint64_t n;
  vx_error e;
  static const char *good[] = {
      "1.5 -2.25 3\n0 1e-7 -1e20\n7 8 9\n-0.5 0.25 100\n",
      "# x y z\n\n1.5,-2.25,3\r\n  0\t1e-7\t-1e20\r\n7;8;9\n  # note\n-0.5 , 0.25 , 100",
      "1.5 -2.25 3 0 0 1\n0 1e-7 -1e20 1 0 0\n7 8 9 0 1 0\n-.5 .25 1e2 0 0 1\n",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    CHECK_MSG(text(good[i], 100, &xyz, &n, &e) == VX_OK, "case %zu: %s", i, e.msg);
    CHECK_MSG(same_points(xyz, n), "case %zu", i);
    vx_free(xyz);
  }
  CHECK(text("nan 0 0\ninf -inf 1\n", 100, &xyz, &n, &e) == VX_OK && n == 2 &&
        isnan(xyz[0]) && isinf(xyz[3]) && xyz[4] < 0);
  vx_free(xyz);
  CHECK(text("", 100, &xyz, &n, &e) == VX_OK && n == 0 && !xyz);
  CHECK(text("# only a comment\n\n", 100, &xyz, &n, &e) == VX_OK && n == 0);
  static const struct {
    const char *text;
    vx_status want;
    const char *says;
  } bad[] = {
      {"x,y,z\n1,2,3\n", VX_ERR_FORMAT, "line 1: 'x,y,z'"},
      {"1 2 3\n4 5\n", VX_ERR_FORMAT, "line 2: 2 number"},
      {"1 2 3\n\n4 5 6 7\n", VX_ERR_FORMAT, "line 3: 4 numbers, the lines before it 3"},
      {"1 2 3\n4 5 6x\n", VX_ERR_FORMAT, "line 2: '6x'"},
      {"1 2 0x\n", VX_ERR_FORMAT, "'0x'"},
      {"1 2 3\n4 5 6\n7 8 9\n", VX_ERR_LIMIT, "more than the 2 points"},
      {"1 2 \x1b[31m\n", VX_ERR_FORMAT, "\\x1b"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&e, 0, sizeof e);
    vx_status s = text(bad[i].text, 2, &xyz, &n, &e);
    CHECK_MSG(s == bad[i].want && strstr(e.msg, bad[i].says) && !xyz && n == 0,
              "case %zu: status %d, '%s'", i, (int)s, e.msg);
  }
  /* a number token longer than any float's text */
  char longtok[200];
  memset(longtok, '1', sizeof longtok);
  memcpy(longtok + 150, " 2 3\n", 6);
  CHECK(text(longtok, 100, &xyz, &n, &e) == VX_ERR_FORMAT);
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static uint8_t buf[1 << 16];
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

static void values_written_as_npy_and_text(void) {
  char path[512];
  vx_error e;
  const float d[6] = {1.5f, -0.0f, 3.14159274f, 1e-30f, NAN, -INFINITY};
  snprintf(path, sizeof path, "%s/d.npy", tmpdir);
  CHECK_MSG(vx_value_file_write(path, d, NULL, 6, 1, &e) == VX_OK, "%s", e.msg);
  size_t len;
  uint8_t *b = slurp(path, &len);
  const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }";
  /* version 1.0, the header (dict, spaces, newline) ending on a multiple of 64 bytes */
  const size_t data_at = b ? 10 + (size_t)(b[8] | b[9] << 8) : 0;
  CHECK(b && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0 && data_at % 64 == 0 &&
        len == data_at + 24);
  CHECK(b && memcmp(b + 10, want, strlen(want)) == 0 && b[data_at - 1] == '\n' &&
        b[data_at - 2] == ' ');
  for (int i = 0; b && i < 6 && len == data_at + 24; i++) { /* little-endian float32 */
    uint32_t bits = 0, v;
    for (int k = 0; k < 4; k++) bits |= (uint32_t)b[data_at + 4 * i + k] << (8 * k);
    memcpy(&v, &d[i], 4);
    CHECK(bits == v);
  }
  /* the .npy it wrote is read back as points when it has three columns */
  const float p[6] = {1, 2, 3, 4, 5, 6};
  CHECK(vx_value_file_write(path, p, NULL, 2, 3, &e) == VX_OK);
  b = slurp(path, &len);
  float *xyz;
  uint64_t n;
  CHECK(b && vx_point_file_parse(b, len, 10, &xyz, &n, &e) == VX_OK && n == 2 &&
        memcmp(xyz, p, sizeof p) == 0);
  vx_free(xyz);
  /* uint8 rows as (N, 4) and as text; floats as text read back to the same bits */
  const uint8_t rgba[8] = {0, 1, 2, 255, 10, 20, 30, 40};
  CHECK(vx_value_file_write(path, NULL, rgba, 2, 4, &e) == VX_OK);
  b = slurp(path, &len);
  want = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 4), }";
  CHECK(b && len == 128 + 8 && b[8] == 118 && memcmp(b + 10, want, strlen(want)) == 0 &&
        memcmp(b + 128, rgba, 8) == 0);
  snprintf(path, sizeof path, "%s/c.txt", tmpdir);
  CHECK(vx_value_file_write(path, NULL, rgba, 2, 4, &e) == VX_OK);
  b = slurp(path, &len);
  CHECK(b && len == 22 && memcmp(b, "0 1 2 255\n10 20 30 40\n", 22) == 0);
  CHECK(vx_value_file_write(path, d, NULL, 3, 2, &e) == VX_OK);
  b = slurp(path, &len);
  CHECK(b && len > 0);
  float back[6];
  if (b && len < 200) {
    char s[200];
    memcpy(s, b, len);
    s[len] = 0;
    CHECK(sscanf(s, "%g %g\n%g %g\n%g %g\n", &back[0], &back[1], &back[2], &back[3], &back[4],
                 &back[5]) == 6);
    CHECK(memcmp(back, d, 4 * sizeof(float)) == 0 && isnan(back[4]) && back[5] == -INFINITY);
  }
  /* refusals: both arrays, neither, 0 or 17 columns; nothing is left behind */
  CHECK(vx_value_file_write(path, d, rgba, 1, 1, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_value_file_write(path, NULL, NULL, 1, 1, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_value_file_write(path, d, NULL, 1, 0, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_value_file_write(path, d, NULL, 1, 17, &e) == VX_ERR_INVALID_ARG);
  snprintf(path, sizeof path, "%s/no/such/dir.npy", tmpdir);
  CHECK(vx_value_file_write(path, d, NULL, 1, 1, &e) == VX_ERR_IO);
}

static void files_read_within_their_limit(void) {
  char path[512];
  vx_error e;
  snprintf(path, sizeof path, "%s/p.txt", tmpdir);
  FILE *f = fopen(path, "w");
  for (int i = 0; f && i < 20000; i++) fprintf(f, "%d %d.5 -%d\n", i, i, i);
  if (f) fclose(f);
  float *xyz;
  uint64_t n;
  CHECK_MSG(vx_point_file_read(path, 1 << 20, 100000, &xyz, &n, &e) == VX_OK, "%s", e.msg);
  CHECK(n == 20000 && xyz[3 * 19999] == 19999.0f && xyz[3 * 19999 + 1] == 19999.5f &&
        xyz[3 * 19999 + 2] == -19999.0f);
  vx_free(xyz);
  CHECK(vx_point_file_read(path, 1000, 100000, &xyz, &n, &e) == VX_ERR_LIMIT &&
        strstr(e.msg, "larger than"));
  CHECK(vx_point_file_read(tmpdir, 1 << 20, 100, &xyz, &n, &e) == VX_ERR_IO &&
        strstr(e.msg, "directory"));
  snprintf(path, sizeof path, "%s/missing.npy", tmpdir);
  CHECK(vx_point_file_read(path, 1 << 20, 100, &xyz, &n, &e) == VX_ERR_IO &&
        strstr(e.msg, "missing.npy"));
}

/* Points from standard input fed by a child through a pipe: the bytes arrive in pieces. */
static vx_status from_pipe(const uint8_t *bytes, size_t n, uint64_t max_bytes, float **xyz,
                           uint64_t *count, vx_error *e) {
  int fds[2];
  if (pipe(fds) != 0) CHECK_FATAL("pipe failed");
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    for (size_t at = 0; at < n;) { /* odd pieces, so that values straddle the reads */
      const size_t k = n - at < 7777 ? n - at : 7777;
      const ssize_t w = write(fds[1], bytes + at, k);
      if (w <= 0) _exit(1);
      at += (size_t)w;
    }
    _exit(0);
  }
  close(fds[1]);
  const int saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  vx_status s = vx_point_file_read("-", max_bytes, 1u << 30, xyz, count, e);
  dup2(saved, 0);
  close(saved);
  int status;
  waitpid(pid, &status, 0);
  return s;
}

static void files_stream_through_the_buffer(void) {
  /* 300,000 float64 points in Fortran order (7.2 MB), through a pipe and from a file */
  const uint64_t np = 300000;
  double *cols = (double *)malloc(np * 3 * sizeof(double));
  uint8_t *bytes = (uint8_t *)malloc(np * 24 + 256);
  for (uint64_t i = 0; i < np; i++)
    for (int k = 0; k < 3; k++) cols[(uint64_t)k * np + i] = (double)i * (k + 1) - 0.5 * k;
  size_t len = npy(bytes, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (300000, 3), }",
                   cols, np * 24);
  float *xyz;
  uint64_t n;
  vx_error e;
  CHECK_MSG(from_pipe(bytes, len, 1u << 30, &xyz, &n, &e) == VX_OK, "%s", e.msg);
  int same = n == np;
  for (uint64_t i = 0; same && i < np; i++)
    for (int k = 0; k < 3; k++)
      same &= xyz[i * 3 + (uint64_t)k] == (float)cols[(uint64_t)k * np + i];
  CHECK(same);
  vx_free(xyz);
  /* the same bytes cut short, or with one more, through the pipe */
  CHECK(from_pipe(bytes, len - 5, 1u << 30, &xyz, &n, &e) == VX_ERR_CORRUPT &&
        strstr(e.msg, "holds 7199995") && !xyz);
  bytes[len] = 0;
  CHECK(from_pipe(bytes, len + 1, 1u << 30, &xyz, &n, &e) == VX_ERR_CORRUPT &&
        strstr(e.msg, "holds 7200001"));
  /* a shape beyond the limit is refused before anything is allocated for it */
  CHECK(from_pipe(bytes, len, 1u << 20, &xyz, &n, &e) == VX_ERR_LIMIT && strstr(e.msg, "needs"));
  /* 100,000 text lines (1.6 MB: lines straddle the buffer's refills) through the pipe */
  char *text = (char *)bytes;
  size_t tl = 0;
  for (int i = 0; i < 100000; i++) tl += (size_t)sprintf(text + tl, "%d,%d.25,-%d\n", i, i, i);
  CHECK_MSG(from_pipe(bytes, tl, 1u << 30, &xyz, &n, &e) == VX_OK, "%s", e.msg);
  CHECK(n == 100000 && xyz[3 * 99999] == 99999.0f && xyz[3 * 99999 + 1] == 99999.25f &&
        xyz[3 * 99999 + 2] == -99999.0f);
  vx_free(xyz);
  /* a line longer than 1 MiB; a file larger than its limit */
  memset(bytes, ' ', (size_t)1 << 21);
  CHECK(from_pipe(bytes, (size_t)1 << 21, 1u << 30, &xyz, &n, &e) == VX_ERR_FORMAT &&
        strstr(e.msg, "line 1: longer than 1 MiB"));
  CHECK(from_pipe(bytes, (size_t)1 << 21, 1u << 19, &xyz, &n, &e) == VX_ERR_LIMIT &&
        strstr(e.msg, "larger than"));
  free(cols);
  free(bytes);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_point_file_XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("mkdtemp failed");
  RUN(npy_versions_orders_and_types_read);
  RUN(npy_refusals_name_the_fault);
  RUN(text_lines_read_and_refusals_name_the_line);
  RUN(values_written_as_npy_and_text);
  RUN(files_read_within_their_limit);
  RUN(files_stream_through_the_buffer);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_summary();
}
