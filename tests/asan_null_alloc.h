/* SPDX-License-Identifier: Apache-2.0 */
/* asan_null_alloc.h - for tests of the isolated import under AddressSanitizer: a failed
 * allocation in the import child must reach assimp as std::bad_alloc and the texture decoder as
 * NULL (what they get without the sanitizer), not end the child with a report. Include it in one
 * file of the test program. */
#ifndef VOXLOD_TESTS_ASAN_NULL_ALLOC_H
#define VOXLOD_TESTS_ASAN_NULL_ALLOC_H

#if defined(__SANITIZE_ADDRESS__)
#define VX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VX_TEST_ASAN 1
#endif
#endif

#ifdef VX_TEST_ASAN
/* The runtime looks this function up by name: it stays visible (the build hides symbols by
 * default). */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}
#endif

#endif
