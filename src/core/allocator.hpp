#pragma once
// The per-device cache of freed allocations by size class (src/core/allocator.cpp).
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>
#include "encore/device.hpp"
#include "core/device_impl.hpp"

namespace encore::detail {

class Allocator {
 public:
  explicit Allocator(DeviceImpl* dev) : dev_(dev) {}
  ~Allocator();
  // Returns a root handle of at least `bytes` and the bytes it really holds.
  NativeMem* alloc(size_t bytes, size_t* got);
  void free(NativeMem* mem, size_t bytes) noexcept;
  void release_cache() noexcept;
  AllocatorStats stats() const;
  static size_t size_class(size_t bytes);

 private:
  DeviceImpl* dev_;
  mutable std::mutex mu_;
  // per size class, its free allocations (most recently freed last, reused first): a vector
  // keeps its capacity, so a steady alloc/free loop allocates no host memory (a multimap made
  // and freed a node each time)
  std::unordered_map<size_t, std::vector<NativeMem*>> cache_;
  AllocatorStats st_;
};

}  // namespace encore::detail
