#pragma once
// The growable C option structs of encore.h: each starts with its size (a size_t), and fields are
// only ever appended, each at or after the end of the previous release's struct. So the bytes a
// caller passes are a prefix of this release's struct: read them over the defaults.
#include <cstddef>
#include <cstring>
#include <string>

#include "encore/error.hpp"

namespace encore::capi {

// `sizes`: the struct's size in every release that had it, oldest first; the last is this one's.
// how: where the caller's size comes from (default: the struct's _init and _default()).
template <size_t N> void check_size(size_t size, const size_t (&sizes)[N], const char* what, const char* how = nullptr) {
  for (size_t s : sizes)
    if (size == s) return;
  std::string known;
  for (size_t i = 0; i + 1 < N; ++i) known += (i ? ", " : " (or an earlier release's: ") + std::to_string(sizes[i]) + (i + 2 == N ? ")" : "");
  throw ArgumentError(std::string(what) + ".size is " + std::to_string(size) + ": expected sizeof(" + what + ") = " +
                      std::to_string(sizes[N - 1]) + known + "; " +
                      (how ? std::string(how) : "set it with " + std::string(what) + "_init or take " + what + "_default()"));
}

// *p as this release's T: the caller's `size` bytes over `dflt`, size then set to sizeof(T).
template <class T, size_t N> T read_sized(const T* p, const size_t (&sizes)[N], T dflt, const char* what) {
  static_assert(offsetof(T, size) == 0, "an option struct starts with its size");
  if (!p) return dflt;
  size_t size = 0;
  std::memcpy(&size, p, sizeof size);
  check_size(size, sizes, what);
  std::memcpy(static_cast<void*>(&dflt), p, size);
  dflt.size = sizeof(T);
  return dflt;
}

// Writes the first `size` bytes of `dflt` to *p (a caller's struct of that size), size set.
template <class T, size_t N> void write_sized(T* p, size_t size, const size_t (&sizes)[N], T dflt, const char* what, const char* how = nullptr) {
  check_size(size, sizes, what, how);
  dflt.size = size;
  std::memcpy(static_cast<void*>(p), &dflt, size);
}

}  // namespace encore::capi
