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

vx_status vx_error_set_at(const char *file, int line, vx_error *err, vx_status s, const char *fmt,
                          ...) {
  if (err) {
    char loc[96];
    int n = snprintf(loc, sizeof loc, " (%s:%d)", short_file(file), line);
    if (n < 0 || (size_t)n >= sizeof loc) loc[0] = 0;
    size_t room = sizeof err->msg - strlen(loc);
    va_list ap;
    va_start(ap, fmt);
    err->status = s;
    vsnprintf(err->msg, room, fmt, ap);
    va_end(ap);
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
  memcpy(err->msg, m, sizeof err->msg - 1);
  err->msg[sizeof err->msg - 1] = 0;
}
