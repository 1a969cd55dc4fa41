// Workload files pass by-value vectors and structs as {"bytes": "<hex>"} (issue 19 item 1): parsed,
// checked against the parameter's size, run eagerly and through the jit with equal results, and
// written back by save_workload.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <span>

#include "encore/encore.hpp"
#include "encore/workload.hpp"
#include "test_util.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;

namespace {

const std::string kSource =
    "typedef struct { float alpha; int n; } par_str;\\n"
    "__kernel void wb_scale(__global const float* x, __global float* y, par_str p, float4 w) {\\n"
    "  int i = (int)get_global_id(0); float4 v = w * p.alpha; y[i] = x[i] * v.y + (float)p.n; }\\n";

std::string workload(const std::string& p_hex, const std::string& w_hex) {
  return R"({"format": "encore.workload/1", "name": "bytes",
    "programs": {"k": {"source": ")" + kSource + R"("}},
    "buffers": {"x": {"dtype": "f32", "count": 64, "role": "input", "init": {"uniform": [-1, 1], "seed": 3}},
                "y": {"dtype": "f32", "count": 64, "role": "output"}},
    "step": [{"launch": "k.wb_scale", "args": ["x", "y", {"bytes": ")" + p_hex + R"("}, {"bytes": ")" + w_hex + R"("}], "global": [64]}]})";
}

// par_str{0.5f, 3} and float4{0, 2, 0, 0}, little-endian
const std::string kPar = "0000003f03000000";
const std::string kVec = "00000000000000400000000000000000";

