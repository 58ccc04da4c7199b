/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c - the option parser, progress display, signal handling and messages shared by the voxlod
 * commands (cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t vx_cli_interrupted = 0;
int vx_cli_quiet = 0;

double vx_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void vx_format_bytes(double b, char *buf, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  while (b >= 1024.0 && i < 6) {
    b /= 1024.0;
    i++;
  }
  snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

/* ---- messages ------------------------------------------------------------------------------- */

int vx_cli_fail(const char *what, const vx_error *e) {
  vx_cli_progress_done();
  fprintf(stderr, "voxlod: %s: %s\n", what, e->msg[0] ? e->msg : vx_status_str(e->status));
  return e->status == VX_ERR_INTERRUPTED ? 130 : 1;
}

int vx_cli_usage_error(const char *cmd, const char *fmt, ...) {
  vx_cli_progress_done();
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "voxlod %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see 'voxlod %s --help')\n", cmd);
  va_end(ap);
  return 2;
}

void vx_cli_notes(const char *cmd, const char *notes) {
  if (!notes || !*notes) return;
  vx_cli_progress_done();
  const char *p = notes;
  while (*p) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    fprintf(stderr, "voxlod %s: %.*s\n", cmd, len, p);
    p += len + (nl ? 1 : 0);
  }
}

/* ---- progress ------------------------------------------------------------------------------- */

static struct {
  char phase[64];
  double start, last_print;
  int last_pct, active;
} prog;

int vx_cli_progress(void *user, const char *phase, double fraction) {
  (void)user;
  if (vx_cli_interrupted) return 1;
  if (vx_cli_quiet) return 0;
  double now = vx_cli_now();
  if (strncmp(prog.phase, phase, sizeof prog.phase - 1) != 0) {
    if (prog.active) fputc('\n', stderr);
    snprintf(prog.phase, sizeof prog.phase, "%s", phase);
    prog.start = now;
    prog.last_print = 0;
    prog.last_pct = -1;
  }
  int tty = isatty(2);
  int pct = (int)(fraction * 100.0);
  /* On a terminal redraw often; in a log print every 10% so the log stays short. */
  if (tty ? (now - prog.last_print < 0.2 && pct != 100) : (pct / 10 == prog.last_pct / 10)) return 0;
  prog.last_print = now;
  prog.last_pct = pct;
  double el = now - prog.start;
  char eta[32] = "";
  if (fraction > 0.02 && fraction < 1.0) snprintf(eta, sizeof eta, ", ETA %.0fs", el / fraction - el);
  fprintf(stderr, "%s%-12s %3d%% (%.1fs%s)%s", tty ? "\r" : "", phase, pct, el, eta,
          tty ? "   " : "\n");
  prog.active = tty;
  return 0;
}

void vx_cli_progress_done(void) {
  if (prog.active) fputc('\n', stderr);
  prog.active = 0;
  prog.phase[0] = 0;
}

/* ---- signals -------------------------------------------------------------------------------- */

static void on_signal(int sig) {
  if (vx_cli_interrupted) { /* the second one: no more waiting for a clean stop */
    vx_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
  }
  vx_cli_interrupted = 1;
}

void vx_cli_install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGXFSZ, SIG_IGN);
}

/* ---- values --------------------------------------------------------------------------------- */

/* A decimal whole number with no sign, no space: 0 on success. */
static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !(*s >= '0' && *s <= '9')) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno) return -1;
  *out = v;
  return 0;
}

/* A finite number (no leading space): 0 on success. */
static int parse_double(const char *s, double *out) {
  if (!s || !*s || *s == ' ' || *s == '\t') return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

static int parse_bytes(const char *s, double *out) {
  if (!s || !((*s >= '0' && *s <= '9') || *s == '.')) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(v) || v < 0) return -1;
  double mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1024.0; end++; break;
  case 'm': case 'M': mul = 1048576.0; end++; break;
  case 'g': case 'G': mul = 1073741824.0; end++; break;
  case 't': case 'T': mul = 1099511627776.0; end++; break;
  default: break;
  }
  if (mul > 1 && *end == 'i') end++;
  if (*end == 'B' || (*end == 'b' && mul > 1)) end++;
  if (*end) return -1;
  *out = v * mul;
  return isfinite(*out) ? 0 : -1;
}

