/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_view_msg.c - libFuzzer target: arbitrary bytes as a message from the viewer's page
 * (viewer/protocol.c). A message is refused, or parses into values inside the documented ranges
 * (abort otherwise); the size clamp and the JSON escaper run on what came out. The same bytes
 * go through the Host header parser (what a client sends as Host: a host it accepts is made of
 * the allowed characters only, is at most the input, and parses again to itself, bracketed
 * when it holds a ':'; a loopback verdict is one of the documented forms) and the escaping of
 * printed names (no control byte comes out). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "viewer/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int max_level = size ? data[0] % 16 : 0;
  vw_msg m;
  char why[256];
  if (vw_msg_parse((const char *)data, size, max_level, &m, why, sizeof why) == 0) {
    if (size > VW_MSG_MAX || m.cmd < VW_CMD_VIEW || m.cmd > VW_CMD_PING) abort();
    for (int k = 0; k < 3; k++)
      if (!isfinite(m.eye[k]) || !isfinite(m.target[k]) || !isfinite(m.up[k]) ||
          fabs(m.eye[k]) > VW_COORD_MAX)
        abort();
    if ((m.has & VW_HAS_FOV) && !(m.fov >= 1.0 && m.fov <= 179.0)) abort();
    if ((m.has & VW_HAS_LOD) && (m.lod < VW_LOD_FINEST || m.lod > max_level)) abort();
    if ((m.has & VW_HAS_W) && m.width < 1) abort();
    if ((m.has & VW_HAS_QUALITY) && (m.quality < 1 || m.quality > 100)) abort();
    if (m.cmd == VW_CMD_ACK && !(m.has & VW_HAS_FRAME)) abort();
    vw_camera_check(m.eye, m.target, m.up, m.fov, why, sizeof why);
    uint32_t w, h, mw = 1 + (size % 4096), mh = 1 + (size * 7 % 4096);
    vw_clamp_size(m.width, m.height, mw, mh, &w, &h);
    if (w < 1 || h < 1 || w > mw || h > mh) abort();
  } else if (strlen(why) == 0) {
    abort(); /* a refusal always says why */
  }
  /* The Host header parser over the raw bytes (NUL-terminated copy). */
  {
    char *v = (char *)malloc(size + 1), name[300], again[300], wrapped[310];
    if (!v) return 0;
    memcpy(v, data, size);
    v[size] = 0;
    if (vw_host_parse(v, name, sizeof name) == 0) {
      size_t k = strlen(name);
      if (k == 0 || k > strlen(v)) abort();
      int colon = strchr(name, ':') != NULL;
      for (size_t i = 0; i < k; i++) {
        char ch = name[i];
        int okc = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  ch == '-' || ch == '.' || ch == '_' || ch == ':';
        if (!okc) abort();
      }
      snprintf(wrapped, sizeof wrapped, colon ? "[%s]:80" : "%s:80", name);
      if (vw_host_parse(wrapped, again, sizeof again) != 0 || strcmp(again, name) != 0) abort();
      if (vw_host_is_loopback(name) && !colon && strncmp(name, "127.", 4) != 0 &&
          strlen(name) != 9)
        abort(); /* "localhost" (any case) or 127.x.x.x */
    }
    char esc[128];
    vw_text_escape(esc, sizeof esc, v);
    for (const char *p = esc; *p; p++)
      if ((unsigned char)*p < 0x20 || *p == 0x7f) abort();
    if (strlen(esc) >= sizeof esc) abort();
    free(v);
  }
  /* The escaper over the raw bytes (NUL-terminated copy): output is bounded and terminated. */
  char *s = (char *)malloc(size + 1), out[96];
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  size_t n = vw_json_string(out, sizeof out, s);
  if (n >= sizeof out || out[n] != 0 || out[0] != '"' || out[n - 1] != '"') abort();
  free(s);
  return 0;
}
