// The one-time set by interval sweeps: every byte range becomes a range of positions in one sorted
// list of all range ends (per storage, so ranges of different storages never meet), and three sweeps
// over the items answer, for each access, "which writer of these bytes stands nearest" with a
// segment tree. O(m log m) in accesses m however many items share a buffer.
#include "unit/prune.hpp"
#include "testing.hpp"

#include <algorithm>
#include <bit>

#include "encore/error.hpp"


namespace encore::detail {

namespace {

// Item indices over positions [0, n): raise(l, r, v) makes each position in [l, r) hold the better of
// what it held and v; best(l, r) is the best held anywhere in [l, r) (no_item when nothing is).
// Better: the larger index (Max) or the smaller. A node's tag applies to all of its range and is never
// pushed down, so both operations walk two root paths: O(log n).
template <bool Max> class RangeBest {
 public:
  explicit RangeBest(size_t n) : size_(std::bit_ceil(std::max<size_t>(n, 1))), tag_(2 * size_, empty), sub_(2 * size_, empty) {}

  void raise(size_t l, size_t r, uint32_t item) {
    if (l >= r) return;
    const uint32_t x = Max ? item + 1 : item;
    const size_t a = l + size_, b = r - 1 + size_;
    for (size_t lo = a, hi = b + 1; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) put(lo++, x);
      if (hi & 1) put(--hi, x);
    }
    for (size_t p = a >> 1; p; p >>= 1) sub_[p] = better(sub_[p], x);
    for (size_t p = b >> 1; p; p >>= 1) sub_[p] = better(sub_[p], x);
  }

  uint32_t best(size_t l, size_t r) const {
    if (l >= r) return no_item;
    uint32_t x = empty;
    const size_t a = l + size_, b = r - 1 + size_;
    for (size_t lo = a, hi = b + 1; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) x = better(x, sub_[lo++]);
      if (hi & 1) x = better(x, sub_[--hi]);
    }
    // tags of every node above a chosen one (each lies on the path of leaf a or leaf b)
    for (size_t p = a >> 1; p; p >>= 1) x = better(x, tag_[p]);
    for (size_t p = b >> 1; p; p >>= 1) x = better(x, tag_[p]);
    return Max ? (x == 0 ? no_item : x - 1) : x;
  }

 private:
  static constexpr uint32_t empty = Max ? 0 : no_item;
  static uint32_t better(uint32_t a, uint32_t b) { return Max ? std::max(a, b) : std::min(a, b); }
  void put(size_t node, uint32_t x) {
    tag_[node] = better(tag_[node], x);
    sub_[node] = better(sub_[node], x);
  }
  size_t size_;
  std::vector<uint32_t> tag_, sub_;
};

// One access as ranges of positions: where it reads and where it writes (the same range unless the
// access is empty: then each role has its own position, so an empty range meets no empty range,
// not even its own other role).
struct Span {
  uint32_t rlo, rhi, wlo, whi;
  bool read, write;
};

// A point of the position order: a storage's range ends sort by byte; at one byte, range ends come
// first, then empty ranges (each its own position, so two empty ranges never meet), then range starts.
struct Key {
  uint32_t storage;
  uint64_t byte;
  uint32_t tie;  // 0: a range ends here; 1 + 2 access (+1 to write): an empty range; UINT32_MAX: a range starts here
  auto operator<=>(const Key&) const = default;
};

}  // namespace

// Two positions per access must fit in a uint32_t.
static void check_accesses(size_t m) {
  if (m >= UINT32_MAX / 2 - 1) throw Error("pruning: too many accesses (" + std::to_string(m) + ")");
}

PruneResult prune(std::span<const PruneItem> items) {
  size_t m = 0;
  for (const PruneItem& it : items) m += it.accesses.size();
  check_accesses(m);
  PruneItems flat;
  flat.accesses.reserve(m);
  flat.first.reserve(items.size() + 1);
  flat.volatile_.reserve(items.size());
  for (const PruneItem& it : items) {
    flat.accesses.insert(flat.accesses.end(), it.accesses.begin(), it.accesses.end());
    flat.first.push_back(static_cast<uint32_t>(flat.accesses.size()));
    flat.volatile_.push_back(it.volatile_);
  }
  return prune(flat);
}

