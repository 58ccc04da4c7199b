/* SPDX-License-Identifier: Apache-2.0 */
/* conns.c - who holds civetweb's workers: connections that have not sent their request yet,
 * and the tab slots (server.h: vw_conns).
 *
 * civetweb gives each connection a worker thread from the moment it is accepted, and a worker
 * reads the request head before any handler (and so the token or Host check) runs. A client that
 * connects and sends its head slowly, a line a second, holds a worker all that time; a hundred of
 * them held every worker, and a new tab waited behind them for many seconds. Here:
 *
 *  - A connection "waits" from the moment a worker takes it (civetweb's init_connection) until its
 *    request head has arrived (begin_request); connections accepted but not yet taken by a
 *    worker wait too. Waiting connections are found as the process's TCP sockets on the
 *    server's port whose peer is not one of the connections past their head (/proc/self/fd:
 *    civetweb does not give out its sockets), and they are held to three limits: at most
 *    VW_WAIT_PER_ADDR from one peer address, at most VW_WAIT_MAX in all (the oldest go first),
 *    and none longer than VW_HEAD_TIMEOUT_S. A connection over a limit is shut down (its worker
 *    reads the end of the stream and closes it as usual). A connection whose whole request head
 *    is already in its receive buffer is not shut down for the count: the next free worker
 *    serves it at once.
 *  - civetweb runs max_tabs + VW_WAIT_MAX + VW_SPARE_WORKERS workers, so that the tabs and the
 *    waiting connections together never take them all: a new connection finds a worker
 *    within one pass of the limits, and its request is read as soon as it arrives.
 *  - The passes run on a thread of their own, every VW_REAP_PERIOD_S, and at once (at most every
 *    VW_REAP_MIN_GAP_S) when more than VW_WAIT_PER_ADDR connections wait in workers.
 *  - Tab slots are taken when a websocket handshake is accepted (vw_conns_reserve_tab: the check
 *    and the count in one step, under the lock) and given back when the connection closes,
 *    whichever way it ends, so that handshakes that arrive together never exceed --max-tabs.
 *
 * A pass shuts down only sockets it found waiting, under the lock: one still in civetweb's queue
 * (whose worker, to close it, must first pass init_connection, which takes the lock) or one in
 * a worker before its request (whose close callback takes the lock before civetweb closes the
 * socket). A connection being closed keeps its slot, with its peer, until civetweb has closed
 * the socket (the closed callback), so it is never taken for a waiting one. Hence a descriptor
 * found by a pass cannot have been closed and reused for another connection before it is shut
 * down.
 */
#define _POSIX_C_SOURCE 200809L
#include "viewer/server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define VW_REAP_PERIOD_S 0.1
#define VW_REAP_MIN_GAP_S 0.01

/* A slot's connection: waits for its request head; is past it; is being closed (civetweb has
 * called its close callback and will close the socket, then call the closed callback). */
enum { SLOT_FREE = 0, SLOT_WAITING, SLOT_REQUEST, SLOT_CLOSING };

typedef struct conn_slot {
  const struct mg_connection *c; /* one per civetweb worker (civetweb reuses them) */
  int state;
  int tab;                       /* holds a tab slot */
  uint32_t addr;                 /* SLOT_REQUEST, SLOT_CLOSING: the peer (network order) */
  uint16_t port;
} conn_slot;

/* A waiting socket, as a pass found it. */
typedef struct waiter {
  int fd;
  uint32_t addr;
  uint16_t port;
  int ready;                     /* its whole request head is in its receive buffer */
  double first;                  /* when a pass first saw it */
  double shut;                   /* when a pass shut it down (0: not), until civetweb closes it */
} waiter;

struct vw_conns {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  conn_slot *slot;
  unsigned nslot;
  unsigned waiting;              /* slots in SLOT_WAITING */
  unsigned tabs, max_tabs;
  int port;                      /* the listening port; 0: no passes yet */
  int verbose;
  /* the passes */
  pthread_t thread;
  int started, stop, kick;
  waiter *seen, *cur;            /* the last pass's waiting sockets; this pass's */
  size_t nseen, ncur, cap;
  unsigned long shut_slow, shut_many;
};

/* ---- the callbacks' side ---------------------------------------------------------------------- */

