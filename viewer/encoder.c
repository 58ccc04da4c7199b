/* SPDX-License-Identifier: Apache-2.0 */
/* encoder.c - a frame to JPEG in strips on several threads (encoder.h); the pool and the plan.
 *
 * A frame's strips form a job on the caller's stack. The pool keeps a queue of jobs that still
 * have strips nobody took, oldest first; a pool thread takes the next strip of the oldest job, a
 * caller only strips of its own job. Strip k of a job is written into its own region of the
 * caller's output buffer (k * the strip's bound, behind room for the joined header), so no two
 * threads touch the same bytes; the join then moves the strips' bytes to the front of the buffer
 * in place. The job's counters (taken, finished) and the queue are guarded by the pool's mutex,
 * which is never held while encoding; a strip's length and its failure are recorded under it,
 * and the caller reads them after it has seen every strip finished under it.
 */
#define _POSIX_C_SOURCE 200809L
#include "viewer/encoder.h"
#include "viewer/jpeg_join.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vw_buf_reserve(vw_buf *b, size_t n) {
  if (b->cap >= n) return 0;
  uint8_t *p = (uint8_t *)realloc(b->p, n);
  if (!p) return -1;
  b->p = p;
  b->cap = n;
  return 0;
}

/* ---- the plan -------------------------------------------------------------------------------- */

unsigned vw_encode_plan(uint32_t width, uint32_t height, int quality, unsigned threads,
                        uint32_t *strip_h) {
  *strip_h = height;
  if (threads <= 1 || width == 0 || height == 0) return 1;
  uint32_t mw, mh;
  vw_jpeg_mcu(quality, &mw, &mh);
  uint64_t cols = (width + (uint64_t)mw - 1) / mw, rows = (height + (uint64_t)mh - 1) / mh;
  uint64_t want = (uint64_t)threads * VW_STRIPS_PER_THREAD;
  uint64_t by_pixels = (uint64_t)width * height / VW_STRIP_MIN_PIXELS;
  if (want > by_pixels) want = by_pixels;
  if (want > rows) want = rows;
  if (want < 2) return 1;
  uint64_t per = (rows + want - 1) / want; /* MCU rows per strip */
  uint64_t most = 65535 / cols;            /* a restart interval counts at most 65535 MCUs */
  if (most == 0) return 1;
  if (per > most) per = most; /* very wide frames: more strips than threads */
  uint64_t n = (rows + per - 1) / per;
  if (n < 2 || n > VW_JPEG_JOIN_MAX) return 1;
  *strip_h = (uint32_t)(per * mh);
  return (unsigned)n;
}

unsigned vw_encoder_default_threads(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  if (c < 1) c = 1;
  return c < VW_ENCODE_THREADS_DEFAULT_MAX ? (unsigned)c : VW_ENCODE_THREADS_DEFAULT_MAX;
}

/* ---- the pool -------------------------------------------------------------------------------- */

typedef struct job {
  struct job *next;
  const uint8_t *rgb;
  uint32_t width, height, strip_h;
  int quality;
  uint8_t *buf;    /* the caller's output buffer */
  size_t cap_each; /* bytes for each strip at buf + off[k] */
  unsigned n, taken, finished;
  int failed;
  char why[200];   /* the first strip's failure */
  size_t off[VW_JPEG_JOIN_MAX], len[VW_JPEG_JOIN_MAX];
} job;

typedef struct worker {
  struct vw_encoder *e;
  vw_jpeg *jp;
  pthread_t tid;
} worker;

struct vw_encoder {
  unsigned threads;          /* in all, counting the callers */
  pthread_mutex_t lock;
  pthread_cond_t work;       /* pool threads wait for strips */
  pthread_cond_t done;       /* callers wait for their strips */
  job *queue;                /* jobs with strips left to take, oldest first */
  int stopping;
  unsigned nworkers;         /* started */
  worker w[VW_ENCODE_THREADS_MAX];
  unsigned long fallbacks;
  char fallback_why[256];
};

/* Takes the next strip of j (under the lock); a job all of whose strips are taken leaves the
 * queue. */
static unsigned take(vw_encoder *e, job *j) {
  unsigned k = j->taken++;
  if (j->taken == j->n)
    for (job **p = &e->queue; *p; p = &(*p)->next)
      if (*p == j) {
        *p = j->next;
        break;
      }
  return k;
}

/* Encodes strip k of j (no lock held); its length, 0 on failure with why. */
static size_t encode_strip(const job *j, unsigned k, vw_jpeg *jp, char *why, size_t why_n) {
  uint32_t y = k * j->strip_h;
  uint32_t h = j->height - y < j->strip_h ? j->height - y : j->strip_h;
  return vw_jpeg_encode(jp, j->rgb + (size_t)y * j->width * 3, j->width, h, j->quality,
                        j->buf + j->off[k], j->cap_each, why, why_n);
}

/* Records strip k's result (under the lock); the last strip wakes the callers. */
static void finish(vw_encoder *e, job *j, unsigned k, size_t len, const char *why) {
  j->len[k] = len;
  if (len == 0 && !j->failed) {
    j->failed = 1;
    snprintf(j->why, sizeof j->why, "%s", why);
  }
  if (++j->finished == j->n) pthread_cond_broadcast(&e->done);
}

