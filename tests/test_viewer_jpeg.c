/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg_test.c - test_viewer_jpeg: the viewer's JPEG strips (jpeg_join.c, encoder.c) against
 * libjpeg-turbo's own decoder.
 *   - strips joined with restart markers decode to exactly the pixels of a single-pass encode,
 *     for many sizes (1x1, odd sizes, widths and heights off the MCU grid), qualities (4:2:0 and
 *     4:4:4), strip counts and images (a rendered-like frame and noise), with no decoder warning;
 *   - the joined file has one DRI segment and RST0..RST7 in order, and is no larger than the
 *     strips;
 *   - the encoder pool (1, 2, 3, 8 threads) gives the same pixels, with the planned strip count;
 *     several callers at once share it (run under TSan for the locking);
 *   - the join refuses what it cannot join (other tables, heights, layouts, markers) and, fed
 *     strips with random bytes changed or cut, never reads or writes out of bounds (run under
 *     ASan) and never returns a length beyond the strips.
 * --bench [W H | FRAME.ppm] times the encode on 1, 2, 4, 8, 16 threads (a rendered-like frame, or
 * a real one, at quality 80), back to back and with the pool asleep between frames. */
#define _POSIX_C_SOURCE 200809L
#include "viewer/encoder.h"
#include "viewer/jpeg.h"
#include "viewer/jpeg_join.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

static int fails, checks;

#define CHECK(cond, ...)                                                                          \
  do {                                                                                           \
    checks++;                                                                                    \
    if (!(cond)) {                                                                               \
      fails++;                                                                                   \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                \
      printf(__VA_ARGS__);                                                                       \
      printf("\n");                                                                              \
    }                                                                                            \
  } while (0)

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

/* kind 0: like a rendered frame (the viewer's background, a shaded sphere, a noisy band);
 * kind 1: noise (the most entropy-coded bytes, many stuffed 0xFF). */
static uint8_t *make_image(uint32_t w, uint32_t h, int kind) {
  uint8_t *p = (uint8_t *)malloc((size_t)w * h * 3);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      uint8_t *q = p + ((size_t)y * w + x) * 3;
      if (kind == 1) {
        uint32_t r = rnd();
        q[0] = (uint8_t)r;
        q[1] = (uint8_t)(r >> 8);
        q[2] = (uint8_t)(r >> 16);
        continue;
      }
      double u = (x + 0.5) / w - 0.5, v = (y + 0.5) / h - 0.5, d = u * u + v * v;
      q[0] = 34;
      q[1] = 38;
      q[2] = 46;
      if (d < 0.09) {
        double s = sqrt(0.09 - d) / 0.3;
        q[0] = (uint8_t)(60 + 190 * s);
        q[1] = (uint8_t)(50 + 150 * s * (0.5 + u));
        q[2] = (uint8_t)(40 + 120 * s * (0.5 - v));
      }
      if (y > h / 3 && y < h / 2 && x % 7 < 3) q[(x + y) % 3] = (uint8_t)rnd();
    }
  return p;
}

static int quiet; /* no decoder messages (changed strips are expected to fail) */

/* Decodes a JPEG to RGB, any warning an error; NULL on failure (*w, *h: its size). */
static uint8_t *decode(const uint8_t *jpg, size_t n, int *w, int *h) {
  tjhandle d = tjInitDecompress();
  int sub, cs;
  uint8_t *out = NULL;
  if (tjDecompressHeader3(d, jpg, (unsigned long)n, w, h, &sub, &cs) == 0) {
    out = (uint8_t *)malloc((size_t)*w * *h * 3);
    if (tjDecompress2(d, jpg, (unsigned long)n, out, *w, 0, *h, TJPF_RGB,
                      TJFLAG_STOPONWARNING) != 0) {
      if (!quiet) printf("     decoder: %s\n", tjGetErrorStr2(d));
      free(out);
      out = NULL;
    }
  }
  tjDestroy(d);
  return out;
}

