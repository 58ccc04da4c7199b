/* cli.h - helpers shared by the voxlod commands: argument parsing, progress, messages.
 * tools/ is the only code that prints. */
#ifndef VOXLOD_TOOLS_CLI_H
#define VOXLOD_TOOLS_CLI_H

#include <signal.h>
#include <stdint.h>
#include "svo/svo.h"
#include "marcher/marcher.h"
#include "formats/svo_file.h"

extern volatile sig_atomic_t vx_cli_interrupted;
extern int vx_cli_quiet;

/* Prints "voxlod: <what>: <message>" to stderr and returns the exit code for status s. */
int vx_cli_fail(const char *what, const vx_error *e);
int vx_cli_usage_error(const char *cmd, const char *fmt, ...);

/* Progress callback printing phase, percentage and ETA on stderr; returns 1 when interrupted. */
int vx_cli_progress(void *user, const char *phase, double fraction);
void vx_cli_progress_done(void);

/* SIGINT/SIGTERM set vx_cli_interrupted (a second one terminates at once). */
void vx_cli_install_signals(void);

/* Parsers; return 0 on success. */
int vx_parse_u32(const char *s, uint32_t *out);
int vx_parse_float(const char *s, float *out);
int vx_parse_size(const char *s, uint32_t *w, uint32_t *h);       /* "1920x1080" */
int vx_parse_bytes(const char *s, uint64_t *out);                 /* "8G", "512M", "1000000" */
int vx_parse_lod(const char *s, int *lod);                        /* "auto" or a level */
int vx_parse_vec3(const char *s, double v[3]);                    /* "x,y,z" */

/* Camera/LOD/size options shared by render, bench, compare. Returns 1 if argv[*i] was consumed
 * (advancing *i past its value), 0 if not an option of this group, -1 on a bad value. */
typedef struct vx_view_args {
  vx_march_opts ro;
  double azimuth, elevation, fov;
  int have_eye, have_target;
  double eye[3], target[3];
  int force_gpu, force_cpu;
  int threads;
} vx_view_args;
void vx_view_args_init(vx_view_args *a);
int vx_view_args_parse(vx_view_args *a, int argc, char **argv, int *i, const char *cmd);
void vx_view_args_camera(const vx_view_args *a, const vx_octree *t, vx_camera *cam);
extern const char *vx_view_args_help;

/* Renders with the GPU when possible (unless forced), falling back to the CPU with a one-line
 * notice. *used_gpu tells which ran. */
vx_status vx_cli_render(const vx_octree *t, const vx_march_opts *o, const vx_view_args *a,
                        vx_march_image *img, int *used_gpu, vx_error *err);

/* Reading .svo files: the memory limit the reader checks a file's declared sizes against before
 * allocating (--mem-limit of render, stats, bench, compare; 0: the reader's default, 16 GiB). */
extern uint64_t vx_cli_read_limit;
/* Removes "--mem-limit SIZE" from argv (commands other than convert); 0 ok, 2 bad usage. */
int vx_cli_take_read_limit(int *argc, char **argv, const char *cmd);
vx_status vx_cli_read(const char *path, int max_level, vx_octree *t, vx_svo_file_info *info, vx_error *e);

double vx_now_seconds(void);
void vx_format_bytes(double bytes, char *buf, size_t n);

int vx_cmd_convert(int argc, char **argv);
int vx_cmd_render(int argc, char **argv);
int vx_cmd_stats(int argc, char **argv);
int vx_cmd_bench(int argc, char **argv);
int vx_cmd_compare(int argc, char **argv);

/* Image error of tree b against tree a over `views` orbit views (quality.c). */
typedef struct vx_quality {
  double psnr_db;         /* RGB PSNR over all pixels (INFINITY when identical) */
  double depth_bad_frac;  /* pixels whose depth differs by > one finest voxel, or hit/miss differs */
  double hit_mismatch_frac;
  uint64_t pixels;
} vx_quality;
vx_status vx_cli_quality(const vx_octree *a, const vx_octree *b, const vx_view_args *va, int views,
                         vx_quality *q, vx_error *err);

#endif
