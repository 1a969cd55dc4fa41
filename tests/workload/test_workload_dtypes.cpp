// Workload files and the new host values and types (issue 19 item 5): bool and bf16 buffers
// (generated, compared, dumped), an integer scalar converting to a short parameter, an int
// variable without "as" taking a long parameter's type; out-of-range forms are errors with their
// JSON path; a captured unit with converted values saves and runs in the harness.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "encore/encore.hpp"
#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;
using encore::DType;

namespace {

using namespace encore_test;

// A parse with the data folder and a check on the NULL device must refuse `json` at `path`.
void expect_error(const std::string& json, const std::string& path, const std::string& words) {
  expect_workload_error(
      [&] {
        wl::Workload w = wl::parse(json, kData);
        encore::Device dev = encore::Device::open("NULL");
        (void)wl::validate(w, dev);
      },
      path, words);
}

}  // namespace

TEST(WorkloadDtypes, BoolAndBf16BuffersWithConvertedScalarsRun) {
  for (const char* device : {"NULL", ""}) {  // "": the default device (OpenCL where there is one)
    std::filesystem::path dir = fresh_dir("encore_wl_dtypes", std::string("run") + device);
    std::vector<std::string> args{"run", kData + "dtypes.json", "--calls", "3", "--dump", dir.string()};
    if (*device) args.insert(args.end(), {"--device", device});
    std::string out;
    ASSERT_EQ(bench(args, &out), 0) << out;
    if (std::string(device) == "NULL" || encore::Device::open().is_null()) continue;  // NULL runs nothing: its dump holds no results
    wl::Workload w = wl::load(kData + "dtypes.json");
    const size_t xb = static_cast<size_t>(w.find_buffer("x"));
    EXPECT_EQ(w.buffers[xb].dtype, DType::bf16);
    EXPECT_EQ(w.buffers[static_cast<size_t>(w.find_buffer("flags"))].dtype, DType::boolean);
    // call 2 ran on input set 2
    std::vector<unsigned char> x = wl::initial_bytes(w, xb, 2), o = read_bytes(dir / "o.bin");
    ASSERT_EQ(o.size(), 16 * sizeof(float));
    for (size_t i = 0; i < 16; ++i) {
      uint16_t h;
      float f;
      std::memcpy(&h, x.data() + 2 * i, 2);
      std::memcpy(&f, o.data() + 4 * i, 4);
      const double v = wl::bf16_to_double(h);
      EXPECT_TRUE(v >= -4 && v <= 4) << v;
      EXPECT_EQ(f, static_cast<float>(v * -2)) << i;
    }
    std::vector<unsigned char> c = read_bytes(dir / "c.bin");
    int64_t cv;
    std::memcpy(&cv, c.data(), 8);
    EXPECT_EQ(cv, 8 + 8 * 1000000000000LL);  // call 2 binds n = values[0]: eight true flags
    std::filesystem::remove_all(dir);
  }
}

TEST(WorkloadDtypes, Bf16Rounding) {
  EXPECT_EQ(wl::bf16_from_double(1.0), 0x3f80);
  EXPECT_EQ(wl::bf16_from_double(-2.0), 0xc000);
  EXPECT_EQ(wl::bf16_from_double(3.14159), 0x4049);              // 3.140625
  EXPECT_EQ(wl::bf16_from_double(1.0 + 0x1p-8), 0x3f80);         // a tie rounds to even
  EXPECT_EQ(wl::bf16_from_double(1.0 + 3 * 0x1p-8), 0x3f82);     // a tie rounds to even (up)
  EXPECT_EQ(wl::bf16_from_double(0x1p-133), 0x0001);             // the smallest subnormal
  EXPECT_EQ(wl::bf16_from_double(1e39), 0x7f80);                 // overflow: inf
  EXPECT_EQ(wl::bf16_to_double(0x4049), 3.140625);
  for (uint32_t b = 0; b < 0x7f80; b += 7) EXPECT_EQ(wl::bf16_from_double(wl::bf16_to_double(uint16_t(b))), b);
}

TEST(WorkloadDtypes, HostValueFormsAndErrors) {
  const std::string base = read_text(kData + "dtypes.json");
  // the names in the unknown-dtype message
  expect_error(replaced(base, R"("dtype": "bool")", R"("dtype": "boolean")"), "buffers.flags.dtype", "bool bf16");
  // an integer that does not fit the short parameter
  expect_error(replaced(base, R"({"i32": -2})", R"({"i32": 40000})"), "step[0].args[2]", "value 40000 does not fit parameter 2 (short k)");
  // a float scalar still needs the parameter's type
  expect_error(replaced(base, R"({"i32": -2})", R"({"f32": -2})"), "step[0].args[2]", "(write {\"i16\": value})");
  // i16 is a scalar form of its own
  wl::Workload w = wl::parse(replaced(base, R"({"i32": -2})", R"({"i16": -2})"), kData);
  EXPECT_EQ(w.step[0].args[2].dtype, DType::i16);
  // a variable value that does not fit the parameter it widens to
  expect_error(replaced(replaced(base, R"("max": 8, "values": [8, 3])", R"("max": 80000, "values": [8, 70000])"), R"({"var": "n"})",
                    R"({"var": "n", "as": "i16"})"),
               "step[1].args[2]", "does not fit");
  // ... and without "as", the parameter's type it takes
  expect_error(replaced(replaced(base, R"("max": 8, "values": [8, 3])", R"("max": 80000, "values": [8, 70000])"), "long n)", "short n)"),
               "step[1].args[2]", "variable \"n\" value 70000 (values[1]) does not fit parameter 2 (short n)");
  // "as" takes every integer type but bool
  w = wl::parse(replaced(base, R"({"var": "n"})", R"({"var": "n", "as": "i64"})"), kData);
  EXPECT_TRUE(w.step[1].args[2].as_given);
  expect_error(replaced(base, R"({"var": "n"})", R"({"var": "n", "as": "bool"})"), "step[1].args[2].as", "integer type");
}

TEST(WorkloadDtypes, SavedUnitWithConvertedValuesRunsInTheHarness) {
  encore::Device dev = encore::Device::open("NULL");
  encore::Program p = dev.compile("__kernel void sv(__global long* o, short k, long n, __global const ushort* b) { o[0] = k + n + b[0]; }");
  encore::Variable n{"n", 0, 1000};
  encore::Buffer o = dev.alloc<int64_t>(1), b = dev.alloc<encore::bfloat16>(4);
  encore::Capture cap;
  cap.add_input(b);
  cap.add_output(o);
  n.bind(5);
  dev.launch(p.kernel("sv"), {1}, {}, o, 3, n, b);  // int to short, int variable to long, bf16 to ushort*
  encore::ExecutionUnit unit = cap.end();
  std::filesystem::path dir = fresh_dir("encore_wl_dtypes", "save");
  wl::save_workload(unit, dir / "u.json");
  const std::string text = read_text(dir / "u.json");
  EXPECT_NE(text.find(R"({"i16": 3})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("dtype": "bf16")"), std::string::npos) << text;
  std::string out;
  EXPECT_EQ(bench({"run", (dir / "u.json").string(), "--device", "NULL", "--calls", "3"}, &out), 0) << out;
  std::filesystem::remove_all(dir);
}
