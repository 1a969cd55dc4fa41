// The capture check's alignment of call 0's items with call 1's (src/unit/capture_check.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/capture_check.hpp"

using encore::detail::align_items;
using encore::detail::SeenItem;

namespace {

// Items keyed by letter: "abc" is three items of kernels a, b, c.
std::vector<SeenItem> items(const std::string& keys) {
  std::vector<SeenItem> v(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) v[i].key = static_cast<uint64_t>(keys[i]);
  return v;
}

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

}  // namespace

TEST(CaptureAlign, SameStepPairsEveryItem) {
  EXPECT_EQ(align_items(items("abca"), items("abca")), (Pairs{{0, 0}, {1, 1}, {2, 2}, {3, 3}}));
  EXPECT_TRUE(align_items(items(""), items("ab")).empty());
}

// A lazy initialisation in call 0 that uses a kernel of the step as well: the step is call 0's
// suffix, so the extra leading item stays unpaired.
TEST(CaptureAlign, LazyInitialisationInCallZeroIsSkipped) {
  EXPECT_EQ(align_items(items("aab"), items("ab")), (Pairs{{1, 0}, {2, 1}}));
}

// Work switched on after call 0, at the end or in the middle.
TEST(CaptureAlign, ExtraWorkInCallOneIsSkipped) {
  EXPECT_EQ(align_items(items("ab"), items("abc")), (Pairs{{0, 0}, {1, 1}}));
  EXPECT_EQ(align_items(items("abd"), items("abcd")), (Pairs{{0, 0}, {1, 1}, {2, 3}}));
  // a middle that differs on both sides: the longest common subsequence of the middles
  EXPECT_EQ(align_items(items("axyzb"), items("ayqzb")), (Pairs{{0, 0}, {2, 1}, {3, 3}, {4, 4}}));
}