static conn_slot *slot_of(vw_conns *cs, const struct mg_connection *c, int make) {
  conn_slot *free_slot = NULL;
  for (unsigned i = 0; i < cs->nslot; i++) {
    if (cs->slot[i].c == c) return &cs->slot[i];
    if (!free_slot && cs->slot[i].c == NULL) free_slot = &cs->slot[i];
  }
  if (make && free_slot) {
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->c = c;
  }
  return make ? free_slot : NULL;
}

void vw_conns_opened(vw_conns *cs, const struct mg_connection *c) {
  pthread_mutex_lock(&cs->lock);
  conn_slot *sl = slot_of(cs, c, 1);
  if (sl) {
    if (sl->state != SLOT_WAITING) cs->waiting++;
    sl->state = SLOT_WAITING;
    sl->tab = 0;
  }
  if (cs->waiting > VW_WAIT_PER_ADDR) {
    cs->kick = 1;
    pthread_cond_signal(&cs->wake);
  }
  pthread_mutex_unlock(&cs->lock);
}

void vw_conns_request(vw_conns *cs, const struct mg_connection *c) {
  const struct mg_request_info *ri = mg_get_request_info(c);
  struct in_addr a;
  a.s_addr = 0;
  if (ri) inet_pton(AF_INET, ri->remote_addr, &a);
  pthread_mutex_lock(&cs->lock);
  conn_slot *sl = slot_of(cs, c, 1);
  if (sl) {
    if (sl->state == SLOT_WAITING) cs->waiting--;
    sl->state = SLOT_REQUEST;
    sl->addr = a.s_addr;
    sl->port = ri ? (uint16_t)ri->remote_port : 0;
  }
  pthread_mutex_unlock(&cs->lock);
}

void vw_conns_closing(vw_conns *cs, const struct mg_connection *c) {
  const struct mg_request_info *ri = mg_get_request_info(c);
  struct in_addr a;
  int known = ri && inet_pton(AF_INET, ri->remote_addr, &a) == 1;
  pthread_mutex_lock(&cs->lock);
  conn_slot *sl = slot_of(cs, c, 0);
  if (sl) {
    if (sl->state == SLOT_WAITING) cs->waiting--;
    if (sl->tab) cs->tabs--;
    sl->tab = 0;
    if (known) { /* its socket is not a waiting one until it is closed (vw_conns_closed) */
      sl->state = SLOT_CLOSING;
      sl->addr = a.s_addr;
      sl->port = (uint16_t)ri->remote_port;
    } else {
      memset(sl, 0, sizeof *sl);
    }
  }
  pthread_mutex_unlock(&cs->lock);
}

void vw_conns_closed(vw_conns *cs, const struct mg_connection *c) {
  pthread_mutex_lock(&cs->lock);
  conn_slot *sl = slot_of(cs, c, 0);
  if (sl) {
    if (sl->state == SLOT_WAITING) cs->waiting--;
    if (sl->tab) cs->tabs--;
    memset(sl, 0, sizeof *sl);
  }
  pthread_mutex_unlock(&cs->lock);
}

int vw_conns_reserve_tab(vw_conns *cs, const struct mg_connection *c) {
  int ok = 0;
  pthread_mutex_lock(&cs->lock);
  conn_slot *sl = slot_of(cs, c, 0);
  if (sl && !sl->tab && cs->tabs < cs->max_tabs) {
    sl->tab = 1;
    cs->tabs++;
    ok = 1;
  }
  pthread_mutex_unlock(&cs->lock);
  return ok;
}

unsigned vw_conns_tabs(vw_conns *cs) {
  pthread_mutex_lock(&cs->lock);
  unsigned n = cs->tabs;
  pthread_mutex_unlock(&cs->lock);
  return n;
}

/* ---- the passes ---------------------------------------------------------------------------- */

static int past_head(const vw_conns *cs, uint32_t addr, uint16_t port) {
  for (unsigned i = 0; i < cs->nslot; i++)
    if ((cs->slot[i].state == SLOT_REQUEST || cs->slot[i].state == SLOT_CLOSING) &&
        cs->slot[i].addr == addr &&
        cs->slot[i].port == port)
      return 1;
  return 0;
}

static int by_fd(const void *pa, const void *pb) {
  const waiter *a = (const waiter *)pa, *b = (const waiter *)pb;
  return (a->fd > b->fd) - (a->fd < b->fd);
}

