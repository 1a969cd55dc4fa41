// Buffer::copyout_async (issue 26 item 8): a read-back that does not block. The bytes are in the
// destination once the event completes; destroying the event first waits for the read (so the
// destination may be freed after it); inside a capture it is refused like copyout.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "jit_env.hpp"

using namespace encore_test;

class CopyoutAsync : public OnDevices {};

TEST_P(CopyoutAsync, FollowsQueuedWorkAndCompletes) {
  Env& e = env();
  const size_t n = size_t(1) << 20;
  Buffer x = make(e.dev, seq(n, 0.f));
  e.dev.launch(e.addk, {n}, {}, x, 3);  // queued before the read: the read sees its result
  std::vector<float> host(n, -1.f);
  encore::Event ev = x.copyout_async(std::span<float>(host));
  ev.wait();
  EXPECT_TRUE(ev.done());
  const bool computes = !e.dev.is_null();
  EXPECT_EQ(host[0], computes ? 3.f : 0.f);
  EXPECT_EQ(host[n - 1], static_cast<float>(n - 1) + (computes ? 3.f : 0.f));

  // a part, at an element offset, and the bytes form
  std::vector<float> part(4, -1.f);
  x.copyout_async(std::span<float>(part), 10).wait();
  EXPECT_EQ(part[0], 10.f + (computes ? 3.f : 0.f));
  std::vector<float> raw(2);
  x.copyout_async_bytes(raw.data(), 8, 4 * sizeof(float)).wait();
  EXPECT_EQ(raw[1], 5.f + (computes ? 3.f : 0.f));
}

// The lifetime rule: the Event owns the read. Dropping it before completion waits for the read, so
// memory freed after the Event was destroyed is never written; the buffer's storage is kept alive.
TEST_P(CopyoutAsync, DestroyingTheEventFirstWaitsForTheRead) {
  Env& e = env();
  const size_t n = size_t(4) << 20;
  std::weak_ptr<encore::detail::BufferImpl> storage;
  for (int round = 0; round < 3; ++round) {
    auto host = std::make_unique<std::vector<float>>(n, -1.f);
    {
      Buffer x = make(e.dev, seq(n, static_cast<float>(round)));
      storage = x.shared_impl();
      for (int i = 0; i < 4; ++i) e.dev.launch(e.addk, {n}, {}, x, 1);  // some work ahead of the read
      encore::Event ev = x.copyout_async(std::span<float>(*host));
      x = Buffer();                          // the handle goes first: the read keeps the storage
      if (ev) {
        EXPECT_FALSE(storage.expired()) << "a read in flight keeps the storage";
      }
    }                                        // the event goes: waits for the read
    EXPECT_TRUE(storage.expired()) << "nothing holds the storage once the read is over";
    EXPECT_EQ((*host)[n - 1], static_cast<float>(n - 1 + round) + (e.dev.is_null() ? 0.f : 4.f));
    host.reset();                            // freed after the event: never written again
  }
}

TEST_P(CopyoutAsync, RefusedInsideACaptureLikeCopyout) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(16);
  std::vector<float> host(16);
  {
    encore::Capture cap;
    e.dev.launch(e.addk, {16}, {}, x, 1);
    expect_jit_error([&] { (void)x.copyout_async(std::span<float>(host)); }, {"copyout_async of", "during a capture", "allow_copyout"});
  }
  {
    encore::CaptureOptions allow;
    allow.allow_copyout = true;
    encore::Capture cap({}, allow);
    e.dev.launch(e.addk, {16}, {}, x, 1);
    EXPECT_NO_THROW(x.copyout_async(std::span<float>(host)).wait());
  }
  TinyJit jit([&](Buffer b) {
    e.dev.launch(e.addk, {16}, {}, b, 1);
    (void)b.copyout_async(std::span<float>(host));
  });
  if (!jit.options().enabled) GTEST_SKIP() << "ENCORE_JIT=0";
  jit(x);  // the warm-up may read (nothing of it is replayed)
  expect_jit_error([&] { jit(x); }, {"copyout_async of", "during a capture"});
}

TEST_P(CopyoutAsync, Misuse) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(16);
  std::vector<float> small(8), big(16);
  EXPECT_THROW((void)x.copyout_async(std::span<float>(small)), encore::ArgumentError);  // the whole buffer: sizes must match
  EXPECT_THROW((void)x.copyout_async(std::span<float>(big), 1), encore::ArgumentError);  // does not fit
  std::vector<int> ints(16);
  EXPECT_THROW((void)x.copyout_async(std::span<int>(ints)), encore::ArgumentError);     // another element type
  EXPECT_THROW((void)x.copyout_async_bytes(nullptr, 64, 0), encore::ArgumentError);
  EXPECT_THROW((void)Buffer().copyout_async_bytes(big.data(), 64), encore::ArgumentError);
}

INSTANTIATE_TEST_SUITE_P(Devices, CopyoutAsync, ::testing::Values("NULL", "CL"));
