/* SPDX-License-Identifier: Apache-2.0 */
/* view.c - `voxlod view IN.svo`: a web page that flies through a tree, its frames drawn here.
 *
 * Loads the whole tree (every level: the page switches levels at will), makes one renderer (the
 * GPU when there is one, else the CPU), starts the JPEG encoder pool, the render thread and
 * civetweb (server.h tells how they share the work), prints the URL and waits for SIGINT, SIGTERM
 * or SIGHUP. Then it stops drawing, closes every tab (civetweb waits for their handlers and
 * writers), stops the encoder pool, frees the renderer and the tree and prints what it served.
 */
#define _POSIX_C_SOURCE 200809L
#include "tools/cli.h"
#include "viewer/encoder.h"
#include "viewer/protocol.h"
#include "viewer/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *view_help =
    "usage: voxlod view IN.svo [options]\n"
    "\n"
    "Serves a web page that shows IN.svo: open the printed URL in a browser, then orbit (drag),\n"
    "pan (right or shift drag), zoom (wheel, pinch), pick the level of detail and the shading,\n"
    "save the view as PNG or copy it as `voxlod render` arguments. Frames are drawn here, on the\n"
    "GPU when there is one (else on the CPU), when the view changes, and streamed to the page as\n"
    "JPEG over a websocket. Ctrl-C stops the server.\n"
    "\n"
    "options:\n"
    "  --port N         TCP port (default 8080; 0: any free port, printed)\n"
    "  --host ADDR      IPv4 address to listen on (default 127.0.0.1: this machine only; any\n"
    "                   127.x.x.x is this machine too). Any other address (0.0.0.0: all) makes\n"
    "                   the server require a random token, printed as part of the URL;\n"
    "                   requests without it are refused\n"
    "  --token          require the token on the loopback address too (a shared machine)\n"
    "  --gpu            draw on the GPU; fail without one\n"
    "  --cpu            draw on the CPU\n"
    "  --threads N      CPU renderer threads (default: all cores)\n"
    "  --fps N          at most N frames per second per tab (default 60)\n"
    "  --max-size WxH   largest frame drawn; larger requests are scaled down (default 4096x4096)\n"
    "  --max-dpr X      the page draws at the screen's device pixel ratio up to X (default 2)\n"
    "  --quality Q      JPEG quality 1..100 (default 80; the page can change it)\n"
    "  --encode-threads N  threads that encode a frame's JPEG at once, in strips (default 0:\n"
    "                   min(8, cores); 1: in one piece), shared by every tab\n"
    "  --max-tabs N     open tabs served at once (default 8)\n"
    "  --timeout S      drop a tab whose connection takes no data for S seconds (default 5);\n"
    "                   a connection must send its request within 2 s (or S, if shorter)\n"
    "  --stats FILE     append a JSON line per frame sent: render, copy back, encode and send\n"
    "                   times, and the time from the input to the frame leaving the server\n"
    "  --mem-limit SIZE refuse trees whose decoded size exceeds SIZE (default: 80% of memory)\n"
    "  --budget SIZE    a tiled file: drawn tile by tile with at most SIZE of tiles resident\n"
    "                   (GPU memory; host memory on the CPU), detail read in the background\n"
    "                   and drawn from coarser levels until it arrives. Files finer than\n"
    "                   16384^3 are always drawn so (default: 3/4 of the free GPU memory)\n"
    "  -v, --verbose    report tabs opening and closing, dropped tabs, civetweb's messages\n";

