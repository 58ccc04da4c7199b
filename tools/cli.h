/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h - what the voxlod commands share: the one option parser (every number range-checked as
 * it is parsed), the camera/LOD/size options of the commands that render, progress, signals and
 * messages. tools/ is the only code that prints, and it uses the public API (voxlod.h) only. */
#ifndef VOXLOD_TOOLS_CLI_H
#define VOXLOD_TOOLS_CLI_H

#include <signal.h>
#include <stdint.h>
#include "voxlod.h"

extern volatile sig_atomic_t vx_cli_interrupted;
extern int vx_cli_quiet;

/* Prints "voxlod: <what>: <message>" to stderr and returns the exit code for the status (1, or
 * 130 when interrupted). */
int vx_cli_fail(const char *what, const vx_error *e);
/* Prints "voxlod <cmd>: <message>" and a pointer to --help; returns 2. */
int vx_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints each line of a library note as "voxlod <cmd>: <line>". */
void vx_cli_notes(const char *cmd, const char *notes);

/* Progress callback printing phase, percentage and ETA on stderr; returns 1 when interrupted. */
int vx_cli_progress(void *user, const char *phase, double fraction);
void vx_cli_progress_done(void);

/* SIGINT, SIGTERM and SIGHUP set vx_cli_interrupted (long calls then stop through the progress
 * callback and clean up); a second one removes the temporaries of writes in progress and ends the
 * process. SIGXFSZ is ignored, so that a file size limit is a write error. */
void vx_cli_install_signals(void);

double vx_cli_now(void);
/* "512 B", "1.00 KiB", "3.25 GiB". */
void vx_format_bytes(double bytes, char *buf, size_t n);

/* ---- the option parser ---------------------------------------------------------------------- */

typedef enum vx_opt_kind {
  VX_OPT_FLAG,   /* int: set to 1 */
  VX_OPT_U32,    /* uint32_t in [lo, hi] */
  VX_OPT_INT,    /* int in [lo, hi] */
  VX_OPT_DOUBLE, /* double in [lo, hi], finite */
  VX_OPT_FLOAT,  /* float in [lo, hi], finite */
  VX_OPT_BYTES,  /* uint64_t: "8G", "512M", "1000000" (K, M, G, T: powers of 1024) in [lo, hi] */
  VX_OPT_STRING, /* const char * */
  VX_OPT_CHOICE, /* int: index of the value in `choices` ("a|b|c") */
  VX_OPT_SIZE,   /* uint32_t[2]: "WxH", each in [lo, hi] */
  VX_OPT_VEC3,   /* double[3]: "x,y,z", finite */
  VX_OPT_LOD     /* int: a level in [lo, hi], or -1 for "auto" */
} vx_opt_kind;

typedef struct vx_opt {
  const char *name;  /* "--res" */
  const char *alias; /* "-q", or NULL */
  vx_opt_kind kind;
  void *dst;
  double lo, hi;
  const char *choices;
  const char *hint;  /* what a good value looks like, for the message ("a power of two") */
  int *seen;         /* set to 1 when given (may be NULL) */
} vx_opt;

/* One option entry (alias, choices and seen stay NULL; set them on the result when needed). */
vx_opt vx_cli_opt(const char *name, vx_opt_kind kind, void *dst, double lo, double hi,
                  const char *hint);

/* Parses argv[2..] against opts (terminated by a name == NULL entry): options may come anywhere;
 * the other arguments fill pos[0 .. max_pos-1] (*npos counts them). Prints the usage error and
 * returns 2 on an unknown option, a missing or bad value or too many arguments; returns -1 after
 * printing help for --help/-h (help text and `extra`); 0 otherwise. */
int vx_cli_parse(const char *cmd, int argc, char **argv, const vx_opt *opts, const char **pos,
                 int max_pos, int *npos, const char *help, const char *extra);

/* ---- what the rendering commands share ----------------------------------------------------- */

typedef struct vx_view_args {
  uint32_t size[2];
  int lod;              /* -2: finest (not given), -1: auto, else a level */
  float lod_scale;
  double camera[3];     /* azimuth, elevation, fov */
  const char *camera_text; /* --camera as given (checked by vx_view_args_check) */
  double eye[3], target[3];
  int have_eye, have_target, have_camera;
  int shade;            /* vx_shade */
  int gpu, cpu;
  uint32_t threads;
  uint64_t mem_limit;   /* read limit (0: the library's default) */
  int seen[16];         /* which of the view options were given, in vx_view_opts' order */
} vx_view_args;

