// Workload files without a device: the strict schema (every error names its JSON path), the init
// generators (uniform checked against golden values computed in Python) and the comparison rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;

namespace {

using namespace encore_test;

// A small valid workload; tests edit one spot of it.
std::string base(const std::string& buffers_extra = "", const std::string& step = "", const std::string& top_extra = "") {
  return R"({"format": "encore.workload/1", "name": "t",)" + top_extra + R"(
    "programs": {"p": {"source": "__kernel void addk(__global const float* a, __global float* b, int n) { }"}},
    "buffers": {"a": {"dtype": "f32", "count": 64, "role": "input", "init": {"uniform": [0, 1], "seed": 3}},
                "b": {"dtype": "f32", "count": 64, "role": "output"})" + buffers_extra + R"(},
    "variables": {"n": {"min": 0, "max": 100, "values": [1, 2, 3]}},
    "step": [)" + (step.empty() ? R"({"launch": "p.addk", "args": ["a", "b", {"var": "n"}], "global": [64]})" : step) + "]}";
}

// Parses `json`, expecting a WorkloadError whose path is `path` and whose message contains `msg`.
// The message also starts with the path ("top level" for the empty one).
void expect_error(const std::string& json, const std::string& path, const std::string& msg = "") {
  const std::string what = expect_workload_error([&] { wl::parse(json); }, path, msg);
  if (!what.empty()) {
    EXPECT_EQ(what.rfind(path.empty() ? "top level" : path, 0), 0u) << what;
  }
}

}  // namespace

TEST(WorkloadParse, ValidBase) {
  wl::Workload w = wl::parse(base());
  EXPECT_EQ(w.name, "t");
  ASSERT_EQ(w.buffers.size(), 2u);
  EXPECT_EQ(w.buffers[0].role, wl::Role::input);
  EXPECT_EQ(w.buffers[0].init.kind, wl::Init::Kind::uniform);
  EXPECT_EQ(w.buffers[0].init.seed, 3u);
  ASSERT_EQ(w.step.size(), 1u);
  EXPECT_EQ(w.step[0].kernel, "addk");
  EXPECT_EQ(w.step[0].args[2].kind, wl::ArgSpec::Kind::variable);
  EXPECT_EQ(w.step[0].args[2].dtype, encore::DType::i32);
  EXPECT_TRUE(w.bitwise());
}

TEST(WorkloadParse, FullSyntax) {
  wl::Workload w = wl::parse(base(
      R"(, "s": {"dtype": "u8", "count": 256, "role": "state", "init": {"arange": [0, 1]}},
           "c": {"dtype": "i64", "count": 2, "role": "const", "init": {"fill": 9007199254740993}},
           "t": {"dtype": "f64", "count": 32, "role": "temp"})",
      R"({"launch": "p.addk", "args": [{"buf": "a", "access": "in", "offset": 32, "count": 16}, "b", {"i32": -3}],
          "global": [{"var": "n", "mul": 64, "add": 0}, 1], "local": [64, 1], "name": "first", "estimate": {"ops": 10, "bytes": 20}},
         {"copy": {"src": "t", "dst": "b"}, "name": "cp"})",
      R"( "tolerance": {"rtol": 1e-6, "atol": 0},)"));
  EXPECT_FALSE(w.bitwise());
  EXPECT_EQ(w.step[0].args[0].offset, 32u);
  EXPECT_EQ(w.step[0].args[0].count, 16u);
  EXPECT_TRUE(w.step[0].args[0].view);
  EXPECT_EQ(w.step[0].args[2].bits, 0xfffffffdu);
  EXPECT_EQ(w.step[0].global[0].eval(2), 128);
  EXPECT_EQ(w.step[1].kind, wl::ItemSpec::Kind::copy);
  std::vector<unsigned char> c = wl::initial_bytes(w, 3);
  int64_t v;
  std::memcpy(&v, c.data() + 8, 8);
  EXPECT_EQ(v, 9007199254740993);  // exact, not via double
  std::vector<unsigned char> s = wl::initial_bytes(w, 2);
  EXPECT_EQ(s[255], 255);
}