/* 32 hex digits from /dev/urandom into tok (33 bytes); 0 or -1. */
static int make_token(char *tok) {
  unsigned char r[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t k = read(fd, r + got, sizeof r - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (got != sizeof r) return -1;
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    tok[2 * i] = hex[r[i] >> 4];
    tok[2 * i + 1] = hex[r[i] & 15];
  }
  tok[32] = 0;
  return 0;
}

static void server_free(vw_server *s) {
  while (s->sessions) { /* only when civetweb never started; otherwise its close handlers ran */
    vw_session *x = s->sessions;
    s->sessions = x->next;
    vw_session_free(x);
  }
  vw_encoder_free(s->enc);
  vw_conns_free(s->conns);
  vx_renderer_free(s->rd);
  vx_tree_free(s->tree);
  vx_tiled_file_close(s->tiled);
  free(s->info_json);
  if (s->stats) fclose(s->stats);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->stats_lock);
  pthread_cond_destroy(&s->render_wake);
}

static void print_summary(const vw_server *s) {
  char why[256];
  unsigned long slow = 0, shut = vw_conns_shut(s->conns, &slow);
  if (shut)
    fprintf(stderr, "voxlod view: %lu connection(s) closed before their request: %lu sent no "
            "request head within %.0f s, the others were over the limits on waiting "
            "connections\n", shut, slow, VW_HEAD_TIMEOUT_S);
  unsigned long fb = s->enc ? vw_encoder_fallbacks(s->enc, why, sizeof why) : 0;
  if (fb)
    fprintf(stderr, "voxlod view: %lu frame(s) encoded in one piece, their strips not joined: "
            "%s\n", fb, why);
  if (s->frames_sent == 0) {
    fprintf(stderr, "voxlod view: stopped (%llu tab(s), no frames sent)\n",
            (unsigned long long)s->tabs_opened);
    return;
  }
  double n = (double)s->frames_sent;
  char mb[32];
  vx_format_bytes((double)s->bytes_sent, mb, sizeof mb);
  fprintf(stderr,
          "voxlod view: stopped; %llu frames (%s) to %llu tab(s)%s; per frame on average: render "
          "%.2f ms, copy back %.2f ms, encode %.2f ms, input to sent %.2f ms\n",
          (unsigned long long)s->frames_sent, mb, (unsigned long long)s->tabs_opened,
          s->tabs_dropped ? " (some dropped for not reading)" : "", s->ms_render_sum / n,
          s->ms_copy_sum / n, s->ms_encode_sum / n, s->ms_server_sum / n);
}

