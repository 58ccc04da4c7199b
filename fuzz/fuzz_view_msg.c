/* fuzz_view_msg.c - libFuzzer target: arbitrary bytes as a message from the viewer's page
 * (viewer/protocol.c). A message is refused, or parses into values inside the documented ranges
 * (abort otherwise); the size clamp and the JSON escaper run on what came out. */
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