// One test per class of invalid file that needs no device; device classes are in test_workload_run.cpp.
TEST(WorkloadParse, UnknownKey) { expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "temp", "cout": 3})"), "buffers.x.cout", "unknown key"); }
TEST(WorkloadParse, UnknownTopLevelKey) { expect_error(base("", "", R"( "nmae": "x",)"), "nmae", "unknown key"); }
TEST(WorkloadParse, DuplicateKey) {
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "count": 2, "role": "temp"})"), "buffers.x.count", "duplicate key");
  expect_error(base(R"(, "a": {"dtype": "f32", "count": 1, "role": "temp"})"), "buffers.a", "duplicate key");
}
TEST(WorkloadParse, UnknownBuffer) {
  expect_error(base("", R"({"launch": "p.addk", "args": ["a", "w9", 1], "global": [1]})"), "step[0].args[1]", "unknown buffer \"w9\"");
}
TEST(WorkloadParse, CopyBetweenDifferentSizes) {
  expect_error(base(R"(, "x": {"dtype": "f64", "count": 64, "role": "temp"})", R"({"copy": {"src": "a", "dst": "x"}})"), "step[0].copy",
               "sizes differ");
}
TEST(WorkloadParse, CopyAcrossDtypesOfEqualBytes) {
  EXPECT_NO_THROW(wl::parse(base(R"(, "x": {"dtype": "u16", "count": 128, "role": "temp"})", R"({"copy": {"src": "a", "dst": "x"}})")));
}
TEST(WorkloadParse, BadDtype) { expect_error(base(R"(, "x": {"dtype": "f33", "count": 1, "role": "temp"})"), "buffers.x.dtype", "unknown dtype"); }
TEST(WorkloadParse, CountZero) { expect_error(base(R"(, "x": {"dtype": "f32", "count": 0, "role": "temp"})"), "buffers.x.count", "> 0"); }
TEST(WorkloadParse, InitOnTempOrOutput) {
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "temp", "init": "zeros"})"), "buffers.x.init", "temp");
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "output", "init": {"fill": 1}})"), "buffers.x.init", "output");
}
TEST(WorkloadParse, VariableOutsideBounds) {
  std::string j = base();
  j.replace(j.find("[1, 2, 3]"), 9, "[1, 200, 3]");
  expect_error(j, "variables.n.values[1]", "outside the bounds");
}
TEST(WorkloadParse, MissingSourceFile) {
  std::string j = base();
  j.replace(j.find("\"source\": "), 10, "\"source_file\": \"no-such.cl\", \"x\": ");
  j.replace(j.find("\"x\": "), 5, "\"options\": ");
  expect_error(j, "programs.p.source_file", "no such file");
}
// --root: files a workload names must resolve inside the root (no absolute path, no `..` out).
TEST(WorkloadParse, RootConfinesFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = encore_test::fresh_dir("encore_wl_root", "files"), in = dir / "in";
  fs::create_directories(in / "sub");
  const char* k = "__kernel void addk(__global const float* a, __global float* b, int n) { }";
  std::ofstream(in / "sub" / "k.cl") << k;
  std::ofstream(dir / "out.cl") << k;
  auto with = [](const std::string& file) {
    std::string j = base();
    j.replace(j.find("\"source\": "), 10, "\"source_file\": \"" + file + "\", \"x\": ");
    j.replace(j.find("\"x\": "), 5, "\"options\": ");
    return j;
  };
  EXPECT_NO_THROW(wl::parse(with("sub/k.cl"), in, in));
  EXPECT_NO_THROW(wl::parse(with("sub/../sub/k.cl"), in, in));
  EXPECT_NO_THROW(wl::parse(with("../out.cl"), in));  // trusted without a root
  for (const std::string& f : {std::string("../out.cl"), (dir / "out.cl").string(), std::string("sub/../../out.cl")}) {
    const std::string what = expect_workload_error([&] { wl::parse(with(f), in, in); }, "programs.p.source_file", "outside the root");
    EXPECT_NE(what.find(f), std::string::npos) << what;
  }
}
TEST(WorkloadParse, MoreInvalid) {
  expect_error("{", "", "invalid JSON");
  expect_error("[]", "", "expected an object");
  expect_error(R"({"format": "encore.workload/2"})", "format", "encore.workload/1");
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "scratch"})"), "buffers.x.role", "unknown role");
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1.5, "role": "temp"})"), "buffers.x.count", "integer");
  expect_error(base(R"(, "x": {"dtype": "u8", "count": 1, "role": "state", "init": {"fill": 256}})"), "buffers.x.init.fill", "does not fit");
  expect_error(base(R"(, "x": {"dtype": "u8", "count": 300, "role": "state", "init": {"arange": [0, 1]}})"), "buffers.x.init", "element 299");
  expect_error(base(R"(, "x": {"dtype": "f16", "count": 8, "role": "state", "init": {"uniform": [66000, 70000]}})"), "buffers.x.init", "does not fit");
  // hi - lo overflows: every drawn value would be inf (or nan), stored silently in an f64 buffer
  expect_error(base(R"(, "x": {"dtype": "f64", "count": 8, "role": "state", "init": {"uniform": [-1e308, 1e308]}})"), "buffers.x.init.uniform",
               "overflows a double");
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "state", "init": {"fill": 1, "seed": 2}})"), "buffers.x.init.seed", "unknown key");
  expect_error(base(R"(, "x": {"dtype": "f32", "count": 1, "role": "state", "init": "ones"})"), "buffers.x.init", "zeros");
  expect_error(base("", R"({"launch": "q.addk", "args": [], "global": [1]})"), "step[0].launch", "unknown program");
  expect_error(base("", R"({"launch": "addk", "args": [], "global": [1]})"), "step[0].launch", "program.kernel");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [1, 1, 1, 1]})"), "step[0].global", "1 to 3");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [-1]})"), "step[0].global[0]", "out of range");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [{"var": "n", "add": -2}]})"), "step[0].global[0]", "negative");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [{"var": "m"}]})"), "step[0].global[0].var", "unknown variable");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [{"var": "n"}], "local": [2]})"), "step[0].global[0]", "multiple");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [4], "local": [2, 1]})"), "step[0].local", "dimensions");
  expect_error(base("", R"({"launch": "p.addk", "args": [], "global": [4], "local": [0]})"), "step[0].local[0]", "> 0");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"i32": 2147483648}], "global": [1]})"), "step[0].args[0].i32", "out of range");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"f16": 2}], "global": [1]})"), "step[0].args[0]", "unknown argument form");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"var": "n", "as": "f32"}], "global": [1]})"), "step[0].args[0].as", "int variable");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"buf": "a", "offset": 64}], "global": [1]})"), "step[0].args[0].offset", "out of range");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"buf": "a", "offset": 32, "count": 33}], "global": [1]})"), "step[0].args[0].count", "out of range");
  expect_error(base("", R"({"launch": "p.addk", "args": [{"buf": "a", "access": "rw"}], "global": [1]})"), "step[0].args[0].access", "unknown access");
  expect_error(base("", R"({"copy": {"src": "a", "dst": "a"}})"), "step[0].copy", "same buffer");
  expect_error(base("", R"({"copy": {"src": "a", "dst": "b"}, "launch": "p.addk"})"), "step[0]", "exactly one");
  expect_error(base(R"(, "c": {"dtype": "f32", "count": 64, "role": "const"})", R"({"copy": {"src": "a", "dst": "c"}})"), "step[0].copy.dst", "const");
  expect_error(base(R"(, "c": {"dtype": "f32", "count": 64, "role": "const"})",
                    R"({"launch": "p.addk", "args": [{"buf": "c", "access": "inout"}], "global": [1]})"),
               "step[0].args[0]", "const buffer");
  expect_error(base("", "", R"( "tolerance": {"rtol": -1},)"), "tolerance.rtol", "negative");
  expect_error(base(R"(, "../x": {"dtype": "f32", "count": 1, "role": "temp"})"), "buffers.../x", "invalid buffer name");
  std::string nostep = base();
  nostep.replace(nostep.find("\"step\": ["), 9, "\"steps\": [");
  expect_error(nostep, "", "missing required key \"step\"");
}

