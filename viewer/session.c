/* SPDX-License-Identifier: Apache-2.0 */
/* session.c - a tab: its websocket (civetweb's handlers), what it asks for, and its writer.
 *
 * Messages from the page arrive on the connection's civetweb worker (vw_ws_data). Each is
 * checked before anything else happens: only whole text frames of at most VW_MSG_MAX bytes are
 * read (a binary, fragmented or longer frame closes the tab), then protocol.c parses it; a bad
 * message gets an error reply and counts, and VW_MAX_ERRORS of them close the tab. A good view
 * message replaces the tab's view under the lock and wakes the render thread: input is
 * coalesced, never queued.
 *
 * Each tab has a writer thread that encodes the frames the render thread draws for it and sends
 * them. A JPEG is encoded in strips by the writer and the server's encoder pool together
 * (encoder.h), straight into the writer's message buffer behind room for the header. civetweb's
 * write blocks while the peer does not read; a write that makes no progress for the request
 * timeout (--timeout) fails and the tab is dropped (vw_session_drop): no more frames are drawn
 * for it and its connection is shut down. Only that tab's writer ever waits on its socket.
 *
 * Messages to the page: text JSON ({"type":"info"|"error"|"pong", ...}) and binary frames laid
 * out as [u32 little-endian n][n bytes of JSON header][image bytes], the header's "type" saying
 * "frame" (JPEG) or "png".
 */
#define _POSIX_C_SOURCE 200809L
#include "viewer/encoder.h"
#include "viewer/protocol.h"
#include "viewer/server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vw_session *session_of(const struct mg_connection *c) {
  return (vw_session *)mg_get_user_connection_data(c);
}

static int send_text(struct mg_connection *c, const char *text) {
  size_t n = strlen(text);
  return mg_websocket_write(c, MG_WEBSOCKET_OPCODE_TEXT, text, n) == (int)n;
}

static int send_error(struct mg_connection *c, const char *msg) {
  char js[600], buf[700];
  vw_json_string(js, sizeof js, msg);
  snprintf(buf, sizeof buf, "{\"type\":\"error\",\"msg\":%s}", js);
  return send_text(c, buf);
}

/* Ends the connection with a close frame giving the reason (a page shows it). */
static int close_with(struct mg_connection *c, unsigned code, const char *reason) {
  char buf[128];
  buf[0] = (char)(code >> 8);
  buf[1] = (char)(code & 0xff);
  size_t n = strlen(reason);
  if (n > sizeof buf - 2) n = sizeof buf - 2;
  memcpy(buf + 2, reason, n);
  mg_websocket_write(c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE, buf, n + 2);
  return 0;
}

/* ---- lifetime -------------------------------------------------------------------------------- */

int vw_session_unref(vw_session *x) { return --x->refs == 0; }

void vw_session_free(vw_session *x) {
  if (!x) return;
  for (int k = 0; k < 2; k++) free(x->slot[k].rgb);
  pthread_cond_destroy(&x->wake);
  free(x);
}

static void unlink_session(vw_server *s, vw_session *x) {
  for (vw_session **p = &s->sessions; *p; p = &(*p)->next)
    if (*p == x) {
      *p = x->next;
      s->nsessions--;
      return;
    }
}

/* The descriptor of c's socket: the one whose peer is c's remote address and port and whose
 * local port is the server's; -1 when none is (any more). */
static int conn_socket(const struct mg_connection *c) {
  const struct mg_request_info *ri = mg_get_request_info(c);
  struct in_addr peer;
  if (!ri || inet_pton(AF_INET, ri->remote_addr, &peer) != 1) return -1;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int found = -1;
  struct dirent *de;
  while (found < 0 && (de = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end || end == de->d_name || fd < 0 || fd == dirfd(d)) continue;
    struct sockaddr_in a, l;
    socklen_t na = sizeof a, nl = sizeof l;
    if (getpeername((int)fd, (struct sockaddr *)&a, &na) == 0 && a.sin_family == AF_INET &&
        a.sin_addr.s_addr == peer.s_addr && ntohs(a.sin_port) == ri->remote_port &&
        getsockname((int)fd, (struct sockaddr *)&l, &nl) == 0 && l.sin_family == AF_INET &&
        ntohs(l.sin_port) == ri->server_port)
      found = (int)fd;
  }
  closedir(d);
  return found;
}