/* A single-pass encode's decoded pixels (the reference), malloc'd. */
static uint8_t *reference(vw_jpeg *jp, const uint8_t *rgb, uint32_t w, uint32_t h, int q) {
  size_t cap = vw_jpeg_bound(w, h);
  uint8_t *buf = (uint8_t *)malloc(cap);
  char why[256];
  size_t n = vw_jpeg_encode(jp, rgb, w, h, q, buf, cap, why, sizeof why);
  CHECK(n > 0, "single-pass %ux%u q%d: %s", w, h, q, why);
  int dw = 0, dh = 0;
  uint8_t *px = n ? decode(buf, n, &dw, &dh) : NULL;
  CHECK(px && dw == (int)w && dh == (int)h, "single-pass %ux%u decodes", w, h);
  free(buf);
  return px;
}

/* Counts the markers of a joined file: DRI segments, RSTn in order (-1 when out of order). */
static void markers(const uint8_t *p, size_t n, int *dri, int *rst) {
  *dri = *rst = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] != 0xFF) continue;
    if (p[i + 1] == 0xDD) (*dri)++;
    if (p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7) {
      if (*rst >= 0 && p[i + 1] == 0xD0 + (*rst & 7)) (*rst)++;
      else *rst = -1;
    }
  }
}

/* rgb encoded by hand as about `want` strips of whole MCU rows, laid out in one buffer behind 32
 * bytes for the joined file's start and VW_JPEG_JOIN_EXTRA of room, as encoder.c lays them. */
typedef struct strips {
  uint8_t *buf;
  size_t off[VW_JPEG_JOIN_MAX], len[VW_JPEG_JOIN_MAX];
  unsigned n;
  size_t total;
} strips;

static int make_strips(vw_jpeg *jp, const uint8_t *rgb, uint32_t w, uint32_t h, int q,
                       unsigned want, strips *s) {
  uint32_t mw, mh;
  vw_jpeg_mcu(q, &mw, &mh);
  uint32_t rows = (h + mh - 1) / mh, per = (rows + want - 1) / want, sh = per * mh;
  s->n = (rows + per - 1) / per;
  size_t each = vw_jpeg_bound(w, sh);
  s->buf = (uint8_t *)malloc(32 + VW_JPEG_JOIN_EXTRA + s->n * each);
  s->total = 0;
  char why[256];
  for (unsigned k = 0; k < s->n; k++) {
    uint32_t y = k * sh, hk = h - y < sh ? h - y : sh;
    s->off[k] = 32 + VW_JPEG_JOIN_EXTRA + k * each;
    s->len[k] = vw_jpeg_encode(jp, rgb + (size_t)y * w * 3, w, hk, q, s->buf + s->off[k], each,
                               why, sizeof why);
    if (!s->len[k]) return -1;
    s->total += s->len[k];
  }
  return 0;
}

static void test_join(vw_jpeg *jp) {
  static const uint32_t sizes[][2] = {{1, 1},     {17, 33},   {64, 48},   {333, 517},
                                      {1280, 720}, {1920, 1080}, {4000, 40}, {16, 1000}};
  static const int qualities[] = {80, 95, 1, 100, 50};
  static const unsigned counts[] = {1, 2, 3, 5, 8, 13};
  int images = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int kind = 0; kind < 2; kind++)
      for (size_t qi = 0; qi < sizeof qualities / sizeof qualities[0]; qi++) {
        uint32_t w = sizes[si][0], h = sizes[si][1];
        int q = qualities[qi];
        if (w * h > 300000 && (qi > 1 || kind)) continue; /* large: two qualities, one image */
        uint8_t *rgb = make_image(w, h, kind);
        uint8_t *ref = reference(jp, rgb, w, h, q);
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
          strips s;
          int ok = make_strips(jp, rgb, w, h, q, counts[ci], &s) == 0;
          CHECK(ok, "%ux%u q%d: %u strips encode", w, h, q, counts[ci]);
          char why[256];
          size_t n = ok ? vw_jpeg_join(s.buf, 32, s.off, s.len, s.n, why, sizeof why) : 0;
          CHECK(n > 0 && n <= s.total + VW_JPEG_JOIN_EXTRA, "%ux%u q%d: %u strips join: %s", w,
                h, q, s.n, n ? "" : why);
          if (n) {
            int dri, rst;
            markers(s.buf + 32, n, &dri, &rst);
            CHECK(dri == (s.n > 1) && rst == (int)s.n - 1,
                  "%ux%u q%d: %u strips: %d DRI, %d RST in order", w, h, q, s.n, dri, rst);
            int dw = 0, dh = 0;
            uint8_t *px = decode(s.buf + 32, n, &dw, &dh);
            CHECK(px && dw == (int)w && dh == (int)h && ref &&
                      memcmp(px, ref, (size_t)w * h * 3) == 0,
                  "%ux%u q%d kind %d: %u joined strips decode to the single-pass pixels", w, h, q,
                  kind, s.n);
            free(px);
          }
          free(s.buf);
          images++;
        }
        free(ref);
        free(rgb);
      }
  printf("ok   %d joined images checked against single-pass decodes\n", images);
}

