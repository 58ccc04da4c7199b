/* SPDX-License-Identifier: Apache-2.0 */
/* server.h - `voxlod view`: one tree, one renderer, one civetweb server, any number of tabs.
 *
 * THREADS
 *   civetweb's workers: one per open connection, max_tabs + VW_WAIT_MAX + VW_SPARE_WORKERS of
 *     them. A connection that has not sent its request head yet is held to limits in number
 *     and time by conns.c's thread, so that slow clients cannot take every worker (conns.c
 *     tells how). A tab's websocket keeps its worker, which reads
 *     the tab's messages (session.c: parse, check, store the newest view) and never renders.
 *   the render thread (render_loop.c): the only user of the vx_renderer (the GPU holds one tree).
 *     It picks a tab that wants a frame (round robin), draws it into one of the tab's two pixel
 *     slots and hands the slot to the tab's writer.
 *   one writer per tab (session.c): encodes the slot (JPEG, or PNG for the save button) and
 *     sends it. A JPEG is encoded in horizontal strips at once by the writer and the encoder
 *     pool's threads (encoder.h: --encode-threads in all, shared by every tab), then joined
 *     into one JPEG. A tab that does not read blocks only its own writer, while the render thread
 *     serves the others; a write that times out, or frames left unacknowledged for --timeout,
 *     drop the tab (vw_session_drop).
 *
 * COALESCING
 *   A tab's state is its newest view and a generation counter; input replaces the view, it does
 *   not queue. A tab gets a frame when its view changed since its last frame (or a preview was
 *   sent and the camera has stopped), it has a free slot, fewer than VW_WINDOW frames are
 *   unacknowledged and its frame interval (--fps) has passed.
 *
 * LOCKING
 *   One mutex (vw_server.lock) guards the session list and every session's shared fields; no
 *   rendering, encoding or network write happens under it. A session is freed when its
 *   connection has closed and the render thread holds no reference to it (refs). The encoder
 *   pool has a mutex of its own (encoder.c), never taken while s->lock is held.
 */
#ifndef VOXLOD_VIEWER_SERVER_H
#define VOXLOD_VIEWER_SERVER_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "voxlod.h"

struct mg_context;
struct mg_connection;
struct vw_encoder;
typedef struct vw_conns vw_conns;

#define VW_WINDOW 2        /* frames a tab may have in flight before it acknowledges one */
#define VW_MAX_ERRORS 16   /* bad messages before a tab is closed */
#define VW_HEADER_MAX 768  /* room for a frame's header in front of its bytes */
#define VW_REQUEST_MAX 8192 /* longest request head civetweb reads */
/* Connections that have not sent their request head yet (conns.c). */
#define VW_WAIT_MAX 32         /* at most this many at once */
#define VW_WAIT_PER_ADDR 8     /* at most this many from one address */
#define VW_HEAD_TIMEOUT_S 2.0  /* a request head must arrive within this long of the connect */
#define VW_SPARE_WORKERS 8     /* civetweb workers beyond the tabs and the waiting connections */

/* What a tab asks to see (already checked and clamped). */
typedef struct vw_view {
  vx_camera cam;
  uint32_t width, height; /* the full frame, clamped to --max-size */
  int lod;                /* VW_LOD_FINEST, VW_LOD_AUTO or a level */
  float lod_scale;
  int shade;              /* vx_shade */
  int quality;            /* JPEG 1..100 */
} vw_view;

typedef enum vw_slot_state {
  VW_SLOT_FREE = 0,
  VW_SLOT_RENDERING, /* the render thread draws into it */
  VW_SLOT_READY,     /* drawn; waits for the writer */
  VW_SLOT_SENDING    /* the writer encodes and sends it */
} vw_slot_state;

typedef enum vw_slot_kind { VW_KIND_JPEG = 0, VW_KIND_PNG, VW_KIND_ERROR } vw_slot_kind;

/* One frame on its way: pixels and what the page's overlay and the timing log report. */
typedef struct vw_slot {
  vw_slot_state state;
  vw_slot_kind kind;
  uint8_t *rgb;
  size_t cap;             /* bytes allocated at rgb */
  vw_view view;           /* what it shows (view.width x view.height: the full size) */
  uint32_t width, height; /* the size drawn: the full size, or a preview's */
  int full;               /* 0: a low-resolution preview while the camera moves */
  int used_gpu;
  uint32_t seq;           /* the page's number of the view it shows */
  uint32_t frame;         /* this tab's frame number (acknowledged by the page) */
  double t_input;         /* when the message that asked for this view arrived */
  double t_start;         /* when the render thread took it */
  double ms_render, ms_copy;
  uint32_t tiles_pending; /* a tiled tree's tiles drawn coarser than wanted: drawn again soon */
  uint64_t resident;      /* a tiled tree's bytes resident after this frame */
  char error[640];        /* VW_KIND_ERROR: the message for the page */
} vw_slot;

typedef struct vw_session {
  struct vw_server *srv;
  struct mg_connection *conn;
  unsigned id;
  int refs;                 /* the connection's, and the render thread's while it draws */
  int closed;               /* the connection has closed: no more writes */
  int dead;                 /* a write failed or timed out: close at the next chance */
  pthread_t writer;
  int writer_started;
  pthread_cond_t wake;      /* the writer waits on it */
  /* the page's state */
  vw_view view;
  int have_view;            /* no frame before the page's first view message */
  uint32_t seq;             /* the page's number of the newest view */
  uint64_t gen;             /* bumps whenever the view changes */
  double t_input;
  uint32_t ask_w, ask_h;    /* the size asked for, before clamping */
  int moving;
  int png_wanted;
  int errors;
  /* what has been drawn */
  uint64_t drawn_gen;
  int drawn_full;
  uint32_t frames_made;     /* frames handed to the writer */
  uint32_t frames_acked;
  double t_ack;             /* when the page last acknowledged, or began to owe, a frame */
  double next_time;         /* earliest start of the next frame (--fps) */
  double ms_per_pixel;      /* a full frame's render + copy + encode per pixel, last measured */
  vw_slot slot[2];
  struct vw_session *next;
} vw_session;

