/* SPDX-License-Identifier: Apache-2.0 */
/* error.c - status names and the one-line messages every fallible function leaves (error.h). */
#include "sys/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *vx_status_str(vx_status s) {
  switch (s) {
  case VX_OK: return "ok";
  case VX_ERR_INVALID_ARG: return "invalid argument";
  case VX_ERR_IO: return "I/O error";
  case VX_ERR_NOMEM: return "out of memory";
  case VX_ERR_FORMAT: return "unsupported or unreadable format";
  case VX_ERR_CORRUPT: return "corrupt or truncated data";
  case VX_ERR_VERSION: return "made by a newer voxlod";
  case VX_ERR_EMPTY: return "nothing to process";
  case VX_ERR_LIMIT: return "over a size or memory limit";
  case VX_ERR_CUDA: return "CUDA error";
  case VX_ERR_NO_GPU: return "no usable GPU";
  case VX_ERR_INTERRUPTED: return "interrupted";
  }
  return "unknown status";
}

/* "dir/file.c" of a compiler's __FILE__ (which may be an absolute path). */
static const char *short_file(const char *f) {
  const char *last = NULL, *prev = NULL;
  for (const char *p = f; *p; p++)
    if (*p == '/' || *p == '\\') {
      prev = last;
      last = p;
    }
  return prev ? prev + 1 : last ? last + 1 : f;
}

/* Length of the valid UTF-8 sequence at p (1..4) that is not a C1 control (U+0080..U+009F), or 0. */
static size_t utf8_ok(const unsigned char *p) {
  unsigned char c = p[0];
  if (c >= 0xc2 && c <= 0xdf) return (p[1] & 0xc0) == 0x80 && !(c == 0xc2 && p[1] < 0xa0) ? 2 : 0;
  unsigned char lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  return n;
}

char *vx_text_escape(char *dst, size_t cap, const char *src) {
  if (!dst || cap == 0) return dst;
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)(src ? src : "");
  while (*p) {
    size_t n = *p >= 0x20 && *p < 0x7f ? 1 : *p >= 0x80 ? utf8_ok(p) : 0;
    if (n) {
      if (o + n >= cap) break;
      memcpy(dst + o, p, n);
      o += n;
      p += n;
    } else {
      if (o + 4 >= cap) break;
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[*p >> 4];
      dst[o++] = hex[*p & 15];
      p++;
    }
  }
  dst[o] = 0;
  return dst;
}

vx_status vx_error_set_at(const char *file, int line, vx_error *err, vx_status s, const char *fmt,
                          ...) {
  if (err) {
    char loc[96];
    int n = snprintf(loc, sizeof loc, " (%s:%d)", short_file(file), line);
    if (n < 0 || (size_t)n >= sizeof loc) loc[0] = 0;
    size_t room = sizeof err->msg - strlen(loc);
    char raw[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    err->status = s;
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    vx_text_escape(err->msg, room, raw);
    strcat(err->msg, loc);
  }
  return s;
}

void vx_error_prefix(vx_error *err, const char *prefix) {
  if (!err || !prefix || !*prefix) return;
  size_t n = strlen(prefix);
  if (strncmp(err->msg, prefix, n) == 0) return;
  char m[sizeof err->msg + 128];
  snprintf(m, sizeof m, "%.120s: %s", prefix, err->msg);
  vx_text_escape(err->msg, sizeof err->msg, m);
}
