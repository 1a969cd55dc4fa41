// DESIGN rule 4: a launch without a local size gets one from a small fixed set (the largest of
// 256, 128, ..., 1 that divides the first global size), eagerly and on replay with variable sizes,
// so a new global size never makes PoCL compile a new work-group function.
#include <gtest/gtest.h>

#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

namespace {

size_t expected_local(size_t g) {
  for (size_t l : {256, 128, 64, 32, 16, 8, 4, 2, 1})
    if (g % l == 0) return l;
  return 1;
}

TEST(LocalSize, ChosenFromTheFixedSetEagerAndOnReplay) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore::Device dev = encore::Device::open();
  encore::Kernel k = dev.compile("__kernel void lsz(__global uint* o) { o[get_global_id(0)] = (uint)get_local_size(0); }").kernel("lsz");
  encore::Variable n{"n", 1, 4096};
  const std::vector<int64_t> sizes = {1024, 1000, 7, 96, 640, 1024, 12};
  auto check = [&](const encore::Buffer& out, int64_t g, const char* when) {
    std::vector<uint32_t> got = out.copyout<uint32_t>();
    for (int64_t i = 0; i < g; ++i) ASSERT_EQ(got[i], expected_local(g)) << when << " global " << g << " item " << i;
  };
  for (int64_t g : sizes) {  // eager
    encore::Buffer out = dev.alloc<uint32_t>(4096);
    n.bind(g);
    dev.launch(k, {n}, {}, out);
    check(out, g, "eager");
  }
  encore::Buffer out = dev.alloc<uint32_t>(4096);
  auto jit = encore::TinyJit([&](const encore::Buffer& o, encore::BoundVar) { dev.launch(k, {n}, {}, o); });
  for (int64_t g : sizes) {  // calls 0, 1 eager; 2+ replay with a new size each call
    jit(out, n.bind(g));
    check(out, g, jit.calls() > 2 ? "replay" : "capture");
  }
}

}  // namespace