static void test_refusals(vw_jpeg *jp) {
  uint32_t w = 320, h = 240;
  uint8_t *rgb = make_image(w, h, 0);
  char why[256];
  strips s;
  /* strips of another quality: other tables */
  make_strips(jp, rgb, w, h, 80, 3, &s);
  {
    strips t;
    make_strips(jp, rgb, w, h, 70, 3, &t);
    memcpy(s.buf + s.off[1], t.buf + t.off[1], t.len[1]);
    s.len[1] = t.len[1];
    free(t.buf);
  }
  CHECK(vw_jpeg_join(s.buf, 32, s.off, s.len, s.n, why, sizeof why) == 0 &&
            strstr(why, "header differs"),
        "strips of another quality are refused (%s)", why);
  free(s.buf);
  make_strips(jp, rgb, w, h, 80, 3, &s);
  CHECK(vw_jpeg_join(s.buf, s.off[0] - 2, s.off, s.len, s.n, why, sizeof why) == 0,
        "no room for the DRI segment is refused");
  size_t off1 = s.off[1];
  s.off[1] = s.off[0] + 10;
  CHECK(vw_jpeg_join(s.buf, 32, s.off, s.len, s.n, why, sizeof why) == 0,
        "overlapping strips are refused");
  s.off[1] = off1;
  /* the middle strip cut short in height: its SOF says so */
  CHECK(vw_jpeg_join(s.buf, 32, s.off, s.len, 2, why, sizeof why) > 0, "two strips of three join");
  free(s.buf);
  make_strips(jp, rgb, w, h, 80, 3, &s);
  s.buf[s.off[1] + 0] = 0; /* no SOI */
  CHECK(vw_jpeg_join(s.buf, 32, s.off, s.len, s.n, why, sizeof why) == 0 && strstr(why, "SOI"),
        "a strip without SOI is refused (%s)", why);
  free(s.buf);
  /* strips whose height is not a multiple of the MCU: 3 strips of 40 rows at 4:2:0 */
  {
    size_t each = vw_jpeg_bound(w, 160);
    uint8_t *buf = (uint8_t *)malloc(64 + 3 * each);
    size_t off[3], len[3];
    for (unsigned k = 0; k < 3; k++) {
      off[k] = 64 + k * each;
      len[k] = vw_jpeg_encode(jp, rgb + (size_t)k * 40 * w * 3, w, 40, 80, buf + off[k], each,
                              why, sizeof why);
    }
    CHECK(vw_jpeg_join(buf, 0, off, len, 3, why, sizeof why) == 0 && strstr(why, "MCU"),
          "strips off the MCU grid are refused (%s)", why);
    /* unequal heights: 48 rows, then 160 */
    len[0] = vw_jpeg_encode(jp, rgb, w, 48, 80, buf + off[0], each, why, sizeof why);
    len[1] = vw_jpeg_encode(jp, rgb + (size_t)48 * w * 3, w, 160, 80, buf + off[1], each, why,
                            sizeof why);
    CHECK(len[0] && len[1] && vw_jpeg_join(buf, 0, off, len, 2, why, sizeof why) == 0 &&
              strstr(why, "height"),
          "a last strip taller than the first is refused (%s)", why);
    free(buf);
  }
  /* a strip that already has a DRI segment */
  make_strips(jp, rgb, w, h, 80, 2, &s);
  {
    uint8_t *p = s.buf + s.off[1];
    size_t n = s.len[1];
    memmove(p + 2 + 6, p + 2, n - 2);
    static const uint8_t dri[6] = {0xFF, 0xDD, 0, 4, 0, 40};
    memcpy(p + 2, dri, 6);
    s.len[1] += 6;
    CHECK(vw_jpeg_join(s.buf, 32, s.off, s.len, s.n, why, sizeof why) == 0 &&
              strstr(why, "restart"),
          "a strip with restart markers is refused (%s)", why);
  }
  free(s.buf);
  free(rgb);
}