PruneResult prune(const PruneItems& items) {
  const size_t n = items.size();
  if (n >= no_item - 1) throw Error("pruning: too many items (" + std::to_string(n) + ")");
  const std::vector<uint32_t>& first = items.first;  // item i's spans: [first[i], first[i+1])
  if (first.size() != n + 1 || first[0] != 0 || first[n] != items.accesses.size())
    throw Error("internal error: pruning's item offsets do not match its accesses");
  const size_t m = first[n];
  check_accesses(m);

  std::vector<Key> keys;
  keys.reserve(2 * m);
  // a range just pushed is not pushed again (unique drops it anyway): a step whose items all touch
  // one buffer sorts two keys, not two per item
  const PruneAccess* last = nullptr;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < first[i + 1] - first[i]; ++k) {
      const PruneAccess& a = items.accesses[first[i] + k];
      if (a.lo < a.hi) {
        if (last && last->storage == a.storage && last->lo == a.lo && last->hi == a.hi) continue;
        last = &a;
        keys.push_back({a.storage, a.lo, UINT32_MAX});
        keys.push_back({a.storage, a.hi, 0});
      } else {
        const uint32_t tie = 1 + 2 * (first[i] + k);
        keys.push_back({a.storage, a.lo, tie});
        keys.push_back({a.storage, a.lo, tie + 1});
      }
    }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto pos = [&](const Key& k) { return static_cast<uint32_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin()); };
  std::vector<Span> spans(m);
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < first[i + 1] - first[i]; ++k) {
      const PruneAccess& a = items.accesses[first[i] + k];
      Span& s = spans[first[i] + k];
      s.read = a.read;
      s.write = a.write;
      if (a.lo < a.hi) {
        s.rlo = s.wlo = pos({a.storage, a.lo, UINT32_MAX});
        s.rhi = s.whi = pos({a.storage, a.hi, 0});
      } else {
        s.rlo = pos({a.storage, a.lo, 1 + 2 * (first[i] + k)});
        s.rhi = s.rlo + 1;
        s.wlo = s.rhi;
        s.whi = s.wlo + 1;
      }
    }
  const size_t positions = keys.size();
  keys = {};

  // Backward sweep: the nearest later writer of what each item reads and of what it writes, and
  // whether it reads what it writes itself (its own writes are the nearest writer at or after it).
  std::vector<uint32_t> later_reader_w(n, no_item), later_writer_w(n, no_item), later_volatile_w(n, no_item);
  std::vector<bool> own(n, false);
  {
    RangeBest<false> writes(positions), volatile_writes(ENCORE_TESTING_IS(prune_like_tinygrad) ? positions : 0);
    for (size_t i = n; i-- > 0;) {
      const uint32_t ii = static_cast<uint32_t>(i);
      for (uint32_t s = first[i]; s < first[i + 1]; ++s) {
        const Span& sp = spans[s];
        if (sp.read) {
          later_reader_w[i] = std::min(later_reader_w[i], writes.best(sp.rlo, sp.rhi));
          if (ENCORE_TESTING_IS(prune_like_tinygrad)) later_volatile_w[i] = std::min(later_volatile_w[i], volatile_writes.best(sp.rlo, sp.rhi));
        }
        if (sp.write) later_writer_w[i] = std::min(later_writer_w[i], writes.best(sp.wlo, sp.whi));
      }
      for (uint32_t s = first[i]; s < first[i + 1]; ++s)
        if (spans[s].write) {
          writes.raise(spans[s].wlo, spans[s].whi, ii);
          if (ENCORE_TESTING_IS(prune_like_tinygrad) && items.volatile_[i]) volatile_writes.raise(spans[s].wlo, spans[s].whi, ii);
        }
      for (uint32_t s = first[i]; s < first[i + 1] && !own[i]; ++s)
        if (spans[s].read && writes.best(spans[s].rlo, spans[s].rhi) == ii) own[i] = true;
    }
  }

  // Forward sweep: the nearest earlier other writer of what each item writes, the latest kept
  // writer of what it reads, and the decision (writers of what it reads are decided already).
  PruneResult res;
  res.one_time.assign(n, false);
  res.why.assign(n, {});
  RangeBest<true> writes(positions), kept_writes(positions);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t ii = static_cast<uint32_t>(i);
    uint32_t earlier_writer = no_item, kept_writer = no_item;
    for (uint32_t s = first[i]; s < first[i + 1]; ++s) {
      const Span& sp = spans[s];
      if (sp.read) {
        const uint32_t w = kept_writes.best(sp.rlo, sp.rhi);
        if (w != no_item && (kept_writer == no_item || w > kept_writer)) kept_writer = w;
      }
      if (sp.write) {
        const uint32_t w = writes.best(sp.wlo, sp.whi);
        if (w != no_item && (earlier_writer == no_item || w > earlier_writer)) earlier_writer = w;
      }
    }
    KeepWhy& why = res.why[i];
    auto broken = [&](KeepReason r, uint32_t other) {
      why.broken |= static_cast<uint8_t>(1u << static_cast<unsigned>(r));
      why.reason = r;
      why.other = other;
    };
    // reasons in reverse order of preference for `other`, so the last one set is kept when alone
    if (kept_writer != no_item) broken(KeepReason::reads_kept_writer, kept_writer);
    if (later_reader_w[i] != no_item) broken(KeepReason::reads_later_write, later_reader_w[i]);
    if (earlier_writer != no_item || later_writer_w[i] != no_item)
      broken(KeepReason::other_writer, earlier_writer != no_item ? earlier_writer : later_writer_w[i]);
    if (own[i]) broken(KeepReason::reads_own_output, ii);
    if (items.volatile_[i]) broken(KeepReason::volatile_, no_item);
    if (std::popcount(why.broken) != 1) {
      why.reason = KeepReason::none;
      why.other = no_item;
    }

    bool one = why.broken == 0;
    // tinygrad's rule: an item is one-time unless it (or a writer of what it reads) depends on the
    // inputs; a later writer counts as it stands before this item is decided
    if (ENCORE_TESTING_IS(prune_like_tinygrad))
      one = !items.volatile_[i] && kept_writer == no_item && later_volatile_w[i] == no_item;
    res.one_time[i] = one;
    for (uint32_t s = first[i]; s < first[i + 1]; ++s)
      if (spans[s].write) {
        writes.raise(spans[s].wlo, spans[s].whi, ii);
        if (!one) kept_writes.raise(spans[s].wlo, spans[s].whi, ii);
      }
  }
  return res;
}

std::vector<bool> one_time_items(std::span<const PruneItem> items) { return prune(items).one_time; }

const char* describe(KeepReason r) {
  switch (r) {
    case KeepReason::none: return "one-time, or kept for more than one reason";
    case KeepReason::volatile_: return "touches an input or uses a variable";
    case KeepReason::reads_own_output:
      return "reads its own output (a read-modify-write): declare encore::out() on the argument if the kernel only writes it";
    case KeepReason::other_writer: return "another item writes the same bytes";
    case KeepReason::reads_later_write: return "reads bytes that a later item in the step writes (a loop-carried dependency)";
    case KeepReason::reads_kept_writer: return "reads bytes written by an item that is itself kept";
  }
  return "unknown reason";
}

}  // namespace encore::detail
