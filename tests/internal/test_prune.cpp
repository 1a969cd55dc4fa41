// The one-time set (src/unit/prune.cpp) against a brute-force version written from the rule text
// (DESIGN rule 2) on random item lists, and the keep reasons against their definitions.
#include <gtest/gtest.h>
#include "testing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include "encore/error.hpp"
#include "unit/prune.hpp"

namespace {

using encore::detail::KeepReason;
using encore::detail::KeepWhy;
using encore::detail::no_item;
using encore::detail::PruneAccess;
using encore::detail::PruneItem;

bool meets(const PruneAccess& a, const PruneAccess& b) { return a.storage == b.storage && b.lo < a.hi && a.lo < b.hi; }

// Rule 2 by definition: every pair of accesses compared, violators removed until nothing changes.
std::vector<bool> brute_one_time(const std::vector<PruneItem>& items, bool tinygrad) {
  const size_t n = items.size();
  std::vector<bool> one(n);
  for (size_t i = 0; i < n; ++i) one[i] = !items[i].volatile_;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (!one[i]) continue;
      bool ok = true;
      for (const PruneAccess& a : items[i].accesses)
        for (size_t j = 0; j < n && ok; ++j)
          for (const PruneAccess& b : items[j].accesses) {
            if (!b.write || !meets(a, b)) continue;
            if (tinygrad) {
              // tinygrad's rule as the mutation implements it: a writer of what i reads must be
              // one-time (earlier writers as decided, later ones as not volatile)
              if (a.read && j != i && (j < i ? !one[j] : items[j].volatile_)) ok = false;
              continue;
            }
            if (a.read && (j >= i || !one[j])) ok = false;  // (b)
            if (a.write && j != i) ok = false;              // (c)
          }
      if (!ok) {
        one[i] = false;
        changed = true;
      }
    }
  }
  return one;
}

// The keep reasons by definition, given the one-time set.
std::vector<KeepWhy> brute_why(const std::vector<PruneItem>& items, const std::vector<bool>& one) {
  const size_t n = items.size();
  std::vector<KeepWhy> why(n);
  for (size_t i = 0; i < n; ++i) {
    bool own = false;
    uint32_t earlier_other = no_item, later_other = no_item, later_w = no_item, kept_w = no_item;
    for (const PruneAccess& a : items[i].accesses)
      for (size_t j = 0; j < n; ++j)
        for (const PruneAccess& b : items[j].accesses) {
          if (!b.write || !meets(a, b)) continue;
          const uint32_t jj = static_cast<uint32_t>(j);
          if (a.read && j == i) own = true;
          if (a.read && j > i) later_w = std::min(later_w, jj);
          if (a.read && j < i && !one[j] && (kept_w == no_item || jj > kept_w)) kept_w = jj;
          if (a.write && j < i && (earlier_other == no_item || jj > earlier_other)) earlier_other = jj;
          if (a.write && j > i) later_other = std::min(later_other, jj);
        }
    std::vector<std::pair<KeepReason, uint32_t>> broken;
    if (items[i].volatile_) broken.push_back({KeepReason::volatile_, no_item});
    if (own) broken.push_back({KeepReason::reads_own_output, static_cast<uint32_t>(i)});
    if (earlier_other != no_item || later_other != no_item)
      broken.push_back({KeepReason::other_writer, earlier_other != no_item ? earlier_other : later_other});
    if (later_w != no_item) broken.push_back({KeepReason::reads_later_write, later_w});
    if (kept_w != no_item) broken.push_back({KeepReason::reads_kept_writer, kept_w});
    for (auto& [r, o] : broken) why[i].broken |= static_cast<uint8_t>(1u << static_cast<unsigned>(r));
    if (broken.size() == 1) why[i] = {why[i].broken, broken[0].first, broken[0].second};
  }
  return why;
}

// Random items over a few storages of 64 bytes: ranges overlap often, some are empty, some items
// read only (constant tables), write only, or both, and a few are volatile.
std::vector<PruneItem> random_items(std::mt19937_64& rng) {
  const size_t n = rng() % 40;
  const uint32_t storages = 1 + static_cast<uint32_t>(rng() % 4);
  std::vector<PruneItem> items(n);
  for (PruneItem& it : items) {
    it.volatile_ = rng() % 8 == 0;
    for (size_t k = rng() % 4; k > 0; --k) {
      PruneAccess a{};
      a.storage = static_cast<uint32_t>(rng() % storages) * 7 + 3;  // sparse ids
      a.lo = rng() % 64;
      const uint64_t len = rng() % 6 == 0 ? 0 : rng() % 3 == 0 ? 64 : 1 + rng() % 24;
      a.hi = a.lo + len;
      switch (rng() % 4) {
        case 0: a.read = true; break;
        case 1: a.write = true; break;
        case 2: a.read = a.write = true; break;
        default: a.read = rng() % 2; a.write = !a.read; break;
      }
      it.accesses.push_back(a);
    }
  }
  return items;
}

