/* SPDX-License-Identifier: Apache-2.0 */
/* test_svo_text.c - library messages carry no terminal controls: vx_text_escape against
 * hand-written expectations (control characters, DEL, C1 controls and every kind of invalid
 * UTF-8 as \xNN; valid UTF-8 kept), its idempotence and truncation, and vx_error_set and
 * vx_error_prefix escaping what they are given; and the transform check's limits. */
#include "check.h"
#include "svo/svo.h"

static void expect_escape(const char *in, const char *want) {
  char out[256];
  vx_text_escape(out, sizeof out, in);
  CHECK_MSG(strcmp(out, want) == 0, "'%s' gave '%s', want '%s'", in, out, want);
  char again[256];
  vx_text_escape(again, sizeof again, out);
  CHECK_MSG(strcmp(again, out) == 0, "escaping twice changed '%s'", out);
}

static void svo_text_escapes_controls_and_bad_utf8(void) {
  expect_escape("plain name.vdb", "plain name.vdb");
  expect_escape("\x1b]0;pwn\x07", "\\x1b]0;pwn\\x07");
  expect_escape("a\nb\rc\td", "a\\x0ab\\x0dc\\x09d");
  expect_escape("del\x7f", "del\\x7f");
  expect_escape("donn\xc3\xa9" "es \xe2\x82\xac \xf0\x9f\x98\x80", "donn\xc3\xa9" "es \xe2\x82\xac \xf0\x9f\x98\x80");
  expect_escape("c1 \xc2\x9b" "31m", "c1 \\xc2\\x9b31m");           /* CSI as a C1 control */
  expect_escape("\xc2\xa0nbsp", "\xc2\xa0nbsp");                     /* U+00A0 is kept */
  expect_escape("lone \x9b", "lone \\x9b");                          /* continuation byte alone */
  expect_escape("cut \xe2\x82", "cut \\xe2\\x82");                   /* truncated sequence */
  expect_escape("over \xc0\xaf", "over \\xc0\\xaf");                 /* overlong '/' */
  expect_escape("sur \xed\xa0\x80", "sur \\xed\\xa0\\x80");          /* a surrogate */
  expect_escape("big \xf4\x90\x80\x80", "big \\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
  expect_escape("ff \xff\xfe", "ff \\xff\\xfe");
  /* truncation: never half an escape or half a character, always terminated */
  char small[6];
  vx_text_escape(small, sizeof small, "ab\x1b" "cd");
  CHECK_MSG(strcmp(small, "ab") == 0, "got '%s'", small);
  vx_text_escape(small, sizeof small, "abc\xe2\x82\xac");
  CHECK_MSG(strcmp(small, "abc") == 0, "got '%s'", small);
  vx_text_escape(small, 1, "abc");
  CHECK(small[0] == 0);
}

static void svo_text_errors_are_escaped(void) {
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK(vx_error_set(&e, VX_ERR_FORMAT, "grid '%s' not found", "\x1b[2Jfake ok\n") == VX_ERR_FORMAT);
  CHECK(e.status == VX_ERR_FORMAT);
  const char *want = "grid '\\x1b[2Jfake ok\\x0a' not found (";
  CHECK_MSG(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
  for (const char *p = e.msg; *p; p++) CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
  vx_error_prefix(&e, "\x1b]0;t\x07");
  want = "\\x1b]0;t\\x07: grid";
  CHECK_MSG(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
  for (const char *p = e.msg; *p; p++) CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static vx_status world(double ox, double scale, uint32_t depth, float band) {
  vx_octree t;
  memset(&t, 0, sizeof t);
  t.depth = depth;
  t.band = band;
  t.xf.origin[0] = ox;
  t.xf.scale = scale;
  vx_error e;
  return vx_octree_check_world(&t, VX_WORLD_FLOAT, &e);
}

static vx_status render(double ox, double scale, uint32_t depth) {
  vx_octree t;
  memset(&t, 0, sizeof t);
  t.depth = depth;
  t.band = 2.0f;
  t.xf.origin[0] = ox;
  t.xf.scale = scale;
  return vx_octree_check_world(&t, VX_WORLD_DOUBLE, NULL);
}

static void svo_world_check_limits(void) {
  CHECK(world(0.0, 1.0, 10, 2.0f) == VX_OK);
  CHECK(world(-0.5, 1.0 / 1024, 10, 2.0f) == VX_OK);
  CHECK(world(1e30, 1e25, 14, 2.0f) == VX_OK);         /* large but well inside float */
  CHECK(world(0.0, 1e-29, 14, 2.0f) == VX_OK);
  CHECK(world(1e300, 1e300, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, 1e-300, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, 1e-31, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, 1e37, 14, 2.0f) == VX_ERR_INVALID_ARG); /* the box reaches 1.6e41 */
  CHECK(world(0.0, 1e33, 2, 1e6f) == VX_ERR_INVALID_ARG);  /* the band in world units */
  /* the box within 2^21 voxels of the world origin: a float there resolves a quarter voxel */
  CHECK(world(2097152.0 - 1024.0, 1.0, 10, 2.0f) == VX_OK);
  CHECK(world(2097152.0 - 1023.0, 1.0, 10, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(1.0, 1e-20, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, 0.0, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, -1.0, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(NAN, 1.0, 5, 2.0f) == VX_ERR_INVALID_ARG);
  CHECK(world(0.0, INFINITY, 5, 2.0f) == VX_ERR_INVALID_ARG);
  /* rendering: double camera, float grid rays */
  CHECK(render(3e38, 4e37, 4) == VX_OK); /* a sphere at float's limit still draws */
  CHECK(render(0.0, 1e-149, 14) == VX_OK);
  CHECK(render(0.0, 1e-151, 5) == VX_ERR_INVALID_ARG);
  CHECK(render(1e300, 1e300, 5) == VX_ERR_INVALID_ARG);
  CHECK(render(1e20, 1.0, 5) == VX_ERR_INVALID_ARG);   /* 1e20 voxels away: beyond 2^40 */
  CHECK(render(1e12 - 32.0, 1.0, 5) == VX_OK);
  CHECK(render(0.0, NAN, 5) == VX_ERR_INVALID_ARG);
}

int main(void) {
  RUN(svo_text_escapes_controls_and_bad_utf8);
  RUN(svo_text_errors_are_escaped);
  RUN(svo_world_check_limits);
  return check_summary();
}