TEST(WorkloadParse, FloatVariables) {
  std::string j = base();
  j.replace(j.find(R"("n": {)"), 6, R"("lr": {"type": "f32", "values": [0.5, 0.25]}, "n": {)");
  wl::Workload w = wl::parse(j);
  ASSERT_EQ(w.variables.size(), 2u);
  EXPECT_EQ(w.variables[0].type, encore::VarType::f32);
  EXPECT_EQ(w.variables[0].fvalues[1], 0.25);
  std::string k = j;
  k.replace(k.find(R"("global": [64])"), 14, R"("global": [{"var": "lr"}])");
  expect_error(k, "step[0].global[0].var", "float variable");
  std::string v = j;
  v.replace(v.find(R"({"var": "n"})"), 12, R"({"var": "n", "as": "u32"})");
  EXPECT_EQ(wl::parse(v).step[0].args[2].dtype, encore::DType::u32);
}

TEST(WorkloadParse, SeedsAnyIntegerMod64) {
  auto seed_of = [](const std::string& s) {
    std::string j = base();
    j.replace(j.find("\"seed\": 3"), 9, "\"seed\": " + s);
    return wl::parse(j).buffers[0].init.seed;
  };
  EXPECT_EQ(seed_of("-1"), ~0ull);
  EXPECT_EQ(seed_of("18446744073709551617"), 1u);          // 2^64 + 1
  EXPECT_EQ(seed_of("36893488147419103237"), 5u);          // 2^65 + 5: beyond 64 bits, exact
  EXPECT_EQ(seed_of("1e20"), 7766279631452241920ull);      // 10^20 mod 2^64
  EXPECT_EQ(seed_of("4294967299"), 3u + (4294967296ull));   // kept mod 2^64; equal streams mod 2^32 come from s·2^32
  EXPECT_THROW(seed_of("2.5"), encore::WorkloadError);
}