/* Strips with random bytes changed, or cut short: the join must refuse or stay in bounds (ASan
 * watches), and never claim more than the strips hold. */
static void test_mutations(vw_jpeg *jp) {
  uint32_t w = 200, h = 150;
  uint8_t *rgb = make_image(w, h, 0);
  strips s;
  make_strips(jp, rgb, w, h, 80, 4, &s);
  size_t size = s.off[s.n - 1] + s.len[s.n - 1];
  uint8_t *work = (uint8_t *)malloc(size);
  int joined = 0, refused = 0;
  quiet = 1;
  for (int it = 0; it < 20000; it++) {
    memcpy(work, s.buf, size);
    size_t len[VW_JPEG_JOIN_MAX];
    memcpy(len, s.len, sizeof len);
    int edits = 1 + (int)(rnd() % 4);
    for (int e = 0; e < edits; e++) {
      unsigned k = rnd() % s.n;
      uint32_t r = rnd() % 8;
      if (r == 0) {
        len[k] = rnd() % (len[k] + 1); /* cut short */
      } else if (len[k] > 0) {
        /* most edits in the headers, where the parser looks */
        size_t at = r < 5 ? rnd() % (len[k] < 700 ? len[k] : 700) : rnd() % len[k];
        work[s.off[k] + at] = r == 7 ? 0xFF : (uint8_t)rnd();
      }
    }
    char why[256];
    size_t total = 0;
    for (unsigned k = 0; k < s.n; k++) total += len[k];
    size_t n = vw_jpeg_join(work, 32, s.off, len, s.n, why, sizeof why);
    if (n) {
      joined++;
      CHECK(n <= total + VW_JPEG_JOIN_EXTRA, "a join of changed strips stays within them");
      int dw, dh;
      free(decode(work + 32, n, &dw, &dh)); /* may fail; must not crash */
    } else {
      refused++;
    }
  }
  quiet = 0;
  printf("ok   20000 changed strips: %d joined, %d refused, none out of bounds\n", joined,
         refused);
  free(work);
  free(s.buf);
  free(rgb);
}