/* The range of an option, for messages. */
static void range_text(const vx_opt *o, char *buf, size_t n) {
  buf[0] = 0;
  if (o->kind == VX_OPT_BYTES) {
    char a[32], b[32];
    vx_format_bytes(o->lo, a, sizeof a);
    vx_format_bytes(o->hi, b, sizeof b);
    snprintf(buf, n, "from %s to %s", a, b);
  } else if (o->kind == VX_OPT_U32 || o->kind == VX_OPT_INT || o->kind == VX_OPT_SIZE ||
             o->kind == VX_OPT_LOD) {
    snprintf(buf, n, "from %.0f to %.0f", o->lo, o->hi);
  } else if (o->kind == VX_OPT_DOUBLE || o->kind == VX_OPT_FLOAT) {
    snprintf(buf, n, "from %g to %g", o->lo, o->hi);
  }
}

/* Parses one option value into o->dst; 0 on success. */
static int parse_value(const vx_opt *o, const char *v) {
  uint64_t u;
  double d;
  switch (o->kind) {
  case VX_OPT_FLAG:
    *(int *)o->dst = 1;
    return 0;
  case VX_OPT_U32:
    if (parse_u64(v, &u) || (double)u < o->lo || (double)u > o->hi) return -1;
    *(uint32_t *)o->dst = (uint32_t)u;
    return 0;
  case VX_OPT_INT:
    if (v[0] == '-' ? (parse_u64(v + 1, &u) || (double)u > -o->lo) : parse_u64(v, &u)) return -1;
    d = v[0] == '-' ? -(double)u : (double)u;
    if (d < o->lo || d > o->hi) return -1;
    *(int *)o->dst = (int)d;
    return 0;
  case VX_OPT_DOUBLE:
  case VX_OPT_FLOAT:
    if (parse_double(v, &d) || d < o->lo || d > o->hi) return -1;
    if (o->kind == VX_OPT_DOUBLE) *(double *)o->dst = d;
    else *(float *)o->dst = (float)d;
    return 0;
  case VX_OPT_BYTES:
    if (parse_bytes(v, &d) || d < o->lo || d > o->hi) return -1;
    *(uint64_t *)o->dst = (uint64_t)d;
    return 0;
  case VX_OPT_STRING:
    *(const char **)o->dst = v;
    return 0;
  case VX_OPT_CHOICE: {
    int idx = 0;
    for (const char *c = o->choices; *c; idx++) {
      const char *bar = strchr(c, '|');
      size_t len = bar ? (size_t)(bar - c) : strlen(c);
      if (strlen(v) == len && strncmp(v, c, len) == 0) {
        *(int *)o->dst = idx;
        return 0;
      }
      c += len + (bar ? 1 : 0);
    }
    return -1;
  }
  case VX_OPT_SIZE: {
    const char *x = strchr(v, 'x');
    if (!x || x == v) return -1;
    char w[32];
    size_t len = (size_t)(x - v);
    if (len >= sizeof w) return -1;
    memcpy(w, v, len);
    w[len] = 0;
    uint64_t a, b;
    if (parse_u64(w, &a) || parse_u64(x + 1, &b) || (double)a < o->lo || (double)a > o->hi ||
        (double)b < o->lo || (double)b > o->hi)
      return -1;
    ((uint32_t *)o->dst)[0] = (uint32_t)a;
    ((uint32_t *)o->dst)[1] = (uint32_t)b;
    return 0;
  }
  case VX_OPT_VEC3: {
    double r[3];
    const char *p = v;
    for (int k = 0; k < 3; k++) {
      const char *c = k < 2 ? strchr(p, ',') : p + strlen(p);
      if (!c) return -1;
      char num[64];
      size_t len = (size_t)(c - p);
      if (len == 0 || len >= sizeof num) return -1;
      memcpy(num, p, len);
      num[len] = 0;
      if (parse_double(num, &r[k])) return -1;
      p = c + 1;
    }
    memcpy(o->dst, r, sizeof r);
    return 0;
  }
  case VX_OPT_LOD:
    if (strcmp(v, "auto") == 0) {
      *(int *)o->dst = -1;
      return 0;
    }
    if (parse_u64(v, &u) || (double)u < o->lo || (double)u > o->hi) return -1;
    *(int *)o->dst = (int)u;
    return 0;
  }
  return -1;
}