/* civetweb 1.15 has no way for a server to end a websocket whose peer sends nothing:
 * mg_close_connection only flags it while civetweb's read loop runs, and closes the socket
 * itself (under civetweb's feet) in the moment between that loop's end and the close handler.
 * Shutting the socket down instead ends the read loop from below (its read returns 0, a blocked
 * write fails at once), and civetweb closes the connection the usual way. The socket stays
 * open, so its number cannot be reused, until the close handler returns, which waits for this
 * tab's writer; every caller holds s->lock and has seen the tab not closed. */
void vw_session_drop(vw_session *x, const char *why) {
  vw_server *s = x->srv;
  if (x->closed || x->dead) return;
  x->dead = 1;
  s->tabs_dropped++;
  if (s->opt.verbose) fprintf(stderr, "voxlod view: dropping tab %u: %s\n", x->id, why);
  int fd = conn_socket(x->conn);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
  pthread_cond_signal(&x->wake);
}

/* ---- the writer ------------------------------------------------------------------------------ */

/* Puts the header in front of the body at b->p + VW_HEADER_MAX and returns where the message
 * starts; *len gets its length. */
static uint8_t *frame_message(vw_buf *b, const char *hdr, size_t body, size_t *len) {
  size_t hl = strlen(hdr);
  uint8_t *m = b->p + VW_HEADER_MAX - hl - 4;
  m[0] = (uint8_t)(hl & 0xff);
  m[1] = (uint8_t)(hl >> 8 & 0xff);
  m[2] = (uint8_t)(hl >> 16 & 0xff);
  m[3] = (uint8_t)(hl >> 24 & 0xff);
  memcpy(m + 4, hdr, hl);
  *len = 4 + hl + body;
  return m;
}

static const char *lod_text(const vw_server *s, int lod, char *buf, size_t n) {
  if (lod == VW_LOD_AUTO) snprintf(buf, n, "\"auto\"");
  else snprintf(buf, n, "%d", lod >= 0 ? lod : (int)s->info.depth);
  return buf;
}

/* What one send took, for the page's overlay, the log and the totals. */
typedef struct send_times {
  double ms_encode, ms_send, ms_server;
  size_t bytes;
  unsigned strips; /* a JPEG's strips, encoded at once */
  int sent; /* an image went out */
} send_times;

/* Encodes and sends one slot. Returns 0, or -1 when the connection failed (the tab is dead). */
static int send_slot(vw_session *x, struct mg_connection *c, vw_slot *sl, vw_jpeg *jp,
                     vw_buf *b, send_times *t) {
  vw_server *s = x->srv;
  memset(t, 0, sizeof *t);
  if (sl->kind == VW_KIND_ERROR) return send_error(c, sl->error) ? 0 : -1;
  char why[256], hdr[VW_HEADER_MAX - 8], lod[16];
  double t0 = vw_now();
  size_t body = 0;
  t->strips = 1;
  if (sl->kind == VW_KIND_JPEG) {
    body = vw_encode_jpeg(s->enc, jp, sl->rgb, sl->width, sl->height, sl->view.quality, b,
                          VW_HEADER_MAX, &t->strips, why, sizeof why);
    if (body == 0) return send_error(c, why) ? 0 : -1;
  } else {
    void *png = NULL;
    size_t n = 0;
    vx_error e;
    memset(&e, 0, sizeof e);
    if (vx_encode_png(sl->rgb, sl->width, sl->height, &png, &n, &e) != VX_OK)
      return send_error(c, e.msg) ? 0 : -1;
    if (vw_buf_reserve(b, VW_HEADER_MAX + n)) {
      vx_buffer_free(png);
      return send_error(c, "out of memory for the PNG") ? 0 : -1;
    }
    memcpy(b->p + VW_HEADER_MAX, png, n);
    vx_buffer_free(png);
    body = n;
  }
  double t1 = vw_now();
  t->ms_encode = (t1 - t0) * 1e3;
  t->ms_server = (t1 - sl->t_input) * 1e3; /* so far: input to encoded */
  snprintf(hdr, sizeof hdr,
           "{\"type\":\"%s\",\"frame\":%u,\"seq\":%u,\"w\":%u,\"h\":%u,\"full\":%d,\"lod\":%s,"
           "\"shade\":%d,\"q\":%d,\"gpu\":%d,\"ms_render\":%.3f,\"ms_copy\":%.3f,"
           "\"ms_encode\":%.3f,\"ms_server\":%.3f,\"bytes\":%zu,\"strips\":%u,"
           "\"tiles_pending\":%u,\"resident\":%llu}",
           sl->kind == VW_KIND_PNG ? "png" : "frame", sl->frame, sl->seq, sl->width, sl->height,
           sl->full, lod_text(s, sl->view.lod, lod, sizeof lod), sl->view.shade,
           sl->view.quality, sl->used_gpu, sl->ms_render, sl->ms_copy, t->ms_encode,
           t->ms_server, body, t->strips, sl->tiles_pending, (unsigned long long)sl->resident);
  size_t len;
  uint8_t *m = frame_message(b, hdr, body, &len);
  int r = mg_websocket_write(c, MG_WEBSOCKET_OPCODE_BINARY, (const char *)m, len);
  double t2 = vw_now();
  t->ms_send = (t2 - t1) * 1e3;
  t->ms_server = (t2 - sl->t_input) * 1e3;
  t->bytes = len;
  t->sent = 1;
  return r == (int)len ? 0 : -1;
}

