#include "unit/view_cache.hpp"

#include "core/buffer_impl.hpp"

namespace encore::detail {

Buffer ViewCache::get(const Buffer& in, DType dtype, uint64_t rel, size_t count) {
  if (rel == 0 && in.dtype() == dtype && in.count() == count) return in;
  for (auto& [k, v] : slots)
    if (k == in) return v;
  // the captured view passed view()'s checks, or is a partial transfer's region (no alignment needed)
  Buffer v = region(in, dtype, rel, count);
  if (slots.size() < kMax) {
    slots.emplace_back(in, v);
  } else {
    slots[next] = {in, v};
    next = static_cast<uint32_t>((next + 1) % kMax);
  }
  return v;
}

}  // namespace encore::detail