int vx_cli_parse(const char *cmd, int argc, char **argv, const vx_opt *opts, const char **pos,
                 int max_pos, int *npos, const char *help, const char *extra) {
  *npos = 0;
  int only_pos = 0;
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(help, stdout);
      if (extra) fputs(extra, stdout);
      return -1;
    }
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!only_pos && strcmp(a, "--") == 0) {
      only_pos = 1;
      continue;
    }
    if (only_pos || a[0] != '-' || a[1] == 0) { /* "-" is standard output, a positional */
      if (*npos >= max_pos) return vx_cli_usage_error(cmd, "unexpected argument '%s'", a);
      pos[(*npos)++] = a;
      continue;
    }
    const vx_opt *o = opts;
    while (o->name && strcmp(o->name, a) != 0 && !(o->alias && strcmp(o->alias, a) == 0)) o++;
    if (!o->name) return vx_cli_usage_error(cmd, "unknown option '%s'", a);
    if (o->seen) *o->seen = 1;
    if (o->kind == VX_OPT_FLAG) {
      parse_value(o, NULL);
      continue;
    }
    if (i + 1 >= argc) return vx_cli_usage_error(cmd, "%s needs a value", a);
    const char *v = argv[++i];
    if (parse_value(o, v) != 0) {
      char range[96];
      range_text(o, range, sizeof range);
      return vx_cli_usage_error(cmd, "bad value '%s' for %s (%s%s%s)", v, o->name,
                                o->hint ? o->hint : "", o->hint && range[0] ? ", " : "", range);
    }
  }
  return 0;
}

/* ---- view options --------------------------------------------------------------------------- */

const char *vx_view_args_help =
    "  --size WxH          image size (default 800x600, at most 32768x32768)\n"
    "  --lod L|auto        cut the tree at level L (0 = root .. depth = finest voxels), or choose\n"
    "                      per pixel by the pixel-cone rule (default: finest)\n"
    "  --lod-scale S       auto LOD: stop at nodes smaller than S pixels (default 1)\n"
    "  --camera AZ,EL[,FOV] orbit camera framing the model: azimuth, elevation, vertical FOV in\n"
    "                      degrees (default 30,20,40)\n"
    "  --eye X,Y,Z         camera position in world (mesh) coordinates\n"
    "  --target X,Y,Z      point looked at, world coordinates (default: the model's centre)\n"
    "  --shade MODE        smooth (trilinear zero crossing, default), blocks (voxel cubes),\n"
    "                      normals (normal as colour), albedo (smooth, unlit: the tree's\n"
    "                      colours as stored, grey without); smooth and blocks are lit, in\n"
    "                      the tree's colours when it has them\n"
    "  --gpu | --cpu       force the CUDA or the CPU renderer (default: GPU if usable, else CPU)\n"
    "  --threads N         CPU threads (default: all cores)\n"
    "  --mem-limit SIZE    refuse a file whose decoded size exceeds SIZE (default: 80% of memory)\n";

void vx_view_args_init(vx_view_args *a) {
  memset(a, 0, sizeof *a);
  a->size[0] = 800;
  a->size[1] = 600;
  a->lod = -2;
  a->lod_scale = 1.0f;
  a->camera[0] = 30;
  a->camera[1] = 20;
  a->camera[2] = 40;
}

vx_opt vx_cli_opt(const char *name, vx_opt_kind kind, void *dst, double lo, double hi,
                  const char *hint) {
  vx_opt o;
  memset(&o, 0, sizeof o);
  o.name = name;
  o.kind = kind;
  o.dst = dst;
  o.lo = lo;
  o.hi = hi;
  o.hint = hint;
  return o;
}