TEST(WorkloadInit, UniformGolden) {
  struct G {
    const char* dtype;
    double lo, hi;
    unsigned long long seed;
    uint64_t index;
    unsigned long long bits;
  };
  static const G golden[] = {
#include "uniform_golden.inc"
  };
  for (const G& g : golden) {
    wl::Workload w;
    wl::BufferSpec b;
    b.name = "u";
    b.dtype = *encore::parse_dtype(g.dtype);
    b.count = g.index + 1;
    b.role = wl::Role::state;
    b.init.kind = wl::Init::Kind::uniform;
    b.init.lo = g.lo;
    b.init.hi = g.hi;
    b.init.seed = g.seed;
    w.buffers.push_back(b);
    std::vector<unsigned char> bytes = wl::initial_bytes(w, 0);
    uint64_t got = 0;
    std::memcpy(&got, bytes.data() + g.index * encore::size(b.dtype), encore::size(b.dtype));
    EXPECT_EQ(got, g.bits) << g.dtype << " [" << g.lo << ", " << g.hi << "] seed " << g.seed << " index " << g.index;
  }
}

TEST(WorkloadInit, InputSetsAdvanceTheSeed) {
  wl::Workload w = wl::parse(base());
  std::vector<unsigned char> s1 = wl::initial_bytes(w, 0, 1);
  float f;
  std::memcpy(&f, s1.data() + 4 * 5, 4);
  EXPECT_EQ(f, static_cast<float>(wl::uniform_value(0, 1, 4, 5)));
  EXPECT_NE(wl::initial_bytes(w, 0, 0), s1);
}

