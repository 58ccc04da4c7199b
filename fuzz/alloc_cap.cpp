// SPDX-License-Identifier: Apache-2.0
/* alloc_cap.cpp - operator new for fuzz_mesh that fails the way it fails on a real machine.
 *
 * assimp sizes arrays from counts in the file before it reads what they count. In the library a
 * mesh is imported in a child process under an address-space limit (formats/import_isolated.c):
 * an allocation past it throws std::bad_alloc, which assimp turns into an import error. Under
 * ASan an operator new that cannot allocate aborts instead (the sanitizer cannot throw), so a
 * count the header checks let through would end the fuzzing run as a false crash. These
 * replacements allocate with malloc (still ASan's: overflows and use after free are caught) and
 * throw when it returns NULL, which it does past max_allocation_size_mb (fuzz/run.sh). */
#include <cstdlib>
#include <new>

static void *alloc_or_throw(std::size_t n) {
  void *p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

static void *alloc_aligned_or_throw(std::size_t n, std::align_val_t a) {
  void *p = nullptr;
  std::size_t al = static_cast<std::size_t>(a);
  if (al < sizeof(void *)) al = sizeof(void *);
  if (posix_memalign(&p, al, n ? n : 1) != 0) throw std::bad_alloc();
  return p;
}

void *operator new(std::size_t n) { return alloc_or_throw(n); }
void *operator new[](std::size_t n) { return alloc_or_throw(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void *operator new(std::size_t n, std::align_val_t a) { return alloc_aligned_or_throw(n, a); }
void *operator new[](std::size_t n, std::align_val_t a) { return alloc_aligned_or_throw(n, a); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