std::string bits(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += b ? '1' : '0';
  return s;
}

std::string dump(const std::vector<PruneItem>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    s += "\n  item " + std::to_string(i) + (items[i].volatile_ ? " volatile:" : ":");
    for (const PruneAccess& a : items[i].accesses)
      s += " s" + std::to_string(a.storage) + "[" + std::to_string(a.lo) + "," + std::to_string(a.hi) + ")" + (a.read ? "r" : "") +
           (a.write ? "w" : "");
  }
  return s;
}

struct RestoreFlag {
  bool& f;
  ~RestoreFlag() { f = false; }
};

void check_seeds(bool tinygrad, int seeds) {
  int kept_alone = 0, one_time = 0, kept = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<PruneItem> items = random_items(rng);
    const std::vector<bool> expect = brute_one_time(items, tinygrad);
    const encore::detail::PruneResult got = encore::detail::prune(items);
    ASSERT_EQ(bits(got.one_time), bits(expect)) << "seed " << seed << dump(items);
    ASSERT_EQ(encore::detail::one_time_items(items), got.one_time) << "seed " << seed;
    const std::vector<KeepWhy> why = brute_why(items, got.one_time);
    for (size_t i = 0; i < items.size(); ++i) {
      ASSERT_EQ(got.why[i].broken, why[i].broken) << "seed " << seed << " item " << i << dump(items);
      ASSERT_EQ(got.why[i].reason, why[i].reason) << "seed " << seed << " item " << i;
      ASSERT_EQ(got.why[i].other, why[i].other) << "seed " << seed << " item " << i;
      if (!tinygrad) {
        ASSERT_EQ(got.one_time[i], got.why[i].broken == 0) << "seed " << seed << " item " << i;
      }
      kept_alone += got.why[i].reason != KeepReason::none;
      one_time += got.one_time[i];
      kept += !got.one_time[i];
    }
  }
  // the generator reaches every outcome often (else the comparison proves little)
  EXPECT_GT(one_time, seeds / 2);
  EXPECT_GT(kept, seeds / 2);
  EXPECT_GT(kept_alone, seeds / 4);
}

int seeds_from_env(int dflt) {
  const char* s = std::getenv("ENCORE_PROPERTY_SEEDS");
  return s && std::atoi(s) > 0 ? std::atoi(s) : dflt;
}

}  // namespace

TEST(Prune, SweepEqualsBruteForceOnRandomItems) { check_seeds(false, seeds_from_env(3000)); }

TEST(Prune, SweepEqualsBruteForceUnderTinygradMutation) {
  encore::testing::prune_like_tinygrad = true;
  RestoreFlag restore{encore::testing::prune_like_tinygrad};
  check_seeds(true, seeds_from_env(3000) / 3);
}

TEST(Prune, EveryReasonIsReachedAlone) {
  int seen[6] = {};
  for (int seed = 0; seed < 3000; ++seed) {
    std::mt19937_64 rng(seed);
    for (const KeepWhy& w : encore::detail::prune(random_items(rng)).why) ++seen[static_cast<int>(w.reason)];
  }
  for (int r = 1; r < 6; ++r) EXPECT_GT(seen[r], 10) << "reason " << encore::detail::describe(KeepReason(r));
}

// Empty ranges meet a range only strictly inside it, and never each other (as the rule text's
// "lo < other.hi && other.lo < hi" says).
TEST(Prune, EmptyRanges) {
  std::vector<PruneItem> items(3);
  items[0].accesses = {{1, 8, 8, false, true}};   // empty write at 8
  items[1].accesses = {{1, 8, 8, true, false}};   // empty read at 8: meets no other empty range
  items[2].accesses = {{1, 0, 8, true, false}};   // ends at 8: does not contain it
  EXPECT_EQ(bits(encore::detail::one_time_items(items)), "111");
  items.push_back({{{1, 4, 12, true, false}}});   // strictly contains 8: reads item 0's write
  items.push_back({{{1, 8, 8, false, true}}});    // a second empty write at 8: meets only item 3
  EXPECT_EQ(bits(encore::detail::one_time_items(items)), "11101");
  const auto why = encore::detail::prune(items).why;
  EXPECT_EQ(why[3].reason, KeepReason::reads_later_write);
  EXPECT_EQ(why[3].other, 4u);
  // an empty read-write access does not read its own write
  items.push_back({{{1, 20, 20, true, true}}});
  EXPECT_EQ(bits(encore::detail::one_time_items(items)), "111011");
}

