/* cli.c - argument parsing, progress display, signal handling and the GPU-or-CPU render choice
 * shared by the voxlod commands. */
#define _POSIX_C_SOURCE 200809L
#include "tools/cli.h"
#include "formats/svo_file.h"

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
uint64_t vx_cli_read_limit = 0;

int vx_cli_take_read_limit(int *argc, char **argv, const char *cmd) {
  for (int i = 2; i < *argc; i++) {
    if (strcmp(argv[i], "--mem-limit") != 0) continue;
    if (i + 1 >= *argc || vx_parse_bytes(argv[i + 1], &vx_cli_read_limit))
      return vx_cli_usage_error(cmd, "bad --mem-limit (use e.g. 8G or 512M)");
    for (int k = i; k + 2 < *argc; k++) argv[k] = argv[k + 2];
    *argc -= 2;
    i--;
  }
  return 0;
}

vx_status vx_cli_read(const char *path, int max_level, vx_octree *t, vx_svo_file_info *info, vx_error *e) {
  vx_svo_read_opts rd;
  memset(&rd, 0, sizeof rd);
  rd.max_level = max_level;
  rd.mem_limit = vx_cli_read_limit;
  return vx_svo_read(path, &rd, t, info, e);
}

int vx_cli_fail(const char *what, const vx_error *e) {
  vx_cli_progress_done();
  if (e->msg[0])
    fprintf(stderr, "voxlod: %s: %s\n", what, e->msg);
  else
    fprintf(stderr, "voxlod: %s: %s\n", what, vx_status_str(e->status));
  return e->status == VX_ERR_INTERRUPTED ? 130 : 1;
}

int vx_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "voxlod %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see 'voxlod %s --help')\n", cmd);
  va_end(ap);
  return 2;
}

double vx_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
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
  double now = vx_now_seconds();
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

static void on_signal(int sig) {
  if (vx_cli_interrupted) {
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
}

/* ---- parsers -------------------------------------------------------------------------------- */

int vx_parse_u32(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || v > UINT32_MAX || s[0] == '-') return -1;
  *out = (uint32_t)v;
  return 0;
}

int vx_parse_float(const char *s, float *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v)) return -1;
  *out = (float)v;
  return 0;
}

int vx_parse_size(const char *s, uint32_t *w, uint32_t *h) {
  unsigned a, b;
  char tail;
  if (sscanf(s, "%ux%u%c", &a, &b, &tail) != 2 || a < 1 || b < 1 || a > 16384 || b > 16384)
    return -1;
  *w = a;
  *h = b;
  return 0;
}

int vx_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v > 0)) return -1;
  double mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1024.0; end++; break;
  case 'm': case 'M': mul = 1048576.0; end++; break;
  case 'g': case 'G': mul = 1073741824.0; end++; break;
  case 't': case 'T': mul = 1099511627776.0; end++; break;
  default: break;
  }
  if (*end == 'B' || *end == 'b' || *end == 'i') end++;
  if (*end == 'B') end++;
  if (*end) return -1;
  *out = (uint64_t)(v * mul);
  return 0;
}

int vx_parse_lod(const char *s, int *lod) {
  if (strcmp(s, "auto") == 0) {
    *lod = VX_LOD_AUTO;
    return 0;
  }
  uint32_t v;
  if (vx_parse_u32(s, &v) || v > VX_MAX_DEPTH) return -1;
  *lod = (int)v;
  return 0;
}

int vx_parse_vec3(const char *s, double v[3]) {
  char tail;
  return sscanf(s, "%lf,%lf,%lf%c", &v[0], &v[1], &v[2], &tail) == 3 && isfinite(v[0]) &&
                 isfinite(v[1]) && isfinite(v[2])
             ? 0
             : -1;
}

void vx_format_bytes(double b, char *buf, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024.0 && i < 4) {
    b /= 1024.0;
    i++;
  }
  snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

/* ---- view options --------------------------------------------------------------------------- */

const char *vx_view_args_help =
    "  --size WxH          image size (default 800x600)\n"
    "  --lod L|auto        cut the tree at level L (0 = root .. depth = finest voxels), or choose\n"
    "                      per pixel by the pixel-cone rule (default: finest)\n"
    "  --lod-scale S       auto LOD: stop at nodes smaller than S pixels (default 1)\n"
    "  --camera AZ,EL[,FOV] orbit camera framing the model: azimuth, elevation, vertical FOV in\n"
    "                      degrees (default 30,20,40)\n"
    "  --eye X,Y,Z         camera position in world (mesh) coordinates\n"
    "  --target X,Y,Z      point looked at, world coordinates (default: the model's centre)\n"
    "  --shade MODE        smooth (trilinear zero crossing, default), blocks (voxel cubes),\n"
    "                      normals (normal as colour)\n"
    "  --gpu | --cpu       force the CUDA or the CPU renderer (default: GPU if usable, else CPU)\n"
    "  --threads N         CPU threads (default: all cores)\n"
    "  --mem-limit SIZE    refuse a file whose decoded size exceeds SIZE (default 16G)\n";

