#pragma once
// The bound items' per-kind data (BoundItem::payload), made by the kinds' binds in one arena owned
// by the Binding: in bind order, so a replay that walks the items reads their payloads front to
// back, and at stable addresses, so a bound item points at its own. Freed with the Binding.
//   KernelBound& k = b.payloads.make<KernelBound>();
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace encore::detail {

class Payloads {
 public:
  Payloads() = default;
  Payloads(const Payloads&) = delete;
  Payloads& operator=(const Payloads&) = delete;
  ~Payloads() {
    for (size_t i = drops_.size(); i-- > 0;) drops_[i].drop(drops_[i].at);
  }

  template <class T, class... A> T& make(A&&... a) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "a payload's alignment is at most max_align_t");
    if constexpr (!std::is_trivially_destructible_v<T>)  // room first: no throw once the object exists
      if (drops_.size() == drops_.capacity()) drops_.reserve(drops_.empty() ? 16 : 2 * drops_.size());
    T* t = new (take(sizeof(T), alignof(T))) T(std::forward<A>(a)...);
    if constexpr (!std::is_trivially_destructible_v<T>) drops_.push_back({t, [](void* q) { static_cast<T*>(q)->~T(); }});
    return *t;
  }

 private:
  void* take(size_t n, size_t align) {
    used_ = (used_ + align - 1) & ~(align - 1);
    if (chunks_.empty() || used_ + n > cap_) {
      cap_ = n > chunk ? n : chunk;
      chunks_.push_back(std::make_unique<std::max_align_t[]>((cap_ + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t)));
      used_ = 0;
    }
    void* p = reinterpret_cast<unsigned char*>(chunks_.back().get()) + used_;
    used_ += n;
    return p;
  }

  static constexpr size_t chunk = 16 * 1024;
  struct Drop {
    void* at;
    void (*drop)(void*);
  };
  std::vector<std::unique_ptr<std::max_align_t[]>> chunks_;
  size_t used_ = 0, cap_ = 0;
  std::vector<Drop> drops_;
};

}  // namespace encore::detail