typedef struct vw_options {
  const char *path;
  const char *host;          /* IPv4 address to listen on */
  uint32_t port;             /* 0: any free port */
  int force_token;           /* a token even on loopback */
  uint32_t fps;              /* most frames per second per tab */
  uint32_t max_size[2];      /* largest frame */
  double max_dpr;            /* the page's device-pixel-ratio cap */
  int quality;               /* default JPEG quality */
  uint32_t max_tabs;
  double timeout_s;          /* a write that makes no progress this long drops the tab */
  uint32_t encode_threads;   /* JPEG encoding threads in all (0: the default) */
  const char *stats_path;    /* a JSON line per frame sent */
  int verbose;
} vw_options;

typedef struct vw_server {
  vw_options opt;
  vx_tree *tree;             /* the tree, or NULL for a tiled file drawn tile by tile: */
  vx_tiled_file *tiled;      /* (vx_renderer_create_tiled, tiles streamed within --budget) */
  vx_renderer *rd;
  vx_tree_info info;
  vx_renderer_info rinfo;
  vx_camera home;            /* the default camera */
  char token[33];            /* "" when none is needed */
  char url[256];
  int port;                  /* the port listened on */
  int loopback;
  char *info_json;           /* the message a tab gets when it opens (malloc) */
  struct mg_context *ctx;
  struct vw_encoder *enc;    /* the JPEG encoder pool (encoder.h), shared by the writers */
  vw_conns *conns;           /* connections before their request, tab slots (conns.c) */

  pthread_mutex_t lock;
  pthread_cond_t render_wake;
  vw_session *sessions;
  unsigned nsessions, next_id;
  int stopping;
  pthread_t render_thread;
  int render_started;
  unsigned rr_next;          /* round robin: the id after the last tab served */

  FILE *stats;               /* --stats */
  pthread_mutex_t stats_lock;
  /* totals for the summary at exit (under lock) */
  uint64_t frames_sent, bytes_sent, tabs_opened, tabs_dropped;
  double ms_render_sum, ms_copy_sum, ms_encode_sum, ms_server_sum;
} vw_server;

/* ---- http.c: civetweb, the page, authentication --------------------------------------------- */
/* Starts listening (port 0: any free one) and fills s->port and s->url; 0, or -1 with why. */
int vw_http_start(vw_server *s, char *why, size_t why_n);
/* Stops civetweb: every connection is closed (their sessions end) before it returns. */
void vw_http_stop(vw_server *s);
/* 1 when a request may proceed: its token (when one is needed), Host and Origin check out. */
int vw_http_allowed(const vw_server *s, const struct mg_connection *c);

/* ---- conns.c: connections before their request, and the tab slots ----------------------- */
/* workers: civetweb's worker count (one slot each); NULL when out of memory. */
vw_conns *vw_conns_new(unsigned workers, unsigned max_tabs, int verbose);
/* Starts the passes that hold waiting connections to their limits; port: the listening port. */
int vw_conns_start(vw_conns *cs, int port);
void vw_conns_stop(vw_conns *cs);
void vw_conns_free(vw_conns *cs);
/* civetweb's callbacks: a worker took a connection; its request head arrived; it is about to
 * be closed (its tab slot is given back); its socket has been closed. */
void vw_conns_opened(vw_conns *cs, const struct mg_connection *c);
void vw_conns_request(vw_conns *cs, const struct mg_connection *c);
void vw_conns_closing(vw_conns *cs, const struct mg_connection *c);
void vw_conns_closed(vw_conns *cs, const struct mg_connection *c);
/* Takes a tab slot for c (kept until c closes): 1, or 0 when --max-tabs are taken. */
int vw_conns_reserve_tab(vw_conns *cs, const struct mg_connection *c);
/* The tab slots taken now. */
unsigned vw_conns_tabs(vw_conns *cs);
/* Connections shut down for their limits so far; *slow gets those shut for the time limit. */
unsigned long vw_conns_shut(const vw_conns *cs, unsigned long *slow);

/* ---- session.c: a tab's websocket and its writer -------------------------------------------- */
int vw_ws_connect(const struct mg_connection *c, void *user);
void vw_ws_ready(struct mg_connection *c, void *user);
int vw_ws_data(struct mg_connection *c, int bits, char *data, size_t n, void *user);
void vw_ws_close(const struct mg_connection *c, void *user);
/* Gives up on a tab that does not take its frames (under s->lock): no more frames are drawn for
 * it and its connection is shut down, which ends it through civetweb's close handler. */
void vw_session_drop(vw_session *x, const char *why);
/* Drops a reference (under s->lock); returns 1 when the caller must free x (after unlocking). */
int vw_session_unref(vw_session *x);
void vw_session_free(vw_session *x);
/* Builds s->info_json; 0, or -1 with the reason (a number that JSON cannot hold, out of
 * memory). */
int vw_info_build(vw_server *s, char *why, size_t why_n);

/* ---- render_loop.c: the render thread ------------------------------------------------------- */
int vw_render_start(vw_server *s);
void vw_render_stop(vw_server *s);

/* Monotonic seconds. */
double vw_now(void);

#endif