int vx_cmd_view(int argc, char **argv) {
  vw_server srv;
  memset(&srv, 0, sizeof srv);
  vw_options *o = &srv.opt;
  o->host = "127.0.0.1";
  o->port = 8080;
  o->fps = 60;
  o->max_size[0] = o->max_size[1] = 4096;
  o->max_dpr = 2.0;
  o->quality = 80;
  o->max_tabs = 8;
  o->timeout_s = 5.0;
  int gpu = 0, cpu = 0;
  uint32_t threads = 0;
  uint64_t mem_limit = 0;
  vx_opt ops[21];
  int n = 0;
  ops[n++] = vx_cli_opt("--port", VX_OPT_U32, &o->port, 0, 65535, "a TCP port, 0: any free one");
  ops[n++] = vx_cli_opt("--host", VX_OPT_STRING, (void *)&o->host, 0, 0, "an IPv4 address");
  ops[n++] = vx_cli_opt("--token", VX_OPT_FLAG, &o->force_token, 0, 0, NULL);
  ops[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &gpu, 0, 0, NULL);
  ops[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &cpu, 0, 0, NULL);
  ops[n++] = vx_cli_opt("--threads", VX_OPT_U32, &threads, 0, 1024, "a thread count, 0: all cores");
  ops[n++] = vx_cli_opt("--fps", VX_OPT_U32, &o->fps, 1, 1000, "frames per second");
  ops[n++] = vx_cli_opt("--max-size", VX_OPT_SIZE, o->max_size, 16, 16384, "WxH");
  ops[n++] = vx_cli_opt("--max-dpr", VX_OPT_DOUBLE, &o->max_dpr, 0.25, 8, "a device pixel ratio");
  ops[n++] = vx_cli_opt("--quality", VX_OPT_INT, &o->quality, 1, 100, "a JPEG quality");
  ops[n++] = vx_cli_opt("--encode-threads", VX_OPT_U32, &o->encode_threads, 0, VW_ENCODE_THREADS_MAX,
                 "a thread count, 0: min(8, cores)");
  ops[n++] = vx_cli_opt("--max-tabs", VX_OPT_U32, &o->max_tabs, 1, 64, "a count");
  ops[n++] = vx_cli_opt("--timeout", VX_OPT_DOUBLE, &o->timeout_s, 0.5, 600, "seconds");
  ops[n++] = vx_cli_opt("--stats", VX_OPT_STRING, (void *)&o->stats_path, 0, 0, "a file");
  ops[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &mem_limit, 1048576.0, 9.2e18, "a size such as 8G");
  uint64_t budget = 0;
  int have_budget = 0;
  ops[n] = vx_cli_opt("--budget", VX_OPT_BYTES, &budget, 1048576.0, 1.8e16, "a size such as 2G");
  ops[n++].seen = &have_budget;
  ops[n] = vx_cli_opt("--verbose", VX_OPT_FLAG, &o->verbose, 0, 0, NULL);
  ops[n++].alias = "-v";
  memset(&ops[n], 0, sizeof ops[n]);
  const char *pos[1];
  int npos;
  int r = vx_cli_parse("view", argc, argv, ops, pos, 1, &npos, view_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 1) return vx_cli_usage_error("view", "needs IN.svo");
  if (gpu && cpu) return vx_cli_usage_error("view", "--gpu and --cpu exclude each other");
  o->path = pos[0];
  if (strcmp(o->host, "localhost") == 0) o->host = "127.0.0.1";
  struct in_addr addr;
  if (inet_pton(AF_INET, o->host, &addr) != 1) {
    char shown[256];
    return vx_cli_usage_error("view", "--host takes an IPv4 address such as 127.0.0.1 or "
                              "0.0.0.0 (got '%s')", vw_text_escape(shown, sizeof shown, o->host));
  }
  srv.loopback = (ntohl(addr.s_addr) >> 24) == 127;
  if ((!srv.loopback || o->force_token) && make_token(srv.token) != 0) {
    fprintf(stderr, "voxlod view: cannot read /dev/urandom for the access token\n");
    return 1;
  }

  vx_error e;
  memset(&e, 0, sizeof e);
  if (o->stats_path && !(srv.stats = fopen(o->stats_path, "a"))) {
    char shown[512];
    fprintf(stderr, "voxlod view: cannot open '%s' for the timing log: %s\n",
            vw_text_escape(shown, sizeof shown, o->stats_path), strerror(errno));
    return 1;
  }
  pthread_mutex_init(&srv.lock, NULL);
  pthread_mutex_init(&srv.stats_lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the render thread's deadlines: vw_now() */
  pthread_cond_init(&srv.render_wake, &ca);
  pthread_condattr_destroy(&ca);

  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.mem_limit = mem_limit;
  char shown_path[512];
  vw_text_escape(shown_path, sizeof shown_path, o->path);
  if (vx_cli_open_any("view", o->path, -2, mem_limit, have_budget, &srv.tree, &srv.tiled,
                      &srv.info) != 0) {
    server_free(&srv);
    return 1;
  }
  /* a tree whose world box does not fit the renderer's precision is refused by
   * vx_renderer_create (the library's one check), before anything listens */
  vx_renderer_opts rop;
  memset(&rop, 0, sizeof rop);
  rop.struct_size = sizeof rop;
  rop.device = gpu ? VX_DEVICE_GPU : cpu ? VX_DEVICE_CPU : VX_DEVICE_AUTO;
  rop.threads = (int)threads;
  rop.memory_budget_mib = (uint32_t)(budget >> 20);
  rop.stream_tiles = 1; /* a frame never waits for a tile: it is drawn coarser until it comes */
  if ((srv.tiled ? vx_renderer_create_tiled(srv.tiled, &rop, &srv.rd, &e)
                 : vx_renderer_create(srv.tree, &rop, &srv.rd, &e)) != VX_OK) {
    server_free(&srv);
    return vx_cli_fail("view", &e);
  }
  vx_cli_notes("view", vx_renderer_notes(srv.rd));
  srv.rinfo.struct_size = sizeof srv.rinfo;
  vx_renderer_get_info(srv.rd, &srv.rinfo);
  if (srv.tiled)
    vx_tiled_camera_orbit(srv.tiled, 30.0, 20.0, 40.0, &srv.home);
  else
    vx_camera_orbit(srv.tree, 30.0, 20.0, 40.0, &srv.home);
  char why_info[256];
  if (vw_info_build(&srv, why_info, sizeof why_info) != 0) {
    server_free(&srv);
    fprintf(stderr, "voxlod view: %s: %s\n", shown_path, why_info);
    return 1;
  }

  /* Signals go to this thread only: the threads started below inherit a mask that blocks them,
   * so a Ctrl-C interrupts no civetweb or render call. */
  vx_cli_install_signals();
  sigset_t sigs, old;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  sigaddset(&sigs, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigs, &old);
  char why[512];
  srv.enc = vw_encoder_new(o->encode_threads);
  int started = srv.enc && vw_render_start(&srv) == 0;
  if (!srv.enc) snprintf(why, sizeof why, "cannot start the JPEG encoder threads");
  else if (!started) snprintf(why, sizeof why, "cannot start the render thread");
  else if (vw_http_start(&srv, why, sizeof why) != 0) started = 0;
  sigdelset(&sigs, SIGPIPE); /* a peer gone mid-write is an error return, never a signal */
  pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
  if (!started) {
    vw_render_stop(&srv);
    server_free(&srv);
    char shown[600];
    fprintf(stderr, "voxlod view: %s\n", vw_text_escape(shown, sizeof shown, why));
    return 1;
  }

  char mem[32];
  vx_format_bytes((double)srv.info.memory_bytes, mem, sizeof mem);
  unsigned et = vw_encoder_threads(srv.enc);
  char shown_dev[256];
  vw_text_escape(shown_dev, sizeof shown_dev, srv.rinfo.device);
  fprintf(stderr, "voxlod view: %s: %u^3, %llu nodes, %llu voxels (%s)%s, drawn on %s, JPEG on "
          "%u thread%s\n", shown_path, srv.info.resolution, (unsigned long long)srv.info.node_count,
          (unsigned long long)srv.info.voxel_count, mem,
          srv.info.prune_error > 0 ? ", pruned" : "", shown_dev, et, et == 1 ? "" : "s");
  if (srv.tiled) {
    char b[32], res[32];
    vx_format_bytes((double)srv.rinfo.budget_bytes, b, sizeof b);
    vx_format_bytes((double)srv.rinfo.resident_bytes, res, sizeof res);
    fprintf(stderr, "voxlod view: %llu tiles drawn within a %s budget (%s resident: every tile "
            "to level %u, finer levels streamed as the camera needs them)\n",
            (unsigned long long)srv.rinfo.tiles, b, res, srv.rinfo.coarse_level);
  }
  if (!srv.loopback)
    fprintf(stderr, "voxlod view: listening on %s: anyone who can reach it and has the URL (its "
            "token) sees this model\n", o->host);
  printf("%s\n", srv.url);
  fflush(stdout);
  fprintf(stderr, "voxlod view: open the URL above in a browser; Ctrl-C stops the server\n");

  while (!vx_cli_interrupted) {
    struct timespec ts = {0, 100000000L};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "voxlod view: stopping\n");
  vw_render_stop(&srv);
  vw_http_stop(&srv);
  print_summary(&srv);
  server_free(&srv);
  return 0;
}