int vx_view_opts(vx_view_args *a, vx_opt *opts, int n) {
  const int first = n;
  opts[n++] = vx_cli_opt("--size", VX_OPT_SIZE, a->size, 1, 32768, "WxH");
  opts[n++] = vx_cli_opt("--lod", VX_OPT_LOD, &a->lod, 0, 20, "a level or auto");
  opts[n++] = vx_cli_opt("--lod-scale", VX_OPT_FLOAT, &a->lod_scale, 0.01, 1000, "pixels");
  opts[n] = vx_cli_opt("--camera", VX_OPT_STRING, (void *)&a->camera_text, 0, 0, "AZ,EL[,FOV]");
  opts[n++].seen = &a->have_camera;
  opts[n] = vx_cli_opt("--eye", VX_OPT_VEC3, a->eye, 0, 0, "X,Y,Z");
  opts[n++].seen = &a->have_eye;
  opts[n] = vx_cli_opt("--target", VX_OPT_VEC3, a->target, 0, 0, "X,Y,Z");
  opts[n++].seen = &a->have_target;
  opts[n] = vx_cli_opt("--shade", VX_OPT_CHOICE, &a->shade, 0, 0,
                       "smooth, blocks, normals or albedo");
  opts[n++].choices = "smooth|blocks|normals|albedo";
  opts[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &a->gpu, 0, 0, NULL);
  opts[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &a->cpu, 0, 0, NULL);
  opts[n++] = vx_cli_opt("--threads", VX_OPT_U32, &a->threads, 0, 1024, "a thread count, 0: all cores");
  opts[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &a->mem_limit, 1, 9.2e18, "a size such as 8G");
  memset(&opts[n], 0, sizeof opts[n]);
  /* every option's `seen` flag; --camera, --eye and --target also keep their own */
  static const char *const own[] = {"--camera", "--eye", "--target"};
  for (int k = first; k < n; k++) {
    int keeps = 0;
    for (int j = 0; j < 3; j++) keeps |= strcmp(opts[k].name, own[j]) == 0;
    if (!keeps) opts[k].seen = &a->seen[k - first];
  }
  return n;
}

/* the index of each view option in vx_view_opts' order */
enum { VO_SIZE, VO_LOD, VO_LOD_SCALE, VO_CAMERA, VO_EYE, VO_TARGET, VO_SHADE, VO_GPU, VO_CPU,
       VO_THREADS, VO_MEM_LIMIT };

const char *vx_view_args_given(const vx_view_args *a) {
  static const char *const names[] = {"--size", "--lod", "--lod-scale", "--camera", "--eye",
                                      "--target", "--shade", "--gpu", "--cpu", "--threads",
                                      "--mem-limit"};
  for (int k = 0; k < VX_VIEW_OPTS; k++) {
    int given = k == VO_CAMERA ? a->have_camera : k == VO_EYE ? a->have_eye
                : k == VO_TARGET ? a->have_target : a->seen[k];
    if (given && k != VO_MEM_LIMIT) return names[k];
  }
  return NULL;
}

int vx_view_args_check(vx_view_args *a, const char *cmd) {
  if (a->gpu && a->cpu) return vx_cli_usage_error(cmd, "--gpu and --cpu exclude each other");
  if (a->seen[VO_LOD_SCALE] && a->lod != -1)
    return vx_cli_usage_error(cmd, "--lod-scale applies to --lod auto only");
  if (a->seen[VO_THREADS] && a->gpu)
    return vx_cli_usage_error(cmd, "--threads applies to the CPU renderer, not with --gpu");
  if (a->have_camera) {
    const char *v = a->camera_text;
    double r[3] = {0, 0, 40};
    int k = 0;
    const char *p = v;
    while (k < 3) {
      char *end;
      errno = 0;
      r[k] = strtod(p, &end);
      if (end == p || errno == ERANGE || !isfinite(r[k])) break;
      k++;
      if (*end == 0) {
        p = end;
        break;
      }
      if (*end != ',') {
        k = 0;
        break;
      }
      p = end + 1;
    }
    if (!(k == 2 || k == 3) || *p || !(r[2] > 1 && r[2] < 179) || fabs(r[1]) > 90)
      return vx_cli_usage_error(cmd, "bad value '%s' for --camera (AZ,EL[,FOV] in degrees, "
                                "elevation within +-90, FOV from 1 to 179)", v);
    memcpy(a->camera, r, sizeof r);
  }
  return 0;
}

vx_device vx_view_args_device(const vx_view_args *a) {
  return a->gpu ? VX_DEVICE_GPU : a->cpu ? VX_DEVICE_CPU : VX_DEVICE_AUTO;
}

void vx_view_args_render(const vx_view_args *a, const vx_tree *t, const vx_tiled_file *tf,
                         double turn, vx_render_opts *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->width = a->size[0];
  o->height = a->size[1];
  if (a->lod == -1) {
    o->lod = VX_LOD_PIXEL;
  } else if (a->lod >= 0) {
    o->lod = VX_LOD_LEVEL;
    o->level = a->lod;
  }
  o->lod_scale = a->lod_scale;
  o->shade = (vx_shade)a->shade;
  if (tf)
    vx_tiled_camera_orbit(tf, a->camera[0] + turn, a->camera[1], a->camera[2], &o->camera);
  else
    vx_camera_orbit(t, a->camera[0] + turn, a->camera[1], a->camera[2], &o->camera);
  for (int k = 0; k < 3; k++) {
    if (a->have_target) o->camera.target[k] = a->target[k];
    if (a->have_eye) o->camera.eye[k] = a->eye[k];
  }
}

