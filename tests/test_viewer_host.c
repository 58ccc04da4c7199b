/* SPDX-License-Identifier: Apache-2.0 */
/* test_viewer_host.c - test_viewer_host: the viewer's Host header grammar and loopback test
 * (viewer/protocol.c: vw_host_parse, vw_host_is_loopback) and the escaping of names printed to
 * a terminal (vw_text_escape), against tables written from RFC 3986 / 7230 by hand. */
#define _POSIX_C_SOURCE 200809L
#include "viewer/protocol.h"

#include <stdio.h>
#include <string.h>

static int fails, checks;

#define CHECK(cond, ...)                                                                          \
  do {                                                                                           \
    checks++;                                                                                    \
    if (!(cond)) {                                                                               \
      fails++;                                                                                   \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                \
      printf(__VA_ARGS__);                                                                       \
      printf("\n");                                                                              \
    }                                                                                            \
  } while (0)

/* value, the host it names (NULL: refused), loopback */
static const struct {
  const char *value, *name;
  int loopback;
} cases[] = {
    {"localhost", "localhost", 1},
    {"localhost:8080", "localhost", 1},
    {"LocalHost:80", "LocalHost", 1},
    {"localhost:", "localhost", 1}, /* RFC 3986: port = *DIGIT */
    {"127.0.0.1", "127.0.0.1", 1},
    {"127.0.0.1:65535", "127.0.0.1", 1},
    {"127.0.0.2:8080", "127.0.0.2", 1},
    {"127.255.255.254", "127.255.255.254", 1},
    {"[::1]", "::1", 1},
    {"[::1]:8080", "::1", 1},
    {"[0:0:0:0:0:0:0:1]:80", "0:0:0:0:0:0:0:1", 1},
    {"example.com", "example.com", 0},
    {"example.com:443", "example.com", 0},
    {"128.0.0.1", "128.0.0.1", 0},
    {"10.1.2.3:80", "10.1.2.3", 0},
    {"127.1", "127.1", 0},               /* not four decimal parts */
    {"0x7f.0.0.1", "0x7f.0.0.1", 0},
    {"127.000.000.001", "127.000.000.001", 0},
    {"localhost.", "localhost.", 0},
    {"localhostx", "localhostx", 0},
    {"[::2]", "::2", 0},
    {"[::ffff:127.0.0.1]", "::ffff:127.0.0.1", 0},
    {"127.0.0.1.evil.example", "127.0.0.1.evil.example", 0},
    /* refused */
    {"[::1]evil", NULL, 0},
    {"[::1]:80evil", NULL, 0},
    {"[::1]:80:80", NULL, 0},
    {"[::1", NULL, 0},
    {"[]", NULL, 0},
    {"[::1]]", NULL, 0},
    {"[localhost]", NULL, 0},
    {"[::g]", NULL, 0},
    {"[:::1]", NULL, 0},
    {"", NULL, 0},
    {":8080", NULL, 0},
    {"localhost:80:80", NULL, 0},
    {"localhost:123456", NULL, 0},
    {"localhost:8o", NULL, 0},
    {"localhost 80", NULL, 0},
    {"local host", NULL, 0},
    {"localhost/", NULL, 0},
    {"user@localhost", NULL, 0},
    {"localhost\r\nX: 1", NULL, 0},
    {"localhost%00", NULL, 0},
    {"l\xc3\xb6" "calhost", NULL, 0},
    {"127.0.0.1\t", NULL, 0},
    {" 127.0.0.1", NULL, 0},
};

static void host_cases(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[256] = "x";
    int r = vw_host_parse(cases[i].value, name, sizeof name);
    if (!cases[i].name) {
      CHECK(r == -1, "'%s' accepted as '%s'", cases[i].value, name);
      continue;
    }
    CHECK(r == 0 && strcmp(name, cases[i].name) == 0, "'%s': %d, '%s' (want '%s')",
          cases[i].value, r, name, cases[i].name);
    CHECK(vw_host_is_loopback(name) == cases[i].loopback, "'%s': loopback %d, want %d", name,
          vw_host_is_loopback(name), cases[i].loopback);
  }
  /* every address of 127.0.0.0/8 is the loopback, the neighbours are not */
  for (int a = 0; a < 256; a += 51) {
    char v[32];
    snprintf(v, sizeof v, "127.%d.%d.%d", a, 255 - a, a / 2);
    CHECK(vw_host_is_loopback(v), "%s", v);
    snprintf(v, sizeof v, "126.%d.0.1", a);
    CHECK(!vw_host_is_loopback(v), "%s", v);
  }
  /* the name buffer: too small is refused, never cut */
  char small[5];
  CHECK(vw_host_parse("localhost", small, sizeof small) == -1, "a name longer than the buffer");
  CHECK(vw_host_parse("abcd:1", small, sizeof small) == 0 && strcmp(small, "abcd") == 0, "%s",
        small);
  CHECK(vw_host_parse(NULL, small, sizeof small) == -1, "NULL");
  CHECK(!vw_host_is_loopback(NULL), "NULL");
}

static void escape_cases(void) {
  char out[64];
  CHECK(strcmp(vw_text_escape(out, sizeof out, "plain/name.svo"), "plain/name.svo") == 0, "%s",
        out);
  CHECK(strcmp(vw_text_escape(out, sizeof out, "a\x1b]0;owned\x07" "b"),
               "a\\x1b]0;owned\\x07b") == 0, "%s", out);
  CHECK(strcmp(vw_text_escape(out, sizeof out, "\r\n\x7f\\"), "\\x0d\\x0a\\x7f\\\\") == 0, "%s",
        out);
  CHECK(strcmp(vw_text_escape(out, sizeof out, "caf\xc3\xa9"), "caf\xc3\xa9") == 0, "UTF-8 kept");
  /* truncation never splits an escape */
  char tiny[6];
  CHECK(strcmp(vw_text_escape(tiny, sizeof tiny, "ab\x1b"), "ab") == 0, "%s", tiny);
  CHECK(strcmp(vw_text_escape(tiny, sizeof tiny, NULL), "") == 0, "NULL");
}

int main(void) {
  host_cases();
  escape_cases();
  printf("%d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