/* The last pass's record of this socket (cs->seen is sorted by descriptor), or NULL. */
static const waiter *seen_before(const vw_conns *cs, const waiter *w) {
  const waiter *p = cs->nseen ? (const waiter *)bsearch(w, cs->seen, cs->nseen, sizeof *w, by_fd)
                              : NULL;
  return p && p->addr == w->addr && p->port == w->port ? p : NULL;
}

/* 1 when the socket's receive buffer holds a whole request head (a blank line). */
static int head_ready(int fd) {
  char buf[VW_REQUEST_MAX];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  if (n < 4) return 0;
  for (ssize_t i = 0; i + 3 < n; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
      return 1;
  return 0;
}

/* Collects this pass's waiting sockets into cs->cur; -1 when /proc/self/fd cannot be read. */
static int collect(vw_conns *cs, double now) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  cs->ncur = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end || end == de->d_name || fd < 0 || fd == dirfd(d)) continue;
    struct sockaddr_in l, p;
    socklen_t nl = sizeof l, np = sizeof p;
    if (getsockname((int)fd, (struct sockaddr *)&l, &nl) != 0 || l.sin_family != AF_INET ||
        ntohs(l.sin_port) != cs->port)
      continue;
    if (getpeername((int)fd, (struct sockaddr *)&p, &np) != 0 || p.sin_family != AF_INET)
      continue; /* the listening socket, or one already shut down */
    uint16_t pport = ntohs(p.sin_port);
    if (past_head(cs, p.sin_addr.s_addr, pport)) continue;
    if (cs->ncur == cs->cap) {
      size_t cap = cs->cap ? 2 * cs->cap : 256;
      waiter *a = (waiter *)realloc(cs->cur, cap * sizeof *a);
      waiter *b = (waiter *)realloc(cs->seen, cap * sizeof *b);
      if (a) cs->cur = a;
      if (b) cs->seen = b;
      if (!a || !b) { /* no room to keep track: the newcomer waits no more */
        shutdown((int)fd, SHUT_RDWR);
        cs->shut_many++;
        continue;
      }
      cs->cap = cap;
    }
    waiter *w = &cs->cur[cs->ncur++];
    w->fd = (int)fd;
    w->addr = p.sin_addr.s_addr;
    w->port = pport;
    const waiter *old = seen_before(cs, w);
    w->first = old ? old->first : now;
    /* Shut down, not closed yet: civetweb's worker is about to. Counted for nothing; kept in
     * mind for a second, after which a socket of the same descriptor and peer is a new one. */
    w->shut = old && old->shut > 0.0 && now - old->shut < 1.0 ? old->shut : 0.0;
    w->ready = w->shut > 0.0 ? 0 : head_ready((int)fd);
  }
  closedir(d);
  return 0;
}

/* Oldest first; among equals, those without their request head first. */
static int by_age(const void *pa, const void *pb) {
  const waiter *a = (const waiter *)pa, *b = (const waiter *)pb;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->ready - b->ready;
}

/* By peer address, then by age. */
static int by_addr_age(const void *pa, const void *pb) {
  const waiter *a = (const waiter *)pa, *b = (const waiter *)pb;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  return by_age(pa, pb);
}

static void shut(vw_conns *cs, waiter *w, double now, unsigned long *count) {
  shutdown(w->fd, SHUT_RDWR);
  w->shut = now;
  (*count)++;
}