int vx_cli_open_tree(const char *cmd, const char *path, uint32_t levels, uint64_t mem_limit,
                     int lod, vx_tree **t, vx_tree_info *info) {
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.levels = levels;
  ro.mem_limit = mem_limit;
  *t = NULL;
  if (vx_tree_load(path, &ro, t, &e) != VX_OK) return vx_cli_fail(cmd, &e);
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  vx_tree_get_info(*t, info);
  if (lod > (int)info->depth) {
    vx_tree_free(*t);
    *t = NULL;
    return vx_cli_usage_error(cmd, "--lod %d is beyond %s's depth %u (levels 0..%u)", lod, path,
                              info->depth, info->depth);
  }
  return 0;
}

int vx_cli_open_any(const char *cmd, const char *path, int lod, uint64_t mem_limit,
                    int tiled, vx_tree **t, vx_tiled_file **tf, vx_tree_info *info) {
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.mem_limit = mem_limit;
  *t = NULL;
  *tf = NULL;
  vx_error e;
  memset(&e, 0, sizeof e);
  if (vx_tiled_file_open(path, &ro, tf, &e) == VX_OK) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    vx_tiled_file_get_info(*tf, info);
    if (tiled || info->depth > 14) {
      info->levels_loaded = info->depth + 1;
      if (lod <= (int)info->depth) return 0;
      vx_tiled_file_close(*tf);
      *tf = NULL;
      return vx_cli_usage_error(cmd, "--lod %d is beyond %s's depth %u (levels 0..%u)", lod,
                                path, info->depth, info->depth);
    }
    vx_tiled_file_close(*tf);
    *tf = NULL;
  } else if (tiled == VX_CLI_TILED_REQUIRED) {
    return e.status == VX_ERR_FORMAT
               ? vx_cli_usage_error(cmd, "--budget applies to a tiled .svo file")
               : vx_cli_fail(cmd, &e);
  }
  return vx_cli_open_tree(cmd, path, lod >= 0 ? (uint32_t)lod + 1 : 0, mem_limit, lod, t, info);
}

void vx_cli_tiles_line(const char *cmd, const vx_renderer *rd, const vx_frame_stats *fs) {
  vx_renderer_info ri;
  memset(&ri, 0, sizeof ri);
  ri.struct_size = sizeof ri;
  vx_renderer_get_info(rd, &ri);
  char b[32], res[32];
  vx_format_bytes((double)ri.budget_bytes, b, sizeof b);
  vx_format_bytes((double)fs->resident_bytes, res, sizeof res);
  fprintf(stderr, "voxlod %s: tiles: %llu of %llu finer than the coarse level %u, %s resident of a "
          "%s budget, %u read for this image, %u wanted beyond the budget\n", cmd,
          (unsigned long long)ri.tiles_detailed, (unsigned long long)ri.tiles, ri.coarse_level,
          res, b, fs->tiles_loaded, fs->tiles_pending);
}

int vx_cli_finish_build(const char *cmd, const char *out, vx_status s, vx_conversion *b,
                        vx_error *e, vx_conversion_stats *st) {
  vx_cli_progress_done();
  if (s != VX_OK) {
    if (s == VX_ERR_INTERRUPTED) snprintf(e->msg, sizeof e->msg, "interrupted; %s was not written", out);
    return vx_cli_fail(cmd, e);
  }
  if (!vx_cli_quiet) vx_cli_notes(cmd, vx_conversion_notes(b));
  memset(st, 0, sizeof *st);
  st->struct_size = sizeof *st;
  vx_conversion_get_stats(b, st);
  vx_conversion_free(b);
  return 0;
}

vx_status vx_cli_load(const char *path, const vx_view_args *a, vx_tree **t, vx_error *e) {
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.levels = a->lod >= 0 ? (uint32_t)a->lod + 1 : 0;
  ro.mem_limit = a->mem_limit;
  return vx_tree_load(path, &ro, t, e);
}
