#pragma once
// Views of a unit's inputs, made once per input (src/unit/view_cache.cpp).
#include <cstdint>
#include <utility>
#include <vector>
#include "encore/buffer.hpp"

namespace encore::detail {

// Views of recently bound inputs at one place (`count` elements of `dtype` at byte `rel`), so a
// replay that rotates among inputs allocates nothing once each input was seen: up to kMax inputs
// are remembered (then the oldest is replaced). The inputs are held, so a freed input's address can
// never be mistaken for a new one.
struct ViewCache {
  static constexpr size_t kMax = 64;
  std::vector<std::pair<Buffer, Buffer>> slots;
  uint32_t next = 0;
  // `in` itself when the place is all of it, else a cached or new view of it: a reference to `in`
  // or to this cache's copy, good until the next get() (no reference count touched on the replay
  // path's common case, a whole buffer).
  const Buffer& get(const Buffer& in, DType dtype, uint64_t rel, size_t count);
};

}  // namespace encore::detail