TEST(WorkloadInit, F16RoundsToNearestEven) {
  EXPECT_EQ(wl::f16_from_double(1.0), 0x3c00);
  EXPECT_EQ(wl::f16_from_double(-2.0), 0xc000);
  EXPECT_EQ(wl::f16_from_double(65504.0), 0x7bff);
  EXPECT_EQ(wl::f16_from_double(65519.99), 0x7bff);
  EXPECT_EQ(wl::f16_from_double(65520.0), 0x7c00);
  EXPECT_EQ(wl::f16_from_double(1.0 + 0x1p-11), 0x3c00);              // tie → even
  EXPECT_EQ(wl::f16_from_double(1.0 + 3 * 0x1p-11), 0x3c02);          // tie → even (up)
  EXPECT_EQ(wl::f16_from_double(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);    // just above the tie: no double rounding via f32
  EXPECT_EQ(wl::f16_from_double(0x1p-24), 0x0001);
  EXPECT_EQ(wl::f16_from_double(0x1p-25), 0x0000);                    // tie → even (zero)
  EXPECT_EQ(wl::f16_from_double(0x1p-14 - 0x1p-26), 0x0400);          // rounds up into the normals
  for (uint32_t h = 0; h < 0x7c00; ++h) EXPECT_EQ(wl::f16_from_double(wl::f16_to_double(static_cast<uint16_t>(h))), h);
}

TEST(WorkloadInit, FillAndArange) {
  wl::Workload w = wl::parse(base(
      R"(, "i": {"dtype": "i32", "count": 4, "role": "state", "init": {"fill": -2.7}},
           "r": {"dtype": "f32", "count": 4, "role": "state", "init": {"arange": [0.5, 0.25]}},
           "z": {"dtype": "i16", "count": 4, "role": "state"},
           "k": {"dtype": "i64", "count": 3, "role": "state", "init": {"arange": [9007199254740993, -1]}})"));
  auto as = [&](int b, size_t i, auto v) {
    std::vector<unsigned char> bytes = wl::initial_bytes(w, static_cast<size_t>(b));
    std::memcpy(&v, bytes.data() + i * sizeof(v), sizeof(v));
    return v;
  };
  EXPECT_EQ(as(2, 3, int32_t()), -2);  // toward zero
  EXPECT_EQ(as(3, 3, float()), 1.25f);
  EXPECT_EQ(as(4, 2, int16_t()), 0);
  EXPECT_EQ(as(5, 2, int64_t()), 9007199254740991);  // exact in integers
}

TEST(WorkloadInit, FileInit) {
  const std::string dir = encore_test::fresh_dir("encore_wl_init", "file").string();
  {
    std::ofstream f(dir + "/wl_init.bin", std::ios::binary);
    int32_t v[3] = {7, -8, 9};
    f.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  wl::Workload w = wl::parse(base(R"(, "f": {"dtype": "i32", "count": 3, "role": "const", "init": {"file": "wl_init.bin"}})"), dir);
  std::vector<unsigned char> b = wl::initial_bytes(w, 2);
  int32_t v;
  std::memcpy(&v, b.data() + 4, 4);
  EXPECT_EQ(v, -8);
  try {
    wl::parse(base(R"(, "f": {"dtype": "i32", "count": 4, "role": "const", "init": {"file": "wl_init.bin"}})"), dir);
    ADD_FAILURE();
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), "buffers.f.init.file");
  }
}

// "files": an input rotates through several files as generated sets rotate (set k: file k mod n)
TEST(WorkloadInit, FilesRotateLikeInputSets) {
  const std::string dir = encore_test::fresh_dir("encore_wl_init", "files").string();
  for (int k = 0; k < 2; ++k) {
    std::ofstream f(dir + "/wl_set" + std::to_string(k) + ".bin", std::ios::binary);
    int32_t v[3] = {10 * k, 10 * k + 1, 10 * k + 2};
    f.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  wl::Workload w = wl::parse(
      base(R"(, "f": {"dtype": "i32", "count": 3, "role": "input", "init": {"files": ["wl_set0.bin", "wl_set1.bin"]}})"), dir);
  EXPECT_EQ(w.buffers[2].init.kind, wl::Init::Kind::file);
  ASSERT_EQ(w.buffers[2].init.files.size(), 2u);
  for (uint64_t set : {0u, 1u, 2u, 5u}) {
    std::vector<unsigned char> b = wl::initial_bytes(w, 2, set);
    int32_t v;
    std::memcpy(&v, b.data() + 4, 4);
    EXPECT_EQ(v, 10 * int32_t(set % 2) + 1) << "set " << set;
  }
  // each file is checked like a single one, with its own path
  try {
    wl::parse(base(R"(, "f": {"dtype": "i32", "count": 3, "role": "input", "init": {"files": ["wl_set0.bin", "no-such.bin"]}})"), dir);
    ADD_FAILURE();
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), "buffers.f.init.files[1]") << e.what();
  }
  expect_error(base(R"(, "f": {"dtype": "i32", "count": 3, "role": "input", "init": {"files": []}})"), "buffers.f.init.files", "non-empty");
  // only inputs rotate: several files for state would never be read past the first
  try {
    wl::parse(base(R"(, "f": {"dtype": "i32", "count": 3, "role": "state", "init": {"files": ["wl_set0.bin", "wl_set1.bin"]}})"), dir);
    ADD_FAILURE();
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), "buffers.f.init.files") << e.what();
  }
}

TEST(WorkloadCompare, Tolerance) {
  float a[4] = {1.0f, NAN, 0.0f, INFINITY}, b[4] = {1.0001f, NAN, -0.0f, INFINITY};
  auto p = [](float* x) { return reinterpret_cast<const unsigned char*>(x); };
  wl::Diff bit = wl::compare(encore::DType::f32, p(a), p(b), 4, {});
  EXPECT_EQ(bit.count, 2u);  // 1 vs 1.0001, 0 vs -0 (bitwise); NaN payloads equal here
  EXPECT_EQ(bit.first, 0u);
  EXPECT_EQ(wl::compare(encore::DType::f32, p(a), p(b), 4, {false, 1e-3, 0}).count, 0u);
  EXPECT_EQ(wl::compare(encore::DType::f32, p(a), p(b), 4, {false, 1e-5, 0}).count, 1u);
  float c[1] = {NAN}, d[1] = {1.0f};
  EXPECT_EQ(wl::compare(encore::DType::f32, p(c), p(d), 1, {false, 1, 1}).count, 1u);  // NaN agrees only with NaN
  int64_t x[1] = {INT64_MAX}, y[1] = {INT64_MAX - 1};
  EXPECT_EQ(wl::compare(encore::DType::i64, reinterpret_cast<unsigned char*>(x), reinterpret_cast<unsigned char*>(y), 1, {false, 0, 0.5}).count, 1u);
  EXPECT_EQ(wl::compare(encore::DType::i64, reinterpret_cast<unsigned char*>(x), reinterpret_cast<unsigned char*>(y), 1, {false, 0, 1}).count, 0u);
}
