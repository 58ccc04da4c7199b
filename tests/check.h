/* check.h - minimal test harness: always-on assertions that report file:line, a test runner.
 *
 *   static void svo_build_counts_one_voxel(void) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-6); }
 *   int main(void) { RUN(svo_build_counts_one_voxel); return check_summary(); }
 *
 * A test program exits 0 when all checks passed, 1 otherwise, 77 when it skipped itself
 * (CHECK_SKIP), which ctest reports as skipped.
 */
#ifndef VOXLOD_TESTS_CHECK_H
#define VOXLOD_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Ends the whole program as skipped (exit 77) with a reason. */
#define CHECK_SKIP(...)                                                                          \
  do {                                                                                           \
    fprintf(stderr, "SKIP: ");                                                                   \
    fprintf(stderr, __VA_ARGS__);                                                                \
    fprintf(stderr, "\n");                                                                       \
    exit(77);                                                                                    \
  } while (0)

#define RUN(fn)                                                                                  \
  do {                                                                                           \
    int check_before_ = check_failures_;                                                         \
    check_current_ = #fn;                                                                        \
    fn();                                                                                        \
    fprintf(stderr, "%s %s\n", check_failures_ == check_before_ ? "ok  " : "FAIL", #fn);         \
  } while (0)

static inline int check_summary(void) {
  fprintf(stderr, "%d checks, %d failed\n", check_count_, check_failures_);
  return check_failures_ ? 1 : 0;
}

/* Path of a shared mesh, or NULL when ../shared is absent. */
static inline const char *check_shared_mesh(const char *rel, char *buf, size_t n) {
  struct stat st;
  snprintf(buf, n, "%s/%s", VX_SHARED_MESHES, rel);
  return stat(buf, &st) == 0 ? buf : NULL;
}

#endif