static void test_plan(void) {
  uint32_t sh;
  unsigned n;
  /* 1080p: 68 MCU rows; 8 threads want 32 strips of 3 MCU rows (2.1 rounded up): 23 */
  n = vw_encode_plan(1920, 1080, 80, 8, &sh);
  CHECK(n == 23 && sh == 48, "1080p on 8 threads: 23 strips of 48 rows (%u of %u)", n, sh);
  CHECK(vw_encode_plan(1920, 1080, 80, 1, &sh) == 1 && sh == 1080, "1 thread: one piece");
  n = vw_encode_plan(1280, 720, 80, 2, &sh);
  CHECK(n == 8 && sh == 96, "720p on 2 threads: 8 strips of 96 rows (%u of %u)", n, sh);
  n = vw_encode_plan(512, 384, 80, 3, &sh);
  CHECK(n == 6 && sh == 64, "512x384 on 3 threads: 6 strips of 32768 pixels (%u of %u)", n, sh);
  n = vw_encode_plan(1920, 1080, 95, 4, &sh);
  CHECK(n == 15 && sh == 72, "4:4:4 at 1080p on 4 threads: 15 strips of 72 rows (%u of %u)", n, sh);
  CHECK(vw_encode_plan(427, 240, 80, 8, &sh) == 3, "a 427x240 preview: 3 strips");
  CHECK(vw_encode_plan(213, 120, 80, 8, &sh) == 1, "a smaller preview: one piece");
  CHECK(vw_encode_plan(16, 16, 80, 8, &sh) == 1, "one MCU: one piece");
  /* 16384 wide at 4:4:4: 2048 MCUs a row, at most 31 rows a restart interval */
  n = vw_encode_plan(16384, 4096, 95, 2, &sh);
  CHECK(n > 2 && (16384 / 8) * (sh / 8) <= 65535, "a very wide frame: more strips (%u of %u)", n,
        sh);
}

typedef struct caller_arg {
  vw_encoder *e;
  const uint8_t *rgb, *ref;
  uint32_t w, h;
  int q, frames, bad;
} caller_arg;

static void *caller(void *arg) {
  caller_arg *a = (caller_arg *)arg;
  vw_jpeg *jp = vw_jpeg_new();
  vw_buf out = {NULL, 0};
  for (int i = 0; i < a->frames; i++) {
    unsigned st;
    char why[256];
    size_t n = vw_encode_jpeg(a->e, jp, a->rgb, a->w, a->h, a->q, &out, 100, &st, why, sizeof why);
    int dw, dh;
    uint8_t *px = n ? decode(out.p + 100, n, &dw, &dh) : NULL;
    if (!px || memcmp(px, a->ref, (size_t)a->w * a->h * 3) != 0) a->bad++;
    free(px);
  }
  free(out.p);
  vw_jpeg_free(jp);
  return NULL;
}

static void test_pool(vw_jpeg *jp) {
  static const uint32_t sizes[][2] = {{1920, 1080}, {1280, 720}, {640, 480}, {427, 240}, {1, 1}};
  static const unsigned threads[] = {1, 2, 3, 8};
  for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
    vw_encoder *e = vw_encoder_new(threads[ti]);
    CHECK(e && vw_encoder_threads(e) == threads[ti], "an encoder of %u threads", threads[ti]);
    if (!e) continue;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int q = 80; q <= 95; q += 15) {
        uint32_t w = sizes[si][0], h = sizes[si][1], sh;
        uint8_t *rgb = make_image(w, h, 0);
        uint8_t *ref = reference(jp, rgb, w, h, q);
        vw_buf out = {NULL, 0};
        unsigned st = 0;
        char why[256];
        size_t n = vw_encode_jpeg(e, jp, rgb, w, h, q, &out, 768, &st, why, sizeof why);
        CHECK(n > 0 && st == vw_encode_plan(w, h, q, threads[ti], &sh),
              "%ux%u q%d on %u threads: %u strips as planned", w, h, q, threads[ti], st);
        int dw = 0, dh = 0;
        uint8_t *px = n ? decode(out.p + 768, n, &dw, &dh) : NULL;
        CHECK(px && ref && memcmp(px, ref, (size_t)w * h * 3) == 0,
              "%ux%u q%d on %u threads decodes to the single-pass pixels", w, h, q, threads[ti]);
        free(px);
        free(out.p);
        free(ref);
        free(rgb);
      }
    char why[256];
    CHECK(vw_encoder_fallbacks(e, why, sizeof why) == 0, "no fallback to one piece (%s)", why);
    vw_encoder_free(e);
  }
  /* several callers (tabs) at once on one pool */
  vw_encoder *e = vw_encoder_new(3);
  caller_arg a[4];
  pthread_t t[4];
  uint8_t *imgs[4], *refs[4];
  for (int i = 0; i < 4; i++) {
    uint32_t w = 640 + 64 * i, h = 360 + 48 * i;
    imgs[i] = make_image(w, h, i & 1);
    refs[i] = reference(jp, imgs[i], w, h, 80);
    a[i] = (caller_arg){e, imgs[i], refs[i], w, h, 80, 12, 0};
    pthread_create(&t[i], NULL, caller, &a[i]);
  }
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    bad += a[i].bad;
    free(imgs[i]);
    free(refs[i]);
  }
  CHECK(bad == 0, "4 callers sharing a pool of 3: every frame right (%d wrong)", bad);
  vw_encoder_free(e);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* A binary PPM (P6, maxval 255), for timing real frames; NULL when it is not one. */
