// Trace timestamps (src/trace/profile.cpp): device nanoseconds go onto the host clock by an integer
// difference first. As doubles, timestamps near 1.8e18 ns (since the epoch, as some drivers count)
// keep only ~256 ns, and an item's start landed before the previous item's end.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/json_text.hpp"
#include "trace/trace.hpp"

namespace {

using encore::detail::device_to_host_us;

TEST(ProfileClock, DeviceTimesNearTheEpochKeepNanoseconds) {
  const uint64_t ref = 1'800'000'000'000'000'123ull;  // the marker's device time
  const double host = 12'345'678.5;                   // the host time then, in µs
  EXPECT_DOUBLE_EQ(device_to_host_us(ref, ref, host), host);
  EXPECT_DOUBLE_EQ(device_to_host_us(ref - 1000, ref, host), host - 1.0) << "items run before the marker";
  // back-to-back items 1 ns apart, long before the marker: never out of order
  uint64_t t = ref - 5'000'000'000ull;
  double prev_end = -1e300;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t start = t + 1, end = t + 1 + 37;
    const double s = device_to_host_us(start, ref, host), e = device_to_host_us(end, ref, host);
    ASSERT_GT(s, prev_end) << "item " << i;
    ASSERT_NEAR(e - s, 0.037, 1e-6) << "item " << i;
    prev_end = e;
    t = end;
  }
  EXPECT_NEAR(device_to_host_us(ref + 1, ref, host) - host, 0.001, 1e-6);
}

// The one JSON escaper (core/json_text.hpp), used by the trace and the workload files alike.
TEST(JsonText, EscapesQuotesBackslashesAndControlBytes) {
  using encore::detail::json_quoted;
  EXPECT_EQ(json_quoted("kernel \"add\""), "\"kernel \\\"add\\\"\"");
  EXPECT_EQ(json_quoted("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(json_quoted("x\ny\tz\r"), "\"x\\ny\\tz\\r\"") << "sources stay readable";
  EXPECT_EQ(json_quoted(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_quoted("\xc3\xa9 \x7f"), "\"\xc3\xa9 \x7f\"") << "bytes from 0x20 up pass as they are (UTF-8 included)";
  EXPECT_EQ(json_quoted(""), "\"\"");
}

}  // namespace
