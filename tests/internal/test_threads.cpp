// Threads*: work issued from several threads at once on one device. CI runs this suite under
// ThreadSanitizer (.ci/run); issue 8 item 10 was a lazy allocation read outside its lock.
// The device is the default one (ENCORE_DEVICE, else OpenCL, else NULL).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"
#include "core/buffer_impl.hpp"

namespace {

using encore::Buffer;
using encore::Device;

Device default_device() {
  const char* env = std::getenv("ENCORE_DEVICE");
  if ((env && *env) || !Device::list().empty()) return Device::open();
  return Device::open("NULL");
}

// Runs body(t) on `threads` threads started together; rethrows nothing: failures are gtest's.
void together(int threads, const std::function<void(int)>& body) {
  std::barrier start(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  for (std::thread& t : ts) t.join();
}

const char* kSrc = R"(
__kernel void th_lo(__global float* b, float v) { size_t i = get_global_id(0); b[i] = v + (float)i; }
__kernel void th_hi(__global float* b, float v, uint off) { size_t i = get_global_id(0) + off; b[i] = v + (float)i; }
__kernel void th_scale(__global const float* x, __global float* y, float a) { size_t i = get_global_id(0); y[i] = a * x[i]; }
)";

class Threads : public ::testing::Test {
 protected:
  void SetUp() override {
    dev = default_device();
    prog = dev.compile(kSrc + std::string("// ") + encore_test::unique_token());
  }
  bool computes() const { return !dev.is_null(); }
  Device dev;
  encore::Program prog;
};

// Issue 8 item 10: two threads launch different kernels on one lazily allocated buffer (each writes
// its own half), so both allocate it at once; also through one lazily made view.
TEST_F(Threads, TwoKernelsOnOneLazilyAllocatedBuffer) {
  encore::Kernel lo = prog.kernel("th_lo"), hi = prog.kernel("th_hi");
  constexpr uint32_t half = 256;
  for (int round = 0; round < 40; ++round) {
    Buffer b = dev.alloc<float>(2 * half);
    Buffer v = b.view(0, 2 * half - 32);  // a view covering both halves' starts: made lazily too
    ASSERT_FALSE(b.allocated());
    together(2, [&](int t) {
      if (t == 0) dev.launch(lo, {size_t{half}}, {}, round % 2 ? v : b, float(round));
      else dev.launch(hi, {size_t{half - 32}}, {}, round % 2 ? v : b, float(round), half);
    });
    ASSERT_TRUE(b.allocated());
    if (!computes()) continue;
    std::vector<float> got = b.copyout<float>();
    for (uint32_t i = 0; i < 2 * half - 32; ++i) ASSERT_EQ(got[i], float(round) + float(i)) << "round " << round << " element " << i;
  }
}

TEST_F(Threads, ConcurrentEagerLaunchesOnOneDevice) {
  encore::Kernel scale = prog.kernel("th_scale");
  constexpr int threads = 4, launches = 50;
  constexpr size_t n = 1024;
  std::vector<Buffer> x(threads), y(threads);
  for (int t = 0; t < threads; ++t) {
    x[t] = dev.alloc<float>(n);
    x[t].copyin(std::vector<float>(n, float(t + 1)));
    y[t] = dev.alloc<float>(n);
  }
  together(threads, [&](int t) {
    for (int i = 0; i < launches; ++i) dev.launch(scale, {n}, {}, x[t], y[t], float(i));
  });
  for (int t = 0; t < threads; ++t) {
    std::vector<float> got = y[t].copyout<float>();
    if (computes()) {
      EXPECT_EQ(got[n - 1], float(t + 1) * float(launches - 1)) << "thread " << t;
    }
    EXPECT_GE(y[t].version(), uint64_t(launches)) << "every launch bumps the version of what it writes";
  }
}

TEST_F(Threads, ConcurrentAllocationAndFree) {
  const encore::AllocatorStats before = dev.allocator_stats();
  constexpr int threads = 4, rounds = 200;
  std::atomic<int> checked{0};
  together(threads, [&](int t) {
    std::vector<Buffer> live;
    for (int i = 0; i < rounds; ++i) {
      Buffer b = dev.alloc<float>(64 + size_t((i * 7 + t * 13) % 5) * 64);
      b.copyin(std::vector<float>(b.count(), float(t)));  // allocates
      live.push_back(b);
      if (live.size() > 3) live.erase(live.begin());  // frees (to the cache)
      if (i % 50 == 0 && live.front().copyout<float>()[0] == float(t)) ++checked;
    }
  });
  EXPECT_EQ(checked.load(), threads * rounds / 50);
  const encore::AllocatorStats after = dev.allocator_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use) << "every buffer freed";
  EXPECT_GE(after.peak_bytes, after.bytes_in_use);
  EXPECT_GT(after.reuses, before.reuses) << "freed memory was reused";
}