static uint8_t *read_ppm(const char *path, uint32_t *w, uint32_t *h) {
  FILE *f = fopen(path, "rb");
  unsigned W, H, maxv;
  uint8_t *p = NULL;
  if (f && fscanf(f, "P6 %u %u %u", &W, &H, &maxv) == 3 && maxv == 255 && fgetc(f) != EOF &&
      W > 0 && H > 0 && W <= 65535 && H <= 65535) {
    p = (uint8_t *)malloc((size_t)W * H * 3);
    if (p && fread(p, 3, (size_t)W * H, f) == (size_t)W * H) {
      *w = W;
      *h = H;
    } else {
      free(p);
      p = NULL;
    }
  }
  if (f) fclose(f);
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of n encodes of the frame, with `gap_ms` of sleep before each (0: back to back;
 * 16: a frame per 60 Hz interval, the pool's threads asleep in between, as in the server). */
static double time_encodes(vw_encoder *e, vw_jpeg *jp, const uint8_t *rgb, uint32_t w,
                           uint32_t h, vw_buf *out, int n, double gap_ms, unsigned *st,
                           size_t *bytes) {
  double t[64];
  char why[256];
  for (int i = 0; i < n && i < 64; i++) {
    if (gap_ms > 0) {
      struct timespec ts = {0, (long)(gap_ms * 1e6)};
      nanosleep(&ts, NULL);
    }
    double t0 = now_ms();
    *bytes = vw_encode_jpeg(e, jp, rgb, w, h, 80, out, 768, st, why, sizeof why);
    t[i] = now_ms() - t0;
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  return t[n / 2];
}

static int bench(uint32_t w, uint32_t h, const char *ppm) {
  uint8_t *rgb = ppm ? read_ppm(ppm, &w, &h) : make_image(w, h, 0);
  if (!rgb) {
    fprintf(stderr, "cannot read %s (a binary PPM)\n", ppm);
    return 1;
  }
  vw_jpeg *jp = vw_jpeg_new();
  static const unsigned threads[] = {1, 2, 4, 8, 16};
  for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
    vw_encoder *e = vw_encoder_new(threads[ti]);
    vw_buf out = {NULL, 0};
    unsigned st = 0;
    size_t n = 0;
    time_encodes(e, jp, rgb, w, h, &out, 5, 0, &st, &n); /* warm up */
    double hot = time_encodes(e, jp, rgb, w, h, &out, 60, 0, &st, &n);
    double idle = time_encodes(e, jp, rgb, w, h, &out, 30, 16, &st, &n);
    printf("%ux%u q80, %2u thread(s): %2u strip(s), %zu bytes, median %.3f ms back to back, "
           "%.3f ms after 16 ms idle\n", w, h, threads[ti], st, n, hot, idle);
    free(out.p);
    vw_encoder_free(e);
  }
  vw_jpeg_free(jp);
  free(rgb);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    if (argc == 3) return bench(0, 0, argv[2]);
    return bench(argc > 3 ? (uint32_t)atoi(argv[2]) : 1920,
                 argc > 3 ? (uint32_t)atoi(argv[3]) : 1080, NULL);
  }
  vw_jpeg *jp = vw_jpeg_new();
  test_plan();
  test_join(jp);
  test_refusals(jp);
  test_mutations(jp);
  test_pool(jp);
  vw_jpeg_free(jp);
  printf("%d of %d checks failed\n", fails, checks);
  return fails ? 1 : 0;
}