void vx_view_args_init(vx_view_args *a) {
  memset(a, 0, sizeof *a);
  a->ro.width = 800;
  a->ro.height = 600;
  a->ro.lod = -2; /* finest; resolved against the tree */
  a->ro.lod_scale = 1.0f;
  a->ro.shade = VX_SHADE_SMOOTH;
  a->azimuth = 30;
  a->elevation = 20;
  a->fov = 40;
}

int vx_view_args_parse(vx_view_args *a, int argc, char **argv, int *i, const char *cmd) {
  const char *o = argv[*i];
  const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
  int takes = strcmp(o, "--size") == 0 || strcmp(o, "--lod") == 0 ||
              strcmp(o, "--lod-scale") == 0 || strcmp(o, "--camera") == 0 ||
              strcmp(o, "--eye") == 0 || strcmp(o, "--target") == 0 ||
              strcmp(o, "--shade") == 0 || strcmp(o, "--threads") == 0;
  if (strcmp(o, "--gpu") == 0) {
    a->force_gpu = 1;
    return 1;
  }
  if (strcmp(o, "--cpu") == 0) {
    a->force_cpu = 1;
    return 1;
  }
  if (!takes) return 0;
  if (!val) {
    vx_cli_usage_error(cmd, "%s needs a value", o);
    return -1;
  }
  int bad = 0;
  if (strcmp(o, "--size") == 0) {
    bad = vx_parse_size(val, &a->ro.width, &a->ro.height);
  } else if (strcmp(o, "--lod") == 0) {
    bad = vx_parse_lod(val, &a->ro.lod);
  } else if (strcmp(o, "--lod-scale") == 0) {
    bad = vx_parse_float(val, &a->ro.lod_scale) || !(a->ro.lod_scale > 0);
  } else if (strcmp(o, "--camera") == 0) {
    double v[3] = {0, 0, a->fov};
    char tail;
    int n = sscanf(val, "%lf,%lf,%lf%c", &v[0], &v[1], &v[2], &tail);
    bad = !(n == 2 || n == 3) || !(v[2] > 1 && v[2] < 179);
    a->azimuth = v[0];
    a->elevation = v[1];
    a->fov = v[2];
  } else if (strcmp(o, "--eye") == 0) {
    bad = vx_parse_vec3(val, a->eye);
    a->have_eye = 1;
  } else if (strcmp(o, "--target") == 0) {
    bad = vx_parse_vec3(val, a->target);
    a->have_target = 1;
  } else if (strcmp(o, "--shade") == 0) {
    if (strcmp(val, "smooth") == 0) a->ro.shade = VX_SHADE_SMOOTH;
    else if (strcmp(val, "blocks") == 0) a->ro.shade = VX_SHADE_BLOCKS;
    else if (strcmp(val, "normals") == 0) a->ro.shade = VX_SHADE_NORMALS;
    else bad = 1;
  } else if (strcmp(o, "--threads") == 0) {
    uint32_t t;
    bad = vx_parse_u32(val, &t) || t > 1024;
    a->threads = (int)t;
  }
  if (bad) {
    vx_cli_usage_error(cmd, "bad value '%s' for %s", val, o);
    return -1;
  }
  (*i)++;
  return 1;
}

void vx_view_args_camera(const vx_view_args *a, const vx_octree *t, vx_camera *cam) {
  vx_march_orbit(t, a->azimuth, a->elevation, a->fov, cam);
  if (a->have_target)
    for (int k = 0; k < 3; k++) cam->target[k] = a->target[k];
  if (a->have_eye)
    for (int k = 0; k < 3; k++) cam->eye[k] = a->eye[k];
}

vx_status vx_cli_render(const vx_octree *t, const vx_march_opts *o, const vx_view_args *a,
                        vx_march_image *img, int *used_gpu, vx_error *err) {
  *used_gpu = 0;
  if (!a->force_cpu) {
    vx_error ge;
    memset(&ge, 0, sizeof ge);
    vx_status s = vx_render_gpu(t, o, img, &ge);
    if (s == VX_OK) {
      *used_gpu = 1;
      return VX_OK;
    }
    if (a->force_gpu) {
      if (err) *err = ge;
      return s;
    }
    fprintf(stderr, "voxlod: GPU render unavailable (%s); using the CPU\n",
              ge.msg[0] ? ge.msg : vx_status_str(s));
  }
  return vx_render_cpu(t, o, img, a->threads, err);
}
