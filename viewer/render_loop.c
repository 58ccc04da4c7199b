/* SPDX-License-Identifier: Apache-2.0 */
/* render_loop.c - the render thread: the one user of the renderer, serving every tab in turn.
 *
 * Each turn it picks the next tab (round robin by id) that wants a frame and may have one (see
 * server.h, COALESCING), takes a snapshot of that tab's newest view under the lock, draws it
 * without the lock into one of the tab's two pixel slots, and hands the slot to the tab's writer,
 * which encodes and sends it while this thread draws for the next tab. When no tab may go, it
 * sleeps until input arrives, a slot frees, a frame is acknowledged or the earliest frame
 * interval ends.
 *
 * Previews: while the page says the camera moves, a frame whose last measured cost (render, copy
 * and encode per pixel, times its pixels) exceeds the frame interval is drawn at a lower
 * resolution whose cost fits it (at least 1/8 of each side); the full frame follows when the
 * camera stops. On a GPU a full frame usually fits, and previews never happen.
 *
 * A tiled tree's tiles arrive in the background (vx_renderer_create_tiled, stream_tiles): a
 * frame that still drew some of them from coarse levels is followed by another of the same view
 * once the frame interval allows, until none is missing.
 */
#define _POSIX_C_SOURCE 200809L
#include "viewer/server.h"
#include "viewer/protocol.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double vw_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int free_slot(const vw_session *x) {
  return x->slot[0].state == VW_SLOT_FREE ? 0 : x->slot[1].state == VW_SLOT_FREE ? 1 : -1;
}

/* 2: a PNG is asked for; 1: a frame is due; 0: nothing to draw. */
static int wants(const vw_session *x) {
  if (x->closed || x->dead || !x->have_view) return 0;
  if (x->png_wanted) return 2;
  if (x->gen != x->drawn_gen) return 1;
  return !x->drawn_full && !x->moving;
}

/* The tab to draw for next, or NULL; *wake becomes the earliest time a tab held back by its frame
 * interval may go. Under s->lock. */
static vw_session *pick(vw_server *s, double now, double *wake) {
  vw_session *best = NULL;
  unsigned best_key = UINT_MAX;
  for (vw_session *x = s->sessions; x; x = x->next) {
    if (x->frames_made != x->frames_acked && !x->closed && !x->dead) {
      /* A page acknowledges a frame within milliseconds; one that owes frames for --timeout
       * stopped reading or went away without closing, and holds a worker and its slots. */
      double deadline = x->t_ack + s->opt.timeout_s;
      if (now >= deadline) vw_session_drop(x, "it acknowledged no frame for --timeout");
      else if (deadline < *wake) *wake = deadline;
    }
    int w = wants(x);
    if (!w || free_slot(x) < 0) continue;
    if (w == 1) {
      if ((uint32_t)(x->frames_made - x->frames_acked) >= VW_WINDOW) continue;
      if (now < x->next_time) {
        if (x->next_time < *wake) *wake = x->next_time;
        continue;
      }
    }
    unsigned key = x->id - s->rr_next; /* ids from rr_next on come first, then the wrap */
    if (!best || key < best_key) {
      best = x;
      best_key = key;
    }
  }
  if (best) s->rr_next = best->id + 1;
  return best;
}

/* Sets the slot's drawing size: full, or a preview that fits the frame interval. */
static void frame_size(const vw_server *s, const vw_session *x, vw_slot *sl, int png) {
  sl->width = sl->view.width;
  sl->height = sl->view.height;
  sl->full = 1;
  if (png || !x->moving || !(x->ms_per_pixel > 0.0)) return;
  double budget = 1000.0 / (double)s->opt.fps;
  double est = x->ms_per_pixel * (double)sl->width * (double)sl->height;
  if (est <= budget) return;
  double f = sqrt(budget / est);
  if (f < 0.125) f = 0.125;
  uint32_t w = (uint32_t)(sl->width * f), h = (uint32_t)(sl->height * f);
  sl->width = w > 0 ? w : 1;
  sl->height = h > 0 ? h : 1;
  sl->full = 0;
}