/* Defaults: 800x600, finest, camera 30,20,40, smooth, auto device. */
void vx_view_args_init(vx_view_args *a);
/* Appends the view options to opts (which must have room for VX_VIEW_OPTS more entries) and
 * returns the new count; the --camera value is checked by vx_view_args_check. */
#define VX_VIEW_OPTS 11
int vx_view_opts(vx_view_args *a, vx_opt *opts, int n);
extern const char *vx_view_args_help;
/* Checks what the parser could not (--camera's numbers, --gpu with --cpu) and refuses options
that would be ignored (--lod-scale without --lod auto, --threads with --gpu); 0 or 2 (printed). */
int vx_view_args_check(vx_view_args *a, const char *cmd);
/* The first view option given ("--size"), or NULL: for a command that uses them only in one
 * mode, to refuse them in the other. */
const char *vx_view_args_given(const vx_view_args *a);

/* The render options for tree t at orbit azimuth offset `turn` degrees. */
void vx_view_args_render(const vx_view_args *a, const vx_tree *t, const vx_tiled_file *tf,
                         double turn, vx_render_opts *o);
vx_device vx_view_args_device(const vx_view_args *a);
/* Loads a .svo for rendering: levels up to --lod only, under --mem-limit. */
vx_status vx_cli_load(const char *path, const vx_view_args *a, vx_tree **t, vx_error *e);

/* Loads a .svo (levels 0 .. levels-1; 0: all) under mem_limit (0: the library's default) and
 * fills *info. When lod >= 0 it must lie within the tree's depth. Prints the failure and returns
 * its exit code (1 or 2), or 0 with *t set. */
/* A tiled file read tile by tile (*tf) when `tiled` is nonzero or when it is finer than
 * 16384^3, else vx_cli_open_tree (*t, levels 0..lod); info filled; 0 or an exit code (printed).
 * tiled: VX_CLI_TILED_REQUIRED refuses a file that is not tiled (--budget), VX_CLI_TILED_PREFER
 * opens any other file as a tree. */
enum { VX_CLI_TILED_REQUIRED = 1, VX_CLI_TILED_PREFER = 2 };
int vx_cli_open_any(const char *cmd, const char *path, int lod, uint64_t mem_limit, int tiled,
                    vx_tree **t, vx_tiled_file **tf, vx_tree_info *info);
/* The tiles line of a tiled render: resident, budget, loads. */
void vx_cli_tiles_line(const char *cmd, const vx_renderer *rd, const vx_frame_stats *fs);
int vx_cli_open_tree(const char *cmd, const char *path, uint32_t levels, uint64_t mem_limit,
                     int lod, vx_tree **t, vx_tree_info *info);

/* After a conversion into out: the failure (an interrupt says out was not written) or the
 * notes; *st gets the statistics and b is freed. Returns the exit code (0 on success). */
int vx_cli_finish_build(const char *cmd, const char *out, vx_status s, vx_conversion *b,
                        vx_error *e, vx_conversion_stats *st);

int vx_cmd_convert(int argc, char **argv);
int vx_cmd_render(int argc, char **argv);
int vx_cmd_stats(int argc, char **argv);
int vx_cmd_bench(int argc, char **argv);
int vx_cmd_bench_sample(int argc, char **argv); /* bench --sample (bench_sample.c) */
/* bench --sample on a tiled file, tile by tile (bench_sample_tiled.c) */
int vx_cmd_bench_sample_tiled(vx_tiled_file *f, const char *path, uint64_t np, uint32_t reps,
                              double spread, int order, int level, uint32_t seed,
                              uint32_t threads, uint64_t cache, int gpu, int json);
int vx_cmd_compare(int argc, char **argv);
/* export.c: `voxlod export`, and `voxlod convert IN.vdb` (called by vx_cmd_convert after its
 * checks; vx_cli_is_vdb tells the input apart by its .vdb extension). */
int vx_cmd_export(int argc, char **argv);
int vx_cmd_mesh(int argc, char **argv); /* mesh.c: `voxlod mesh` */
int vx_cmd_sample(int argc, char **argv); /* sample.c: `voxlod sample` */
int vx_cli_is_vdb(const char *path);
int vx_cmd_convert_grid(const char *in, const char *out, vx_convert_opts *co, const char *grid,
                        double timeout);
/* viewer/view.c: built when civetweb and libturbojpeg are found (VOXLOD_HAVE_VIEWER). */
int vx_cmd_view(int argc, char **argv);

#endif