/* One JSON line per image sent (--stats), for measurements. */
static void log_frame(vw_server *s, const vw_session *x, const vw_slot *sl, const send_times *t) {
  if (!s->stats) return;
  pthread_mutex_lock(&s->stats_lock);
  fprintf(s->stats,
          "{\"tab\":%u,\"frame\":%u,\"seq\":%u,\"kind\":\"%s\",\"w\":%u,\"h\":%u,\"full\":%d,"
          "\"gpu\":%d,\"ms_wait\":%.3f,\"ms_render\":%.3f,\"ms_copy\":%.3f,\"ms_encode\":%.3f,"
          "\"ms_send\":%.3f,\"ms_server\":%.3f,\"bytes\":%zu,\"strips\":%u,"
          "\"tiles_pending\":%u,\"resident\":%llu}\n",
          x->id, sl->frame, sl->seq, sl->kind == VW_KIND_PNG ? "png" : "jpeg", sl->width,
          sl->height, sl->full, sl->used_gpu, (sl->t_start - sl->t_input) * 1e3, sl->ms_render,
          sl->ms_copy, t->ms_encode, t->ms_send, t->ms_server, t->bytes, t->strips,
          sl->tiles_pending, (unsigned long long)sl->resident);
  fflush(s->stats);
  pthread_mutex_unlock(&s->stats_lock);
}

/* The ready slot to send next (the older frame first), or NULL. */
static vw_slot *ready_slot(vw_session *x) {
  vw_slot *a = &x->slot[0], *b = &x->slot[1];
  int ra = a->state == VW_SLOT_READY, rb = b->state == VW_SLOT_READY;
  if (ra && rb) return (int32_t)(a->frame - b->frame) <= 0 ? a : b;
  return ra ? a : rb ? b : NULL;
}

static void *writer_main(void *arg) {
  vw_session *x = (vw_session *)arg;
  vw_server *s = x->srv;
  vw_jpeg *jp = vw_jpeg_new();
  vw_buf b = {NULL, 0};
  pthread_mutex_lock(&s->lock);
  if (!jp) x->dead = 1;
  for (;;) {
    vw_slot *sl = NULL;
    while (!x->closed && (sl = ready_slot(x)) == NULL) pthread_cond_wait(&x->wake, &s->lock);
    if (x->closed) break;
    sl->state = VW_SLOT_SENDING;
    int dead = x->dead;
    pthread_mutex_unlock(&s->lock);

    send_times t;
    memset(&t, 0, sizeof t);
    int failed = dead ? 0 : send_slot(x, x->conn, sl, jp, &b, &t);
    if (t.sent && !failed) log_frame(s, x, sl, &t);

    pthread_mutex_lock(&s->lock);
    sl->state = VW_SLOT_FREE;
    if (failed) vw_session_drop(x, "a frame could not be written within --timeout");
    if (t.sent && !failed && sl->kind == VW_KIND_JPEG) {
      s->frames_sent++;
      s->bytes_sent += t.bytes;
      s->ms_render_sum += sl->ms_render;
      s->ms_copy_sum += sl->ms_copy;
      s->ms_encode_sum += t.ms_encode;
      s->ms_server_sum += t.ms_server;
      if (sl->full && sl->width * (double)sl->height > 0)
        x->ms_per_pixel = (sl->ms_render + sl->ms_copy + t.ms_encode) /
                          ((double)sl->width * (double)sl->height);
    }
    pthread_cond_signal(&s->render_wake);
  }
  pthread_mutex_unlock(&s->lock);
  free(b.p);
  vw_jpeg_free(jp);
  return NULL;
}