/* Draws the slot's view (no lock held: the slot is the render thread's while RENDERING). */
static void draw(vw_server *s, vw_slot *sl) {
  size_t need = (size_t)sl->width * sl->height * 3;
  if (sl->cap < need) {
    uint8_t *p = (uint8_t *)realloc(sl->rgb, need);
    if (!p) {
      sl->kind = VW_KIND_ERROR;
      snprintf(sl->error, sizeof sl->error, "out of memory for a %ux%u frame", sl->width,
               sl->height);
      return;
    }
    sl->rgb = p;
    sl->cap = need;
  }
  vx_render_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.width = sl->width;
  o.height = sl->height;
  if (sl->view.lod == VW_LOD_AUTO) {
    o.lod = VX_LOD_PIXEL;
  } else if (sl->view.lod >= 0) {
    o.lod = VX_LOD_LEVEL;
    o.level = sl->view.lod;
  } else {
    o.lod = VX_LOD_FINEST;
  }
  /* The pixel-cone rule counts pixels of the image drawn: a preview's larger pixels take a
   * coarser cut, which is what they can show, at less cost. */
  o.lod_scale = sl->view.lod_scale;
  o.shade = (vx_shade)sl->view.shade;
  o.camera = sl->view.cam;
  vx_frame_stats fs;
  memset(&fs, 0, sizeof fs);
  fs.struct_size = sizeof fs;
  vx_error e;
  memset(&e, 0, sizeof e);
  if (vx_render(s->rd, &o, sl->rgb, NULL, &fs, &e) != VX_OK) {
    sl->kind = VW_KIND_ERROR;
    snprintf(sl->error, sizeof sl->error, "cannot draw this view: %s",
             e.msg[0] ? e.msg : vx_status_str(e.status));
    return;
  }
  sl->ms_render = fs.ms_render;
  sl->ms_copy = fs.ms_copy;
  sl->used_gpu = fs.used_gpu;
  sl->tiles_pending = fs.tiles_pending;
  sl->resident = fs.resident_bytes;
}

static void *render_main(void *arg) {
  vw_server *s = (vw_server *)arg;
  pthread_mutex_lock(&s->lock);
  while (!s->stopping) {
    double now = vw_now(), wake = INFINITY;
    vw_session *x = pick(s, now, &wake);
    if (!x) {
      if (isinf(wake)) {
        pthread_cond_wait(&s->render_wake, &s->lock);
      } else {
        struct timespec ts;
        ts.tv_sec = (time_t)wake;
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
        pthread_cond_timedwait(&s->render_wake, &s->lock, &ts);
      }
      continue;
    }
    /* Snapshot the tab's request into a free slot. */
    vw_slot *sl = &x->slot[free_slot(x)];
    int png = x->png_wanted;
    sl->state = VW_SLOT_RENDERING;
    sl->kind = png ? VW_KIND_PNG : VW_KIND_JPEG;
    sl->view = x->view;
    sl->seq = x->seq;
    sl->frame = 0; /* numbered when handed over (JPEG frames only) */
    sl->t_input = x->t_input;
    sl->t_start = now;
    sl->ms_render = sl->ms_copy = 0.0;
    sl->used_gpu = 0;
    sl->tiles_pending = 0;
    sl->resident = 0;
    sl->error[0] = 0;
    frame_size(s, x, sl, png);
    if (png) {
      x->png_wanted = 0;
    } else {
      x->drawn_gen = x->gen;
      x->drawn_full = sl->full;
      x->next_time = now + 1.0 / (double)s->opt.fps;
    }
    x->refs++;
    pthread_mutex_unlock(&s->lock);

    draw(s, sl);

    pthread_mutex_lock(&s->lock);
    if (x->closed) {
      sl->state = VW_SLOT_FREE;
      if (vw_session_unref(x)) {
        pthread_mutex_unlock(&s->lock);
        vw_session_free(x);
        pthread_mutex_lock(&s->lock);
      }
      continue;
    }
    x->refs--; /* the connection still holds its own */
    /* A tiled tree's frame drawn partly from coarse levels while its tiles load: the same view
     * is drawn again after the frame interval, until every tile it wants has arrived. */
    if (sl->kind == VW_KIND_JPEG && sl->tiles_pending > 0 && x->drawn_gen == x->gen)
      x->drawn_full = 0;
    if (sl->kind == VW_KIND_JPEG) {
      if (x->frames_made == x->frames_acked) x->t_ack = vw_now(); /* it begins to owe */
      sl->frame = ++x->frames_made;
    }
    sl->state = VW_SLOT_READY;
    pthread_cond_signal(&x->wake);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

int vw_render_start(vw_server *s) {
  if (pthread_create(&s->render_thread, NULL, render_main, s) != 0) return -1;
  s->render_started = 1;
  return 0;
}

void vw_render_stop(vw_server *s) {
  if (!s->render_started) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->render_wake);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->render_thread, NULL);
  s->render_started = 0;
}
