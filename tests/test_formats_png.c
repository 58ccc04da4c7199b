/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_png.c - PNG output: a written image decodes (stb_image) to the same pixels; an
 * unwritable destination fails with VX_ERR_IO and leaves nothing behind. */
#define _POSIX_C_SOURCE 200809L
#include "formats/png.h"
#include "check.h"

#include <dirent.h>
#include <unistd.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb_image.h>

static char tmpdir[256];

static int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)) != NULL) n += de->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void png_write_round_trips_pixels(void) {
  const uint32_t w = 37, h = 23;
  uint8_t *rgb = (uint8_t *)malloc(w * h * 3);
  for (uint32_t i = 0; i < w * h * 3; i++) rgb[i] = (uint8_t)(i * 7 + i / 3);
  char path[512];
  snprintf(path, sizeof path, "%s/a.png", tmpdir);
  vx_error e;
  CHECK_MSG(vx_png_write(path, rgb, w, h, &e) == VX_OK, "%s", e.msg);
  int x, y, c;
  unsigned char *back = stbi_load(path, &x, &y, &c, 3);
  CHECK(back && x == (int)w && y == (int)h);
  if (back) CHECK(memcmp(back, rgb, w * h * 3) == 0);
  stbi_image_free(back);
  /* Overwrite: the new image replaces the old one. */
  memset(rgb, 200, w * h * 3);
  CHECK(vx_png_write(path, rgb, w, h, &e) == VX_OK);
  back = stbi_load(path, &x, &y, &c, 3);
  CHECK(back && back[0] == 200 && back[w * h * 3 - 1] == 200);
  stbi_image_free(back);
  CHECK(dir_entries(tmpdir) == 1);
  unlink(path);
  free(rgb);
}

static void png_write_to_unwritable_place_fails_cleanly(void) {
  uint8_t rgb[12] = {0};
  vx_error e;
  char path[600];
  snprintf(path, sizeof path, "%s/no_such_dir/x.png", tmpdir);
  CHECK(vx_png_write(path, rgb, 2, 2, &e) == VX_ERR_IO);
  CHECK_MSG(strstr(e.msg, "does not exist") != NULL, "%s", e.msg);
  /* A file where a directory should be. */
  char file[600];
  snprintf(file, sizeof file, "%s/plain", tmpdir);
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
  snprintf(path, sizeof path, "%s/plain/x.png", tmpdir);
  CHECK(vx_png_write(path, rgb, 2, 2, &e) == VX_ERR_IO);
  CHECK(vx_png_write(tmpdir, rgb, 2, 2, &e) == VX_ERR_IO); /* a directory */
  /* A read-only directory (root ignores the mode, so only checked for other users). */
  char ro[400];
  snprintf(ro, sizeof ro, "%s/ro", tmpdir);
  mkdir(ro, 0500);
  snprintf(path, sizeof path, "%s/x.png", ro);
  if (geteuid() != 0) {
    CHECK(vx_png_write(path, rgb, 2, 2, &e) == VX_ERR_IO);
    CHECK_MSG(strstr(e.msg, "Permission denied") != NULL, "%s", e.msg);
  }
  CHECK(dir_entries(ro) == (geteuid() != 0 ? 0 : dir_entries(ro)));
  unlink(path);
  rmdir(ro);
  unlink(file);
  CHECK(dir_entries(tmpdir) == 0);
  CHECK(vx_png_write(path, rgb, 0, 2, &e) == VX_ERR_INVALID_ARG);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_png.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("cannot make a temporary directory");
  RUN(png_write_round_trips_pixels);
  RUN(png_write_to_unwritable_place_fails_cleanly);
  rmdir(tmpdir);
  return check_summary();
}