TEST_F(Threads, ConcurrentCopyinCopyoutOfDifferentBuffers) {
  constexpr int threads = 4, rounds = 100;
  constexpr size_t n = 4096;
  std::vector<Buffer> b(threads), v(threads);
  for (int t = 0; t < threads; ++t) {
    b[t] = dev.alloc<int32_t>(n);
    v[t] = dev.alloc<int32_t>(2 * n).view(n, n);  // views of lazily allocated storage too
  }
  std::atomic<int> wrong{0};
  together(threads, [&](int t) {
    std::vector<int32_t> data(n);
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < n; ++i) data[i] = int32_t(t * 100000 + r * 10 + int(i % 7));
      Buffer& x = r % 2 ? v[t] : b[t];
      x.copyin(data);
      if (x.copyout<int32_t>() != data) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// A start-up's shape (workload::load_unit, encore-bench start): one thread builds a program (from
// source, then again from encore's caches, then another from a saved binary, whose source is read
// on a thread of its own beside the driver's build) while another allocates buffers and copies
// bytes in.
TEST_F(Threads, CompileBesideAllocationAndCopyin) {
  const std::string src = kSrc + std::string("// beside ") + encore_test::unique_token();
  const std::string saved_src = kSrc + std::string("// saved ") + encore_test::unique_token();
  std::vector<unsigned char> binary;
  std::string key;
  if (!dev.is_null()) {
    encore::Program saved = dev.compile(saved_src);
    binary = saved.binary();
    key = saved.binary_key();
  }  // (let go: a live program would be shared instead of built from the binary)
  constexpr size_t n = 4096;
  std::vector<encore::Program> built;
  std::vector<Buffer> made;
  together(2, [&](int t) {
    if (t == 0) {
      for (int r = 0; r < 2; ++r) built.push_back(dev.compile(src));
      built.push_back(dev.compile_binary(saved_src, "", binary, key));
    } else
      for (int i = 0; i < 8; ++i) {
        Buffer b = dev.alloc<float>(n);
        b.copyin(std::vector<float>(n, float(i + 1)));
        made.push_back(b);
      }
  });
  ASSERT_EQ(built.size(), 3u);
  ASSERT_EQ(made.size(), 8u);
  EXPECT_EQ(built[2].from_binary(), !dev.is_null());
  Buffer y = dev.alloc<float>(n);
  for (size_t i = 0; i < made.size(); ++i) {
    dev.launch(built[i % 3].kernel("th_scale"), {n}, {}, made[i], y, 2.f);
    if (!computes()) continue;
    EXPECT_EQ(made[i].copyout<float>(), std::vector<float>(n, float(i + 1))) << "buffer " << i;
    EXPECT_EQ(y.copyout<float>(), std::vector<float>(n, 2.f * float(i + 1))) << "buffer " << i;
  }
}

// Two threads each take the backend handle of one view (and its storage) at once.
TEST_F(Threads, OneViewHandleMadeOnce) {
  for (int round = 0; round < 50; ++round) {
    Buffer root = dev.alloc<float>(1024);
    Buffer view = root.view(256, 256);
    std::vector<void*> got(4);
    together(4, [&](int t) { got[t] = (t % 2 ? view : root).impl()->handle(); });
    EXPECT_EQ(got[0], got[2]);
    EXPECT_EQ(got[1], got[3]);
    EXPECT_NE(got[0], nullptr);
    EXPECT_NE(got[1], nullptr);
  }
}

}  // namespace