/* One pass (under cs->lock): finds the waiting sockets and shuts down those over a limit. */
static void pass(vw_conns *cs) {
  double now = vw_now();
  if (collect(cs, now) != 0) return;
  size_t live = 0;
  for (size_t i = 0; i < cs->ncur; i++) {
    waiter *w = &cs->cur[i];
    if (w->shut > 0.0) continue;
    if (now - w->first > VW_HEAD_TIMEOUT_S) shut(cs, w, now, &cs->shut_slow);
    else live++;
  }
  /* Per address: all but the VW_WAIT_PER_ADDR youngest go (those ready to be served stay). */
  if (cs->ncur > 1) qsort(cs->cur, cs->ncur, sizeof *cs->cur, by_addr_age);
  for (size_t g = 0; g < cs->ncur;) {
    size_t e = g, n = 0;
    while (e < cs->ncur && cs->cur[e].addr == cs->cur[g].addr) n += cs->cur[e++].shut == 0.0;
    for (size_t i = g; i < e && n > VW_WAIT_PER_ADDR; i++) {
      waiter *w = &cs->cur[i];
      if (w->shut > 0.0 || w->ready) continue;
      shut(cs, w, now, &cs->shut_many);
      n--;
      live--;
    }
    g = e;
  }
  /* In all: the oldest over VW_WAIT_MAX go. */
  if (cs->ncur > 1) qsort(cs->cur, cs->ncur, sizeof *cs->cur, by_age);
  for (size_t i = 0; i < cs->ncur && live > VW_WAIT_MAX; i++) {
    waiter *w = &cs->cur[i];
    if (w->shut > 0.0 || w->ready) continue;
    shut(cs, w, now, &cs->shut_many);
    live--;
  }
  /* What the next pass will have seen before, by descriptor. */
  if (cs->ncur) memcpy(cs->seen, cs->cur, cs->ncur * sizeof *cs->cur);
  cs->nseen = cs->ncur;
  if (cs->nseen > 1) qsort(cs->seen, cs->nseen, sizeof *cs->seen, by_fd);
}

static void *reaper_main(void *arg) {
  vw_conns *cs = (vw_conns *)arg;
  pthread_mutex_lock(&cs->lock);
  while (!cs->stop) {
    if (!cs->kick) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      long ns = ts.tv_nsec + (long)(VW_REAP_PERIOD_S * 1e9);
      ts.tv_sec += ns / 1000000000L;
      ts.tv_nsec = ns % 1000000000L;
      pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
    }
    if (cs->stop) break;
    cs->kick = 0;
    if (cs->port) pass(cs);
    /* A pause between passes, so that a flood of connections costs a bounded share of a core. */
    pthread_mutex_unlock(&cs->lock);
    struct timespec gap = {0, (long)(VW_REAP_MIN_GAP_S * 1e9)};
    nanosleep(&gap, NULL);
    pthread_mutex_lock(&cs->lock);
  }
  pthread_mutex_unlock(&cs->lock);
  return NULL;
}

/* ---- life ------------------------------------------------------------------------------------- */

vw_conns *vw_conns_new(unsigned workers, unsigned max_tabs, int verbose) {
  vw_conns *cs = (vw_conns *)calloc(1, sizeof *cs);
  if (!cs) return NULL;
  cs->slot = (conn_slot *)calloc(workers, sizeof *cs->slot);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int ok = cs->slot && pthread_mutex_init(&cs->lock, NULL) == 0;
  if (ok && pthread_cond_init(&cs->wake, &ca) != 0) {
    pthread_mutex_destroy(&cs->lock);
    ok = 0;
  }
  pthread_condattr_destroy(&ca);
  if (!ok) {
    free(cs->slot);
    free(cs);
    return NULL;
  }
  cs->nslot = workers;
  cs->max_tabs = max_tabs;
  cs->verbose = verbose;
  return cs;
}

int vw_conns_start(vw_conns *cs, int port) {
  pthread_mutex_lock(&cs->lock);
  cs->port = port;
  pthread_mutex_unlock(&cs->lock);
  if (pthread_create(&cs->thread, NULL, reaper_main, cs) != 0) return -1;
  cs->started = 1;
  return 0;
}

void vw_conns_stop(vw_conns *cs) {
  if (!cs || !cs->started) return;
  pthread_mutex_lock(&cs->lock);
  cs->stop = 1;
  pthread_cond_signal(&cs->wake);
  pthread_mutex_unlock(&cs->lock);
  pthread_join(cs->thread, NULL);
  cs->started = 0;
}

unsigned long vw_conns_shut(const vw_conns *cs, unsigned long *slow) {
  if (!cs) return 0;
  if (slow) *slow = cs->shut_slow;
  return cs->shut_slow + cs->shut_many;
}

void vw_conns_free(vw_conns *cs) {
  if (!cs) return;
  vw_conns_stop(cs);
  pthread_mutex_destroy(&cs->lock);
  pthread_cond_destroy(&cs->wake);
  free(cs->slot);
  free(cs->seen);
  free(cs->cur);
  free(cs);
}