/* ---- civetweb's websocket handlers --------------------------------------------------------- */

int vw_ws_connect(const struct mg_connection *c, void *user) {
  vw_server *s = (vw_server *)user;
  if (!vw_http_allowed(s, c)) return 1;
  pthread_mutex_lock(&s->lock);
  int stopping = s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (stopping) return 1;
  /* The slot is taken here, in one step with the check, and given back when the connection
   * closes (conns.c), so that handshakes arriving together cannot pass the limit. */
  if (!vw_conns_reserve_tab(s->conns, c)) {
    if (s->opt.verbose)
      fprintf(stderr, "voxlod view: refusing a tab: %u are open (--max-tabs)\n", s->opt.max_tabs);
    return 1;
  }
  return 0;
}

void vw_ws_ready(struct mg_connection *c, void *user) {
  vw_server *s = (vw_server *)user;
  vw_session *x = (vw_session *)calloc(1, sizeof *x);
  if (!x || pthread_cond_init(&x->wake, NULL) != 0) {
    free(x);
    send_error(c, "the server is out of memory");
    return; /* no session: the first message closes the connection */
  }
  x->srv = s;
  x->conn = c;
  x->refs = 1;
  x->view.cam = s->home;
  x->ask_w = 800;
  x->ask_h = 600;
  vw_clamp_size(x->ask_w, x->ask_h, s->opt.max_size[0], s->opt.max_size[1], &x->view.width,
                &x->view.height);
  x->view.lod = VW_LOD_FINEST;
  x->view.lod_scale = 1.0f;
  x->view.shade = VX_SHADE_SMOOTH;
  x->view.quality = s->opt.quality;
  x->drawn_full = 1;
  pthread_mutex_lock(&s->lock);
  x->id = ++s->next_id;
  x->next = s->sessions;
  s->sessions = x;
  s->nsessions++;
  s->tabs_opened++;
  pthread_mutex_unlock(&s->lock);
  mg_set_user_connection_data(c, x);
  if (pthread_create(&x->writer, NULL, writer_main, x) == 0) {
    x->writer_started = 1;
  } else {
    pthread_mutex_lock(&s->lock);
    x->dead = 1;
    pthread_mutex_unlock(&s->lock);
  }
  send_text(c, s->info_json);
  if (s->opt.verbose) fprintf(stderr, "voxlod view: tab %u opened\n", x->id);
}

void vw_ws_close(const struct mg_connection *c, void *user) {
  vw_server *s = (vw_server *)user;
  vw_session *x = session_of(c);
  if (!x) return;
  pthread_mutex_lock(&s->lock);
  x->closed = 1;
  unlink_session(s, x);
  pthread_cond_broadcast(&x->wake);
  pthread_mutex_unlock(&s->lock);
  if (x->writer_started) pthread_join(x->writer, NULL);
  mg_set_user_connection_data(c, NULL);
  if (s->opt.verbose) fprintf(stderr, "voxlod view: tab %u closed\n", x->id);
  pthread_mutex_lock(&s->lock);
  int last = vw_session_unref(x);
  pthread_mutex_unlock(&s->lock);
  if (last) vw_session_free(x);
}

static int same_view(const vw_view *a, const vw_view *b) {
  for (int k = 0; k < 3; k++)
    if (a->cam.eye[k] != b->cam.eye[k] || a->cam.target[k] != b->cam.target[k] ||
        a->cam.up[k] != b->cam.up[k])
      return 0;
  return a->cam.fov_y_deg == b->cam.fov_y_deg && a->width == b->width &&
         a->height == b->height && a->lod == b->lod && a->lod_scale == b->lod_scale &&
         a->shade == b->shade && a->quality == b->quality;
}