TEST(WorkloadBytes, ParsesChecksAndRuns) {
  wl::Workload w = wl::parse(workload(kPar, kVec));
  ASSERT_EQ(w.step[0].args[2].kind, wl::ArgSpec::Kind::bytes);
  EXPECT_EQ(w.step[0].args[2].bytes, (std::vector<unsigned char>{0, 0, 0, 0x3f, 3, 0, 0, 0}));
  for (const std::string& id : encore_test::all_params()) {
    SCOPED_TRACE(id);
    encore::Device dev = encore::Device::open(id);
    wl::RunOptions opt;
    opt.calls = 4;
    wl::Report r = wl::run(w, dev, opt);
    EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
    EXPECT_EQ(r.items_replayed, 1u);
    // a 12-byte float4 is refused at validation, naming both sizes
    try {
      wl::validate(wl::parse(workload(kPar, kVec.substr(0, 24))), dev);
      ADD_FAILURE() << "a short float4 was accepted";
    } catch (const encore::WorkloadError& e) {
      EXPECT_NE(std::string(e.what()).find("12 bytes given"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("takes 16"), std::string::npos) << e.what();
    }
    // a scalar for the struct: refused with the form to use
    try {
      std::string j = workload(kPar, kVec);
      j.replace(j.find("{\"bytes\": \"" + kPar + "\"}"), kPar.size() + 13, "{\"f32\": 1}");
      wl::validate(wl::parse(j), dev);
      ADD_FAILURE() << "a scalar for a struct was accepted";
    } catch (const encore::WorkloadError& e) {
      EXPECT_NE(std::string(e.what()).find("{\"bytes\""), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(wl::parse(workload("abc", kVec)), encore::WorkloadError);   // odd number of digits
  EXPECT_THROW(wl::parse(workload("zz00", kVec)), encore::WorkloadError);  // not hex
  EXPECT_THROW(wl::parse(workload("", kVec)), encore::WorkloadError);      // empty
}

// save_workload writes by-value bytes back; a struct that came from a host input (bytes_from) in
// the per-call form, its one value the bytes seen at capture. The saved file runs.
TEST(WorkloadBytes, SaveWritesBytesBack) {
  for (const std::string& id : encore_test::all_params())
    for (bool from_host : {false, true}) {
      SCOPED_TRACE(id + (from_host ? ", from a host input" : ""));
      encore::Device dev = encore::Device::open(id);
      encore::Program p = dev.compile("typedef struct { float alpha; int n; } par_str;\n"
                                      "__kernel void wb_scale(__global const float* x, __global float* y, par_str p, float4 w) {\n"
                                      "  int i = (int)get_global_id(0); float4 v = w * p.alpha; y[i] = x[i] * v.y + (float)p.n; }\n");
      struct Par {
        float alpha;
        int32_t n;
      };
      const Par par{0.5f, 3};
      const std::span<const Par> host(&par, 1);
      encore::Buffer x = dev.alloc<float>(64);
      x.copyin(std::vector<float>(64, 1.5f));
      encore::Capture cap;
      cap.add_input(x);
      if (from_host) cap.add_host_input(host);
      encore::Buffer y = dev.alloc<float>(64);
      dev.launch(p.kernel("wb_scale"), {64}, {}, x, y, from_host ? encore::bytes_from(host) : encore::bytes(par),
                 encore::bytes(std::array<float, 4>{0, 2, 0, 0}));
      cap.add_output(y);
      encore::ExecutionUnit unit = cap.end();
      const std::filesystem::path dir = encore_test::fresh_dir("encore-wb", encore_test::unique_token());
      wl::save_workload(unit, dir / "b.json");
      const std::string text = encore_test::read_text(dir / "b.json");
      EXPECT_NE(text.find(from_host ? "{\"bytes\": [\"" + kPar + "\"]}" : "{\"bytes\": \"" + kPar + "\"}"), std::string::npos) << text;
      EXPECT_NE(text.find("{\"bytes\": \"" + kVec + "\"}"), std::string::npos) << text;
      wl::Workload w = wl::load(dir / "b.json");
      EXPECT_EQ(w.step[0].args[2].per_call.size(), from_host ? 1u : 0u);
      wl::RunOptions opt;
      opt.calls = 3;
      wl::Report r = wl::run(w, dev, opt);
      EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
      std::filesystem::remove_all(dir);
    }
}

// The per-call form {"bytes": ["<hex>", ...]} (issue 28 item 4): call i passes entry i % len. The
// harness compares every call's output with eager, so a value frozen at capture would mismatch.
TEST(WorkloadBytes, PerCallValuesReplayEachCallsBytes) {
  // par_str{0.5, 3}, {-1.25, 7}, {2, -4}
  const std::string per_call = R"(["0000003f03000000", "0000a0bf07000000", "00000040fcffffff"])";
  std::string j = workload(kPar, kVec);
  j.replace(j.find("\"" + kPar + "\""), kPar.size() + 2, per_call);
  wl::Workload w = wl::parse(j);
  const wl::ArgSpec& a = w.step[0].args[2];
  ASSERT_EQ(a.per_call.size(), 3u);
  EXPECT_EQ(a.per_call[1], (std::vector<unsigned char>{0, 0, 0xa0, 0xbf, 7, 0, 0, 0}));
  EXPECT_EQ(a.bytes, a.per_call[0]);
  for (const std::string& id : encore_test::all_params()) {
    SCOPED_TRACE(id);
    encore::Device dev = encore::Device::open(id);
    wl::RunOptions opt;
    opt.calls = 8;
    wl::Report r = wl::run(w, dev, opt);
    EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
    EXPECT_EQ(r.items_replayed, 1u);
  }
  // every entry has entry 0's size; at least one entry
  std::string uneven = j;
  uneven.replace(uneven.find("\"00000040fcffffff\""), 18, "\"00000040\"");
  try {
    (void)wl::parse(uneven);
    ADD_FAILURE() << "entries of other sizes were accepted";
  } catch (const encore::WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("has 4 bytes, entry 0 8"), std::string::npos) << e.what();
  }
  std::string empty = j;
  empty.replace(empty.find(per_call), per_call.size(), "[]");
  EXPECT_THROW((void)wl::parse(empty), encore::WorkloadError);
}

}  // namespace
