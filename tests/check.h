/* SPDX-License-Identifier: Apache-2.0 */
/* check.h - minimal test harness: always-on assertions that report file:line, a test runner.
 *
 *   static void svo_build_counts_one_voxel(void) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-6); }
 *   int main(void) { RUN(svo_build_counts_one_voxel); return check_summary(); }
 *
 * A test program exits 0 when all checks passed, 1 otherwise (or CHECK_FATAL), 77 when it
 * skipped itself (CHECK_SKIP: GPU tests without a GPU), which ctest reports as skipped.
 */
#ifndef VOXLOD_TESTS_CHECK_H
#define VOXLOD_TESTS_CHECK_H

#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int check_failures_ = 0;
static int check_count_ = 0;
static const char *check_current_ = "";

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    check_count_++;                                                                              \
    if (!(cond)) {                                                                               \
      check_failures_++;                                                                         \
      fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, check_current_, #cond); \
    }                                                                                            \
  } while (0)

#define CHECK_MSG(cond, ...)                                                                     \
  do {                                                                                           \
    check_count_++;                                                                              \
    if (!(cond)) {                                                                               \
      check_failures_++;                                                                         \
      fprintf(stderr, "%s:%d: %s: CHECK(%s) failed: ", __FILE__, __LINE__, check_current_, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
    }                                                                                            \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                                    \
  do {                                                                                           \
    double check_a_ = (double)(a), check_b_ = (double)(b);                                       \
    CHECK_MSG(fabs(check_a_ - check_b_) <= (double)(tol), "%s = %.9g, %s = %.9g, tol %g", #a,    \
              check_a_, #b, check_b_, (double)(tol));                                            \
  } while (0)

/* Ends the whole program as failed (exit 1) with a reason: the test cannot run here. */
#define CHECK_FATAL(...)                                                                         \
  do {                                                                                           \
    fprintf(stderr, "FATAL: ");                                                                  \
    fprintf(stderr, __VA_ARGS__);                                                                \
    fprintf(stderr, "\n");                                                                       \
    exit(1);                                                                                     \
  } while (0)

/* Ends the whole program as skipped (exit 77) with a reason. Only for what a GPU test needs: no
 * usable CUDA device. Everything else a test needs is in the repository or installed by
 * scripts/deps.sh. */
#define CHECK_SKIP(...)                                                                          \
  do {                                                                                           \
    fprintf(stderr, "SKIP: ");                                                                   \
    fprintf(stderr, __VA_ARGS__);                                                                \
    fprintf(stderr, "\n");                                                                       \
    exit(77);                                                                                    \
  } while (0)

/* RUN(fn) when main's argv[1] is absent or names fn: `test_x name` runs that test alone. */
#define RUN_ONE(fn)                                                                              \
  do {                                                                                           \
    if (argc < 2 || strcmp(argv[1], #fn) == 0) RUN(fn);                                          \
  } while (0)

#define RUN(fn)                                                                                  \
  do {                                                                                           \
    int check_before_ = check_failures_;                                                         \
    clock_t check_start_ = clock();                                                              \
    check_current_ = #fn;                                                                        \
    fn();                                                                                        \
    fprintf(stderr, "%s %s (%.1f s CPU)\n", check_failures_ == check_before_ ? "ok  " : "FAIL",  \
            #fn, (double)(clock() - check_start_) / CLOCKS_PER_SEC);                             \
  } while (0)

/* A step of xorshift64 on *state, its bits 11 .. 42: the tests' random numbers (each test seeds
 * its own state). */
static inline uint32_t check_xorshift(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (uint32_t)(*state >> 11);
}

/* Morton code of (x, y, z): bit i of x at bit 3i, of y at 3i + 1, of z at 3i + 2 (21 bits each). */
static inline uint64_t check_morton(uint32_t x, uint32_t y, uint32_t z) {
  uint64_t m = 0;
  for (int i = 0; i < 21; i++)
    m |= (uint64_t)(x >> i & 1u) << (3 * i) | (uint64_t)(y >> i & 1u) << (3 * i + 1) |
         (uint64_t)(z >> i & 1u) << (3 * i + 2);
  return m;
}

static inline int check_summary(void) {
  fprintf(stderr, "%d checks, %d failed\n", check_count_, check_failures_);
  return check_failures_ ? 1 : 0;
}

/* Path of a test mesh in tests/data/meshes (written by make_meshes.py there), or in
 * $VOXLOD_TEST_MESHES where the tree was copied elsewhere. The file is part of the repository:
 * a missing one makes the test's import fail, it is never skipped. */
static inline const char *check_test_mesh(const char *rel, char *buf, size_t n) {
  const char *dir = getenv("VOXLOD_TEST_MESHES");
  snprintf(buf, n, "%s/%s", dir && *dir ? dir : VX_TEST_MESHES, rel);
  return buf;
}

/* Path of a bundled mesh in data/ (or $VOXLOD_DATA_DIR). */
static inline const char *check_data_mesh(const char *rel, char *buf, size_t n) {
  const char *dir = getenv("VOXLOD_DATA_DIR");
  snprintf(buf, n, "%s/%s", dir && *dir ? dir : VX_DATA_DIR, rel);
  return buf;
}

#endif