/* Applies a view message to the tab (under s->lock): all of it, or nothing with the reason. */
static int apply_view(vw_server *s, vw_session *x, const vw_msg *m, char *why, size_t why_n) {
  vw_view v = x->view;
  uint32_t aw = x->ask_w, ah = x->ask_h;
  if (m->has & VW_HAS_EYE) memcpy(v.cam.eye, m->eye, sizeof m->eye);
  if (m->has & VW_HAS_TARGET) memcpy(v.cam.target, m->target, sizeof m->target);
  if (m->has & VW_HAS_UP) memcpy(v.cam.up, m->up, sizeof m->up);
  if (m->has & VW_HAS_FOV) v.cam.fov_y_deg = m->fov;
  if (m->has & VW_HAS_W) aw = m->width;
  if (m->has & VW_HAS_H) ah = m->height;
  if (m->has & VW_HAS_LOD) v.lod = m->lod;
  if (m->has & VW_HAS_LODSCALE) v.lod_scale = (float)m->lod_scale;
  if (m->has & VW_HAS_SHADE) v.shade = m->shade;
  if (m->has & VW_HAS_QUALITY) v.quality = m->quality;
  if (vw_camera_check(v.cam.eye, v.cam.target, v.cam.up, v.cam.fov_y_deg, why, why_n)) return -1;
  vw_clamp_size(aw, ah, s->opt.max_size[0], s->opt.max_size[1], &v.width, &v.height);
  double now = vw_now();
  int changed = !x->have_view || !same_view(&v, &x->view);
  x->view = v;
  x->ask_w = aw;
  x->ask_h = ah;
  x->have_view = 1;
  if (m->has & VW_HAS_SEQ) x->seq = m->seq;
  int stops = (m->has & VW_HAS_MOVING) && x->moving && !m->moving && !x->drawn_full;
  if (m->has & VW_HAS_MOVING) x->moving = m->moving;
  if (changed) x->gen++;
  if (changed || stops) {
    x->t_input = now;
    pthread_cond_signal(&s->render_wake);
  }
  return 0;
}

int vw_ws_data(struct mg_connection *c, int bits, char *data, size_t n, void *user) {
  vw_server *s = (vw_server *)user;
  vw_session *x = session_of(c);
  int op = bits & 0x0f, fin = (bits & 0x80) != 0;
  if (op == MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE) return 0;
  if (op == MG_WEBSOCKET_OPCODE_PING || op == MG_WEBSOCKET_OPCODE_PONG) return 1;
  if (!x) return 0;
  pthread_mutex_lock(&s->lock);
  int dead = x->dead || s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (dead) return 0;
  if (op != MG_WEBSOCKET_OPCODE_TEXT || !fin)
    return close_with(c, 1003, "only whole text messages are accepted");
  if (n > VW_MSG_MAX) return close_with(c, 1009, "message too long");
  vw_msg m;
  char why[256];
  /* A reply that cannot be written within --timeout means a peer that does not read: close. */
  if (vw_msg_parse(data, n, (int)s->info.depth, &m, why, sizeof why) != 0) {
    if (++x->errors >= VW_MAX_ERRORS) return close_with(c, 1008, "too many bad messages");
    return send_error(c, why);
  }
  char reply[160];
  int bad = 0;
  /* The tab slots held (conns.c): the tabs open, and those closing whose connection has not
   * ended yet; what --max-tabs counts. */
  unsigned held = m.cmd == VW_CMD_PING ? vw_conns_tabs(s->conns) : 0;
  pthread_mutex_lock(&s->lock);
  switch (m.cmd) {
  case VW_CMD_VIEW:
    bad = apply_view(s, x, &m, why, sizeof why);
    break;
  case VW_CMD_PNG:
    if (x->have_view) {
      x->png_wanted = 1;
      pthread_cond_signal(&s->render_wake);
    } else {
      bad = 1;
      snprintf(why, sizeof why, "png: no view yet (send a view message first)");
    }
    break;
  case VW_CMD_ACK: {
    /* In wrapping 32-bit order: an ack at or behind the last one is stale (acks may cross on
     * the way), one beyond the last frame made is a lie. */
    int32_t ahead = (int32_t)(m.frame - x->frames_acked);
    if (ahead > 0 && (uint32_t)ahead > (uint32_t)(x->frames_made - x->frames_acked)) {
      bad = 1;
      snprintf(why, sizeof why, "ack: frame %u was never sent (last %u)", m.frame,
               x->frames_made);
    } else if (ahead > 0) {
      x->frames_acked = m.frame;
      x->t_ack = vw_now();
      pthread_cond_signal(&s->render_wake);
    }
    break;
  }
  case VW_CMD_PING:
    snprintf(reply, sizeof reply, "{\"type\":\"pong\",\"tab\":%u,\"tabs\":%u,\"frames\":%u}",
             x->id, held, x->frames_made);
    break;
  }
  pthread_mutex_unlock(&s->lock);
  if (bad) {
    if (++x->errors >= VW_MAX_ERRORS) return close_with(c, 1008, "too many bad messages");
    return send_error(c, why);
  }
  return m.cmd == VW_CMD_PING ? send_text(c, reply) : 1;
}

