/* SPDX-License-Identifier: Apache-2.0 */
/* protocol.h - what a page may say to `voxlod view`, parsed and checked byte by byte, the
 * limits a request is held to, and the Host header's grammar. Pure functions over caller memory (no server, no allocation, no
 * global state), so the fuzz target (fuzz/fuzz_view_msg.c) drives exactly what the server runs.
 *
 * A message from the page is one websocket text frame of printable ASCII, at most VW_MSG_MAX
 * bytes: a command word, then fields "key=value" separated by single spaces, each key at most
 * once, for example
 *
 *   view seq=12 eye=0.5,0.2,1.9 target=0.5,0.4,0.5 up=0,1,0 fov=40 w=1280 h=720 lod=auto
 *        shade=smooth q=80 moving=1
 *   png
 *   ack frame=7
 *   ping
 *
 * view: any subset of its fields; the others keep their values. eye/target/up are world
 * coordinates (finite, |x| <= 1e30), fov in [1, 179] degrees, w/h the canvas in device pixels
 * (1 .. 2^31-1: clamped later by vw_clamp_size, never refused for being large), lod "finest",
 * "auto" or a level 0 .. max_level, lodscale in [0.01, 1000] pixels, shade
 * smooth|blocks|normals|albedo (smooth and blocks are lit, in the tree's colours when it has
 * them; albedo is the unlit colour), q the JPEG quality 1 .. 100, moving 0|1 (1: the camera is
 * being dragged: previews may come first), seq the page's own number for this view (echoed in
 * the frames that show it).
 * png: the current view at full size as PNG. ack: frames up to `frame` have arrived (flow
 * control). ping: the server answers at once (liveness).
 *
 * Numbers are plain decimals (-12.5e3); "nan", "inf", hex and leading '+' are refused.
 */
#ifndef VOXLOD_VIEWER_PROTOCOL_H
#define VOXLOD_VIEWER_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define VW_MSG_MAX 1024        /* longest message accepted, bytes */
#define VW_COORD_MAX 1e30      /* largest camera coordinate accepted */
#define VW_SIZE_ASK_MAX 2147483647u

typedef enum vw_cmd { VW_CMD_VIEW = 1, VW_CMD_PNG, VW_CMD_ACK, VW_CMD_PING } vw_cmd;

enum {
  VW_LOD_FINEST = -2,
  VW_LOD_AUTO = -1
};

/* Which fields a message carried (vw_msg.has). */
enum {
  VW_HAS_EYE = 1u << 0,
  VW_HAS_TARGET = 1u << 1,
  VW_HAS_UP = 1u << 2,
  VW_HAS_FOV = 1u << 3,
  VW_HAS_W = 1u << 4,
  VW_HAS_H = 1u << 5,
  VW_HAS_LOD = 1u << 6,
  VW_HAS_LODSCALE = 1u << 7,
  VW_HAS_SHADE = 1u << 8,
  VW_HAS_QUALITY = 1u << 9,
  VW_HAS_MOVING = 1u << 10,
  VW_HAS_SEQ = 1u << 11,
  VW_HAS_FRAME = 1u << 12
};

typedef struct vw_msg {
  vw_cmd cmd;
  unsigned has;            /* VW_HAS_* */
  double eye[3], target[3], up[3];
  double fov;
  uint32_t width, height;  /* as asked */
  int lod;                 /* VW_LOD_FINEST, VW_LOD_AUTO or a level */
  double lod_scale;
  int shade;               /* 0 smooth, 1 blocks, 2 normals, 3 albedo (vx_shade) */
  int quality;
  int moving;
  uint32_t seq;
  uint32_t frame;
} vw_msg;

/* Parses data[0 .. n-1] (not NUL-terminated) into *m. Returns 0, or -1 with a one-line reason
 * in why (why_n bytes, may be 0). max_level bounds "lod=N" (the tree's depth). */
int vw_msg_parse(const char *data, size_t n, int max_level, vw_msg *m, char *why, size_t why_n);

/* 0 when eye, target, up and fov make a camera (finite, eye apart from target, up not along the
 * view), else -1 with a reason. */
int vw_camera_check(const double eye[3], const double target[3], const double up[3], double fov,
                    char *why, size_t why_n);

/* The size to draw for a request of w x h: at most max_w x max_h, the aspect ratio kept (each
 * side at least 1). */
void vw_clamp_size(uint32_t w, uint32_t h, uint32_t max_w, uint32_t max_h, uint32_t *out_w,
                   uint32_t *out_h);

/* The value of a Host header: host [":" port], where host is a name (letters, digits, '-', '.',
 * '_'), or a bracketed IPv6 literal ("[::1]"), and port at most 5 digits (RFC 3986 allows none).
 * Anything else, trailing bytes after "]" or the port included, is refused. Writes the host
 * (without brackets) to name (n bytes, NUL-terminated): 0, or -1. */
int vw_host_parse(const char *value, char *name, size_t n);

/* 1 when a host from vw_host_parse is this machine's loopback: "localhost", an IPv4 address in
 * 127.0.0.0/8 written as four decimal numbers, or the IPv6 loopback (::1). */
int vw_host_is_loopback(const char *name);

/* Copies s into dst (n bytes, NUL-terminated, truncated), control bytes and DEL written as \xNN
 * and a backslash as \\, so that a file name printed to a terminal cannot carry escape
 * sequences. Returns dst. */
char *vw_text_escape(char *dst, size_t n, const char *s);

/* Writes s as a JSON string (quotes included) into dst (n bytes, NUL-terminated, truncated on a
 * character boundary when too long); returns the length written. */
size_t vw_json_string(char *dst, size_t n, const char *s);

#endif
