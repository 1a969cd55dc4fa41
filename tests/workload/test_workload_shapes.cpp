// Workloads with "shapes": several input sets of different sizes through one TinyJit (a unit per
// set), the calls interleaved, eager and replay compared on every call of every set.
#include <gtest/gtest.h>

#include <cstring>

#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;

namespace {

using namespace encore_test;

std::string shapes_json() { return read_text(kData + "shapes.json"); }

// shapes.json with `from` replaced by `to` (once, and it must be there)
std::string edited(const std::string& from, const std::string& to) { return replaced(shapes_json(), from, to); }

void expect_error(const std::string& json, const std::string& path, const std::string& msg) {
  expect_workload_error([&] { wl::parse(json); }, path, msg);
}

uint32_t scalar_i32(const wl::ArgSpec& a) { return uint32_t(a.bits); }

}  // namespace

TEST(WorkloadShapes, EachSetResolvesEveryShapeReference) {
  const wl::Workload w = wl::parse(shapes_json());
  ASSERT_EQ(w.sets.size(), 3u);
  ASSERT_EQ(w.shape_names, std::vector<std::string>{"q"});
  const size_t q[] = {64, 16, 256};
  for (size_t k = 0; k < 3; ++k) {
    const wl::Workload& s = w.sets[k];
    EXPECT_TRUE(s.sets.empty());
    EXPECT_EQ(s.buffers[size_t(s.find_buffer("x"))].count, 4 * q[k]);
    EXPECT_EQ(s.buffers[size_t(s.find_buffer("y"))].count, 4 * q[k]);
    EXPECT_EQ(s.buffers[size_t(s.find_buffer("s"))].count, q[k]);
    EXPECT_EQ(s.buffers[size_t(s.find_buffer("acc"))].count, 2u);
    EXPECT_EQ(s.step[0].global[0].add, int64_t(4 * q[k]));
    EXPECT_EQ(scalar_i32(s.step[0].args[3]), 4 * q[k]);
    EXPECT_EQ(s.step[1].global[0].add, int64_t(q[k]));
    EXPECT_EQ(scalar_i32(s.step[2].args[2]), q[k]);
  }
  // the workload itself is set 0
  EXPECT_EQ(w.buffers[size_t(w.find_buffer("x"))].count, 256u);
}

TEST(WorkloadShapes, InvalidShapesNameThePlace) {
  expect_error(edited(R"("q": [64, 16, 256])", R"("q": [64, 16, 256], "r": [1, 2])"), "shapes.r", "has 2 values");
  expect_error(edited(R"("q": [64, 16, 256])", R"("q": [64])"), "shapes.q", "at least 2 values");
  expect_error(edited(R"("q": [64, 16, 256])", R"("q": [64, 1.5])"), "shapes.q[1]", "integer");
  expect_error(edited(R"({"shape": "q"}, "role": "output")", R"({"shape": "z"}, "role": "output")"), "buffers.s.count.shape", "unknown shape \"z\"");
  expect_error(edited(R"({"shape": "q"}, "role": "output")", R"({"shape": "q", "div": 2}, "role": "output")"), "buffers.s.count.div", "unknown key");
  // a size the shape makes invalid in one set: the error says which set
  expect_error(edited(R"({"shape": "q"}, "role": "output")", R"({"shape": "q", "add": -16}, "role": "output")"), "buffers.s.count",
               "[in shape set 1 (q = 16)]");
  // state persists across the sets: one size
  expect_error(edited(R"("count": 2, "role": "state")", R"("count": {"shape": "q"}, "role": "state")"), "buffers.acc.count",
               "persists across shape sets");
}

TEST(WorkloadShapes, SetsThatShareTheirInputSizesAreAnError) {
  // x keeps one size while q changes the output: the jit would take set 1 for set 0's unit
  std::string s = edited(R"("x":   {"dtype": "f32", "count": {"shape": "q", "mul": 4})", R"("x":   {"dtype": "f32", "count": 1024)");
  expect_error(s, "shapes", "sets 0 and 1 give every input buffer the same count");
}

TEST(WorkloadShapes, EagerAndReplayAgreeOnEverySetInterleaved) {
  if (encore::Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
  const encore::Device dev = encore::Device::open("CL:0");
  const wl::Workload w = wl::load(kData + "shapes.json");
  wl::RunOptions o;
  o.calls = 12;
  o.rotate = 2;
  const wl::Report r = wl::run(w, dev, o);
  EXPECT_TRUE(r.compared);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  ASSERT_EQ(r.sets.size(), 3u);
  const uint64_t q[] = {64, 16, 256};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NE(r.sets[k].shape.find("q = " + std::to_string(q[k])), std::string::npos) << r.sets[k].shape;
    // each set has its own unit: its temp y is 4q floats
    EXPECT_EQ(r.sets[k].temp_bytes_naive, 16 * q[k]) << r.sets[k].shape;
    EXPECT_GT(r.sets[k].capture_ms, 0) << r.sets[k].shape;
    EXPECT_GT(r.sets[k].replay_step_us, 0) << r.sets[k].shape;
  }
  EXPECT_NE(r.table().find("shape set 2 (q = 256)"), std::string::npos) << r.table();
  EXPECT_NE(r.json().find("\"sets\": ["), std::string::npos) << r.json();
}

TEST(WorkloadShapes, AWrongReplayOfOneSetIsCaughtAndNamed) {
  if (encore::Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
  const encore::Device dev = encore::Device::open("CL:0");
  const wl::Workload w = wl::load(kData + "shapes.json");
  wl::RunOptions o;
  o.calls = 9;
  o.rotate = 1;
  // corrupt the jit's output of set 1's first replay (call 7 = set 1's third call)
  o.after_jit_call = [](size_t call, const std::vector<encore::Buffer>& outs) {
    if (call == 7) outs[0].copyin(std::vector<float>(outs[0].count(), -1.0f));
  };
  const wl::Report r = wl::run(w, dev, o);
  EXPECT_EQ(r.mismatches, 16u);
  EXPECT_NE(r.first_mismatch.find("call 7 (shape set 1 (q = 16))"), std::string::npos) << r.first_mismatch;
}

TEST(WorkloadShapes, RunOptionsThatCannotReplayEverySetAreErrors) {
  const encore::Device dev = encore::Device::open("NULL");
  const wl::Workload w = wl::parse(shapes_json());
  wl::RunOptions o;
  o.calls = 8;  // 3 sets x (warm-up, capture, replay) = 9
  EXPECT_THROW(wl::run(w, dev, o), encore::ArgumentError);
  o.calls = 9;
  o.jit.max_units = 2;
  EXPECT_THROW(wl::run(w, dev, o), encore::ArgumentError);
  o.jit.max_units = 3;
  const wl::Report r = wl::run(w, dev, o);  // NULL: runs, compares nothing
  EXPECT_FALSE(r.compared);
  EXPECT_EQ(r.sets.size(), 3u);
}
