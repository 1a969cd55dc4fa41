// Warnings are printed by default, once per cause and correctly worded (issue 26 item 7): a jit
// whose every call brings a new signature (nothing replays), a jit that drops and captures units
// again and again, and the first captured unit the LRU drops. ENCORE_LOG sets the level; it is read
// once per process, so its off setting runs in a process of its own (meson test "log-off").
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "jit_env.hpp"

using namespace encore_test;

namespace {

JitOptions units(uint32_t max_units) {
  JitOptions o;
  o.enabled = true;
  o.max_units = max_units;
  return o;
}

size_t count(const std::string& s, const std::string& sub) {
  size_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + 1)) ++n;
  return n;
}

bool log_env_is(const char* v) {
  const char* e = std::getenv("ENCORE_LOG");
  return v ? e && std::string(e) == v : !e || !*e;
}

}  // namespace

// Every call a new size: no signature is ever called twice, so nothing replays. One warning says
// so (not "captures": nothing was captured), the LRU drops of warm-up-only slots are info lines.
TEST(LogWarnings, ANewSignatureEveryCallWarnsOnce) {
  if (!log_env_is(nullptr)) GTEST_SKIP() << "runs without ENCORE_LOG";
  Env& e = null_env();
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(8));
  LogCapture logs;
  for (size_t n = 1; n <= 30; ++n) jit(e.dev.alloc<float>(n));
  const std::string text = logs.text();
  EXPECT_EQ(count(text, "warning: "), 1u) << text;
  EXPECT_TRUE(contains(text, "warning: TinyJit: the last 9 calls each brought an input signature not seen before (now f32[9] on NULL)")) << text;
  EXPECT_TRUE(contains(text, "none of them replayed")) << text;
  EXPECT_FALSE(contains(text, "captures within")) << text;
  EXPECT_TRUE(contains(text, "info: TinyJit: 8 units held (max_units): dropped the least recently used, for f32[1] on NULL (never captured)")) << text;
}

// Signatures that come back after their unit was dropped: each warms up and captures again. The
// warning counts new signatures and the calls that did replay.
TEST(LogWarnings, ThrashingCountsSignaturesAndReplays) {
  if (!log_env_is(nullptr)) GTEST_SKIP() << "runs without ENCORE_LOG";
  Env& e = null_env();
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(2));
  LogCapture logs;
  Buffer a = e.dev.alloc<float>(8), b = e.dev.alloc<float>(16), c = e.dev.alloc<float>(24);
  for (int round = 0; round < 4; ++round)
    for (Buffer* x : {&a, &b, &c})
      for (int i = 0; i < 3; ++i) jit(*x);  // warm-up, capture, one replay
  const std::string text = logs.text();
  EXPECT_EQ(count(text, "warning: "), 1u) << text;
  EXPECT_TRUE(contains(text, "warning: TinyJit: 3 new input signatures within 7 calls, more than max_units (2)")) << text;
  EXPECT_TRUE(contains(text, "(2 of those calls replayed)")) << text;
  EXPECT_FALSE(contains(text, "captures within")) << text;
}

// A captured unit dropped by the LRU, without thrashing: one warning, later drops at info level.
TEST(LogWarnings, TheFirstDroppedCapturedUnitWarns) {
  if (!log_env_is(nullptr)) GTEST_SKIP() << "runs without ENCORE_LOG";
  Env& e = null_env();
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(2));
  LogCapture logs;
  Buffer a = e.dev.alloc<float>(8), b = e.dev.alloc<float>(16), c = e.dev.alloc<float>(24);
  for (Buffer* x : {&a, &b, &c, &a, &b})
    for (int i = 0; i < 120; ++i) jit(*x);  // new signatures far apart: no thrashing
  const std::string text = logs.text();
  EXPECT_EQ(count(text, "warning: "), 1u) << text;
  EXPECT_TRUE(contains(text, "warning: TinyJit: 2 units held (max_units): dropped the least recently used, for f32[8] on NULL (captured, 120 calls")) << text;
  EXPECT_EQ(count(text, "info: TinyJit: 2 units held"), 2u) << text;  // b's, then c's unit
  EXPECT_FALSE(contains(text, "new input signatures")) << text;
}

// Without a sink, warnings reach stderr by default (they used to need ENCORE_DEBUG=1).
TEST(LogWarnings, PrintedToStderrByDefault) {
  if (!log_env_is(nullptr) || std::getenv("ENCORE_DEBUG")) GTEST_SKIP() << "runs without ENCORE_LOG and ENCORE_DEBUG";
  Env& e = null_env();
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(4));
  testing::internal::CaptureStderr();
  for (size_t n = 1; n <= 12; ++n) jit(e.dev.alloc<float>(n));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "encore: warning: TinyJit: the last 5 calls each brought"), 1u) << err;
  EXPECT_FALSE(contains(err, "info")) << "info lines are not printed by default: " << err;
}

// ENCORE_LOG=off (meson test "log-off"): nothing on stderr, nothing to a sink either.
TEST(LogLevelOff, NothingIsPrinted) {
  if (!log_env_is("off")) GTEST_SKIP() << "runs with ENCORE_LOG=off (meson test log-off)";
  Env& e = null_env();
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(4));
  testing::internal::CaptureStderr();
  for (size_t n = 1; n <= 12; ++n) jit(e.dev.alloc<float>(n));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  LogCapture logs;
  TinyJit again([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, units(4));
  for (size_t n = 1; n <= 12; ++n) again(e.dev.alloc<float>(n));
  EXPECT_EQ(logs.text(), "");
}