static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  vw_encoder *e = w->e;
  char why[200];
  pthread_mutex_lock(&e->lock);
  for (;;) {
    while (!e->stopping && !e->queue) pthread_cond_wait(&e->work, &e->lock);
    if (!e->queue) break; /* stopping, and nothing left */
    job *j = e->queue;
    unsigned k = take(e, j);
    pthread_mutex_unlock(&e->lock);
    size_t len = encode_strip(j, k, w->jp, why, sizeof why);
    pthread_mutex_lock(&e->lock);
    finish(e, j, k, len, why);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

vw_encoder *vw_encoder_new(unsigned threads) {
  if (threads == 0) threads = vw_encoder_default_threads();
  if (threads > VW_ENCODE_THREADS_MAX) threads = VW_ENCODE_THREADS_MAX;
  vw_encoder *e = (vw_encoder *)calloc(1, sizeof *e);
  if (!e) return NULL;
  e->threads = threads;
  if (pthread_mutex_init(&e->lock, NULL) != 0) {
    free(e);
    return NULL;
  }
  pthread_cond_init(&e->work, NULL);
  pthread_cond_init(&e->done, NULL);
  for (unsigned i = 0; i + 1 < threads; i++) {
    worker *w = &e->w[i];
    w->e = e;
    w->jp = vw_jpeg_new();
    if (!w->jp || pthread_create(&w->tid, NULL, worker_main, w) != 0) {
      vw_jpeg_free(w->jp);
      w->jp = NULL;
      vw_encoder_free(e);
      return NULL;
    }
    e->nworkers++;
  }
  return e;
}

void vw_encoder_free(vw_encoder *e) {
  if (!e) return;
  pthread_mutex_lock(&e->lock);
  e->stopping = 1;
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->lock);
  for (unsigned i = 0; i < e->nworkers; i++) {
    pthread_join(e->w[i].tid, NULL);
    vw_jpeg_free(e->w[i].jp);
  }
  pthread_cond_destroy(&e->work);
  pthread_cond_destroy(&e->done);
  pthread_mutex_destroy(&e->lock);
  free(e);
}

unsigned vw_encoder_threads(const vw_encoder *e) { return e ? e->threads : 1; }

unsigned long vw_encoder_fallbacks(vw_encoder *e, char *why, size_t why_n) {
  pthread_mutex_lock(&e->lock);
  unsigned long n = e->fallbacks;
  if (why_n) snprintf(why, why_n, "%s", e->fallback_why);
  pthread_mutex_unlock(&e->lock);
  return n;
}

/* Encodes the frame in strips on the pool and joins them at out->p + at; the joined length, or
 * 0 (with why) when the frame must be encoded in one piece instead. */
static size_t encode_strips(vw_encoder *e, vw_jpeg *own, const uint8_t *rgb, uint32_t width,
                            uint32_t height, int quality, uint32_t strip_h, unsigned n,
                            vw_buf *out, size_t at, char *why, size_t why_n) {
  size_t each = vw_jpeg_bound(width, strip_h);
  if (each == 0 || n > (((size_t)-1 - at - VW_JPEG_JOIN_EXTRA) / each) ||
      vw_buf_reserve(out, at + VW_JPEG_JOIN_EXTRA + n * each)) {
    snprintf(why, why_n, "no memory for %u strips", n);
    return 0;
  }
  job j;
  j.next = NULL;
  j.rgb = rgb;
  j.width = width;
  j.height = height;
  j.strip_h = strip_h;
  j.quality = quality;
  j.buf = out->p;
  j.cap_each = each;
  j.n = n;
  j.taken = j.finished = 0;
  j.failed = 0;
  j.why[0] = 0;
  for (unsigned k = 0; k < n; k++) j.off[k] = at + VW_JPEG_JOIN_EXTRA + k * each;

  char swhy[200];
  pthread_mutex_lock(&e->lock);
  job **tail = &e->queue;
  while (*tail) tail = &(*tail)->next;
  *tail = &j;
  pthread_cond_broadcast(&e->work);
  while (j.taken < j.n) { /* the caller works on its own frame too */
    unsigned k = take(e, &j);
    pthread_mutex_unlock(&e->lock);
    size_t len = encode_strip(&j, k, own, swhy, sizeof swhy);
    pthread_mutex_lock(&e->lock);
    finish(e, &j, k, len, swhy);
  }
  while (j.finished < j.n) pthread_cond_wait(&e->done, &e->lock);
  pthread_mutex_unlock(&e->lock);

  if (j.failed) {
    snprintf(why, why_n, "%s", j.why);
    return 0;
  }
  return vw_jpeg_join(out->p, at, j.off, j.len, n, why, why_n);
}

size_t vw_encode_jpeg(vw_encoder *e, vw_jpeg *own, const uint8_t *rgb, uint32_t width,
                      uint32_t height, int quality, vw_buf *out, size_t at, unsigned *strips,
                      char *why, size_t why_n) {
  *strips = 1;
  uint32_t strip_h;
  unsigned n = vw_encode_plan(width, height, quality, vw_encoder_threads(e), &strip_h);
  if (n > 1 && rgb && own) {
    char jwhy[256];
    size_t len = encode_strips(e, own, rgb, width, height, quality, strip_h, n, out, at, jwhy,
                               sizeof jwhy);
    if (len) {
      *strips = n;
      return len;
    }
    pthread_mutex_lock(&e->lock);
    e->fallbacks++;
    snprintf(e->fallback_why, sizeof e->fallback_why, "%s", jwhy);
    pthread_mutex_unlock(&e->lock);
  }
  size_t bound = vw_jpeg_bound(width, height);
  if (bound == 0 || at > (size_t)-1 - bound || vw_buf_reserve(out, at + bound)) {
    snprintf(why, why_n, "out of memory for a %ux%u frame's encoding", width, height);
    return 0;
  }
  return vw_jpeg_encode(own, rgb, width, height, quality, out->p + at, bound, why, why_n);
}
