// Options that are not implemented must say so, not silently do nothing.
#include <gtest/gtest.h>

#include "encore/encore.hpp"

TEST(UnitOptions, BatchIsRejectedClearly) {
  encore::Device dev = encore::Device::open("NULL");
  encore::Kernel k = dev.compile("__kernel void inc1(__global float* x) { x[get_global_id(0)] += 1; }").kernel("inc1");
  encore::Buffer x = dev.alloc<float>(64);
  encore::JitOptions o;
  o.batch = true;
  auto jit = encore::TinyJit([&](const encore::Buffer& b) { dev.launch(k, {64}, {}, b); }, o);
  jit(x);
  try {
    jit(x);
    ADD_FAILURE() << "batch=true must be a JitError";
  } catch (const encore::JitError& e) {
    EXPECT_NE(std::string(e.what()).find("not implemented"), std::string::npos) << e.what();
  }
  // the jit stays usable: the failed capture did not count, and the next call retries it (and
  // fails the same clear way, not with a stale half-built unit)
  EXPECT_EQ(jit.calls(), 1u);
  EXPECT_FALSE(jit.unit());
  EXPECT_THROW(jit(x), encore::JitError);
  EXPECT_EQ(jit.calls(), 1u);
  // reset() starts over; without batch the same callable captures and replays
  auto plain = encore::TinyJit([&](const encore::Buffer& b) { dev.launch(k, {64}, {}, b); }, encore::JitOptions{});
  for (int i = 0; i < 3; ++i) plain(x);
  EXPECT_EQ(plain.calls(), 3u);
  EXPECT_TRUE(plain.unit());
  jit.reset();
  EXPECT_EQ(jit.calls(), 0u);
  jit(x);
  EXPECT_EQ(jit.calls(), 1u);
}