// The planner's form (one array of accesses, each item's offset into it; the list of items above is
// turned into it, so the random tests check it too) refuses offsets that do not match its accesses
// before it reads any.
TEST(Prune, FlatItemsWithOffsetsThatMissAnAccessAreRefused) {
  encore::detail::PruneItems flat;
  flat.accesses = {{0, 0, 64, false, true}, {1, 0, 64, false, true}, {0, 0, 32, true, false}};
  flat.first = {0, 2, 3};
  flat.volatile_ = {0, 0};
  EXPECT_EQ(bits(encore::detail::prune(flat).one_time), "11");  // item 1 reads only what one-time item 0 wrote
  flat.first.back() = 2;  // three accesses, the last item's said to end at the second
  try {
    encore::detail::prune(flat);
    ADD_FAILURE() << "offsets that miss an access were taken";
  } catch (const encore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("offsets do not match"), std::string::npos) << e.what();
  }
}

// Issue 8 item 12: a constant table whose parameter is not const defaults to inout.
TEST(Prune, ExplainsATableKernelThatReadsItsOwnOutput) {
  std::vector<PruneItem> items(3);
  items[0].accesses = {{0, 0, 256, true, true}};  // fill_table(table): inout by default
  items[1].accesses = {{0, 0, 256, true, false}, {1, 0, 64, false, true}};  // use(table, x)
  items[1].volatile_ = true;
  items[2].accesses = {{2, 0, 64, false, true}};  // a real one-time item
  const auto r = encore::detail::prune(items);
  EXPECT_EQ(bits(r.one_time), "001");
  EXPECT_EQ(r.why[0].reason, KeepReason::reads_own_output);
  EXPECT_EQ(r.why[0].other, 0u);
  EXPECT_NE(std::string(encore::detail::describe(r.why[0].reason)).find("encore::out()"), std::string::npos);
  // volatile, and reads the kept table: two reasons, so none is singled out
  EXPECT_EQ(r.why[1].broken, (1 << int(KeepReason::volatile_)) | (1 << int(KeepReason::reads_kept_writer)));
  EXPECT_EQ(r.why[1].reason, KeepReason::none);
  EXPECT_EQ(r.why[2].reason, KeepReason::none);
  EXPECT_EQ(r.why[2].broken, 0);
  items[0].accesses[0].read = false;  // declared encore::out(): now one-time
  EXPECT_EQ(bits(encore::detail::one_time_items(items)), "101");
}

TEST(Prune, ExplainsAChainBehindAKeptWriter) {
  std::vector<PruneItem> items(3);
  items[0].accesses = {{0, 0, 64, false, true}, {1, 0, 64, false, true}};
  items[1].accesses = {{0, 0, 64, false, true}};  // another writer of storage 0: both kept
  items[2].accesses = {{0, 0, 32, true, false}, {2, 0, 64, false, true}};
  const auto r = encore::detail::prune(items);
  EXPECT_EQ(bits(r.one_time), "000");
  EXPECT_EQ(r.why[0].reason, KeepReason::other_writer);
  EXPECT_EQ(r.why[0].other, 1u);
  EXPECT_EQ(r.why[1].reason, KeepReason::other_writer);
  EXPECT_EQ(r.why[1].other, 0u);
  EXPECT_EQ(r.why[2].reason, KeepReason::reads_kept_writer);
  EXPECT_EQ(r.why[2].other, 1u);
}

// Issue 8 item 14: every item touching one buffer was quadratic (20,000 items: 8.8 s on a capture).
// 200,000 inout items now take well under a second; the bound here is loose for slow machines and
// sanitizers, and far below what a quadratic pass needs (hours).
TEST(Prune, ManyItemsOnOneBufferAreNotQuadratic) {
  const size_t n = 200000;
  std::vector<PruneItem> items(n);
  for (size_t i = 0; i < n; ++i) items[i].accesses = {{5, 0, 4096, true, true}, {static_cast<uint32_t>(6 + i), 0, 64, false, true}};
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = encore::detail::prune(items);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(std::count(r.one_time.begin(), r.one_time.end(), true), 0);
  EXPECT_EQ(r.why[0].broken, (1 << int(KeepReason::reads_own_output)) | (1 << int(KeepReason::other_writer)) |
                                 (1 << int(KeepReason::reads_later_write)));
  EXPECT_EQ(r.why[n - 1].broken, (1 << int(KeepReason::reads_own_output)) | (1 << int(KeepReason::other_writer)) |
                                     (1 << int(KeepReason::reads_kept_writer)));
  EXPECT_LT(s, 20.0);
  std::printf("[prune] %zu items on one buffer: %.3f s\n", n, s);
}