/* ---- the message a tab gets first ---------------------------------------------------------- */

static size_t put(char *buf, size_t cap, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static size_t put(char *buf, size_t cap, size_t at, const char *fmt, ...) {
  if (at >= cap) return at;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + at, cap - at, fmt, ap);
  va_end(ap);
  return k < 0 ? cap : at + (size_t)k;
}

int vw_info_build(vw_server *s, char *why, size_t why_n) {
  /* JSON has no inf or NaN: a number that is not finite would make the message unreadable. */
  const vx_camera *hc = &s->home;
  double nums[] = {s->info.prune_error, s->info.scale, s->info.origin[0], s->info.origin[1],
                   s->info.origin[2], hc->eye[0], hc->eye[1], hc->eye[2], hc->target[0],
                   hc->target[1], hc->target[2], hc->up[0], hc->up[1], hc->up[2], hc->fov_y_deg,
                   s->opt.max_dpr};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if (!isfinite(nums[i])) {
      snprintf(why, why_n, "the tree's transform or default camera is not finite (%g)", nums[i]);
      return -1;
    }
  size_t cap = 16384, at = 0;
  char *b = (char *)malloc(cap);
  if (!b) {
    snprintf(why, why_n, "out of memory");
    return -1;
  }
  char file[600], dev[600];
  const char *base = strrchr(s->opt.path, '/');
  vw_json_string(file, sizeof file, base ? base + 1 : s->opt.path);
  vw_json_string(dev, sizeof dev, s->rinfo.device);
  const vx_tree_info *ti = &s->info;
  at = put(b, cap, at,
           "{\"type\":\"info\",\"version\":\"%s\",\"file\":%s,\"device\":%s,\"gpu\":%d,"
           "\"depth\":%u,\"resolution\":%u,\"levels_loaded\":%u,\"prune_error\":%.9g,"
           "\"nodes\":%llu,\"voxels\":%llu,\"memory\":%llu,\"color\":%d,\"scale\":%.17g,"
           "\"origin\":[%.17g,%.17g,%.17g],\"levels\":[",
           vx_version(), file, dev, s->rinfo.used_gpu, ti->depth, ti->resolution,
           ti->levels_loaded, (double)ti->prune_error, (unsigned long long)ti->node_count,
           (unsigned long long)ti->voxel_count, (unsigned long long)ti->memory_bytes,
           ti->has_color ? 1 : 0, ti->scale, ti->origin[0], ti->origin[1], ti->origin[2]);
  for (uint32_t l = 0; l <= ti->depth; l++) {
    vx_level_stats ls;
    memset(&ls, 0, sizeof ls);
    ls.struct_size = sizeof ls;
    if (s->tiled)
      vx_tiled_file_get_level(s->tiled, l, &ls, NULL);
    else
      vx_tree_get_level(s->tree, l, &ls);
    at = put(b, cap, at, "%s{\"level\":%u,\"cells\":%llu,\"leaves\":%llu,\"bytes\":%llu}",
             l ? "," : "", l, (unsigned long long)ls.cells, (unsigned long long)ls.leaves,
             (unsigned long long)ls.render_bytes);
  }
  const vx_camera *h = &s->home;
  at = put(b, cap, at,
           "],\"camera\":{\"eye\":[%.17g,%.17g,%.17g],\"target\":[%.17g,%.17g,%.17g],"
           "\"up\":[%.17g,%.17g,%.17g],\"fov\":%.17g},\"max_w\":%u,\"max_h\":%u,"
           "\"max_dpr\":%g,\"fps\":%u,\"quality\":%d,\"window\":%d}",
           h->eye[0], h->eye[1], h->eye[2], h->target[0], h->target[1], h->target[2], h->up[0],
           h->up[1], h->up[2], h->fov_y_deg, s->opt.max_size[0], s->opt.max_size[1],
           s->opt.max_dpr, s->opt.fps, s->opt.quality, VW_WINDOW);
  if (at >= cap) {
    free(b);
    snprintf(why, why_n, "out of memory");
    return -1;
  }
  s->info_json = b;
  return 0;
}
