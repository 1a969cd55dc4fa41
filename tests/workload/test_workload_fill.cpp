// A captured fill saved as a workload file: WORKLOAD.md has no fill step, so the saver writes the
// filled bytes as a const buffer copied into the destination, and the harness replays it as such.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "encore/encore.hpp"
#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;
using encore::Buffer;
using encore::DType;

TEST(WorkloadSaveFill, FillIsSavedAsItsBytesAndRunsInTheHarness) {
  encore::Device dev = encore::Device::open("NULL");
  Buffer x = dev.alloc(DType::f32, 64), st = dev.alloc(DType::i32, 64), y = dev.alloc(DType::f32, 64);
  std::vector<float> xs(64, 1.f);
  x.copyin(xs);
  x.set_name("x");
  st.set_name("st");
  y.set_name("y");
  encore::Capture cap;
  cap.add_input(x);
  dev.fill(st, int32_t{-5});
  dev.copy(y, x);
  dev.fill(y.view(32, 32), 2.5f);
  cap.add_output(y);
  encore::ExecutionUnit unit = cap.end();

  std::filesystem::path dir = encore_test::fresh_dir("encore_save_fill", "step");
  std::filesystem::path file = dir / "step.json";
  wl::save_workload(unit, file, {.name = "fill-step"});
  wl::Workload w = wl::load(file);
  ASSERT_EQ(w.step.size(), 3u);
  EXPECT_EQ(w.step[0].kind, wl::ItemSpec::Kind::copy);  // the fill of all of st: a copy from its bytes
  const size_t src = static_cast<size_t>(w.step[0].src);
  EXPECT_EQ(w.buffers[src].name, "fill0");
  EXPECT_EQ(w.buffers[src].role, wl::Role::const_);
  EXPECT_EQ(w.buffers[src].dtype, DType::i32);
  std::vector<unsigned char> want(64 * 4);
  for (size_t i = 0; i < 64; ++i) {
    const int32_t v = -5;
    std::memcpy(want.data() + 4 * i, &v, 4);
  }
  EXPECT_EQ(wl::initial_bytes(w, src), want);
  std::string out;
  EXPECT_EQ(encore_test::bench({"check", file.string(), "--device", "NULL"}, &out), 0) << out;
  std::filesystem::remove_all(dir);
}
