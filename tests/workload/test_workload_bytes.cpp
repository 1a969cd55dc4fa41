// Workload files pass by-value vectors and structs as {"bytes": "<hex>"} (issue 19 item 1): parsed,
// checked against the parameter's size, run eagerly and through the jit with equal results, and
// written back by save_workload.
#include <gtest/gtest.h>

#include <filesystem>

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

TEST(WorkloadBytes, SaveWritesBytesBack) {
  for (const std::string& id : encore_test::all_params()) {
    SCOPED_TRACE(id);
    encore::Device dev = encore::Device::open(id);
    encore::Program p = dev.compile("typedef struct { float alpha; int n; } par_str;\n"
                                    "__kernel void wb_scale(__global const float* x, __global float* y, par_str p, float4 w) {\n"
                                    "  int i = (int)get_global_id(0); float4 v = w * p.alpha; y[i] = x[i] * v.y + (float)p.n; }\n");
    struct Par {
      float alpha;
      int32_t n;
    };
    encore::Buffer x = dev.alloc<float>(64);
    x.copyin(std::vector<float>(64, 1.5f));
    encore::Capture cap;
    cap.add_input(x);
    encore::Buffer y = dev.alloc<float>(64);
    dev.launch(p.kernel("wb_scale"), {64}, {}, x, y, encore::bytes(Par{0.5f, 3}), encore::bytes(std::array<float, 4>{0, 2, 0, 0}));
    cap.add_output(y);
    encore::ExecutionUnit unit = cap.end();
    const std::filesystem::path dir = encore_test::fresh_dir("encore-wb", encore_test::unique_token());
    wl::save_workload(unit, dir / "b.json");
    const std::string text = encore_test::read_text(dir / "b.json");
    EXPECT_NE(text.find("{\"bytes\": \"" + kPar + "\"}"), std::string::npos) << text;
    EXPECT_NE(text.find("{\"bytes\": \"" + kVec + "\"}"), std::string::npos) << text;
    wl::RunOptions opt;
    opt.calls = 3;
    wl::Report r = wl::run(wl::load(dir / "b.json"), dev, opt);
    EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
