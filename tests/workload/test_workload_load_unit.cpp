// load_unit: a step captured by a TinyJit, saved with its programs' binaries, loaded as a unit that
// replays at its first call. With a private, empty program cache the programs must come from the
// saved binaries (no compile from source, no "compiling from source" line), and the first and
// second runs must equal the same steps run eagerly. An edited key, a damaged binary and one the
// driver rejects each fall back to source with a line saying why, and still give equal results.
// The NULL device saves no binaries and loads as well.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "encore/encore.hpp"
#include "encore/log.hpp"
#include "encore/workload.hpp"
#include "testing.hpp"
#include "workload/binary.hpp"
#include "workload/runner.hpp"
#include "test_util.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;
using encore::Buffer;
using encore::DType;

namespace {

using namespace encore_test;

constexpr size_t N = 512;

// fill_table writes a temp no input reaches (one-time: pruned from replay, so a loaded unit must
// run it at its first run); axpy reads the input and the table and advances a state.
const char* kSrc = R"CL(
__kernel void fill_table(__global float* t) { size_t i = get_global_id(0); t[i] = 0.5f + 0.25f * (float)(i % 7); }
__kernel void axpy(__global const float* x, __global const float* t, __global float* st, __global float* out, float k) {
  size_t i = get_global_id(0);
  st[i] += x[i] * t[i] * k;
  out[i] = st[i] * 2.0f - x[i];
}
)CL";

std::vector<unsigned char> bytes_of(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  b.copyout_bytes(v.data(), v.size());
  return v;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::filesystem::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << s;
}

// What the saved state gives when its step runs eagerly once and twice.
struct Expected {
  std::vector<unsigned char> out1, st1, out2, st2;
};

// Captures the step through a TinyJit (3 calls), saves its unit to `file` and runs the same step
// eagerly twice more from the saved state. Every handle is let go before it returns, so a later
// load cannot reuse a live program of this process.
Expected capture_and_save(const encore::Device& dev, const std::filesystem::path& file) {
  encore::Program p = dev.compile(kSrc);
  encore::Kernel fill = p.kernel("fill_table"), axpy = p.kernel("axpy");
  Buffer x = dev.alloc<float>(N), st = dev.alloc<float>(N);
  x.set_name("x");
  st.set_name("st");
  std::vector<float> xs(N), ss(N);
  for (size_t i = 0; i < N; ++i) xs[i] = 0.125f * static_cast<float>(i % 13), ss[i] = static_cast<float>(i) * 0.01f;
  x.copyin(xs);
  st.copyin(ss);
  auto step = [&](const Buffer& in) {
    Buffer t = dev.alloc<float>(N);
    dev.launch(fill, {N}, {}, t);
    Buffer out = dev.alloc<float>(N);
    out.set_name("out");
    dev.launch(axpy, {N}, {}, in, t, st, out, 0.75f);
    return out;
  };
  encore::TinyJit jit(step);
  for (int c = 0; c < 3; ++c) jit(x);
  const encore::ExecutionUnit* u = jit.unit_for(x);
  EXPECT_TRUE(u && *u);
  EXPECT_GE(u->stats().items_pruned, 1u) << "fill_table should be one-time";
  wl::save_workload(*u, file);
  Expected e;
  Buffer o = step(x);
  e.out1 = bytes_of(o);
  e.st1 = bytes_of(st);
  o = step(x);
  e.out2 = bytes_of(o);
  e.st2 = bytes_of(st);
  return e;
}

bool said(LogCapture& log, const std::string& part) { return log.text().find(part) != std::string::npos; }

// Loading `file` says `why` through the log.
void expect_load_says(const encore::Device& dev, const std::filesystem::path& file, const std::string& why) {
  LogCapture log;
  (void)wl::load_unit(dev, file);
  EXPECT_TRUE(said(log, why)) << log.text();
}

// Loads `file` and checks two runs against the eager steps.
void expect_runs_equal(const encore::Device& dev, const std::filesystem::path& file, const Expected& e, bool from_binary) {
  LogCapture log;
  wl::LoadedUnit lu = wl::load_unit(dev, file);
  ASSERT_TRUE(lu.unit);
  if (from_binary) {
    EXPECT_TRUE(lu.from_source.empty()) << lu.from_source.front();
    EXPECT_FALSE(said(log, "compiling from source")) << log.text();
  } else {
    EXPECT_EQ(lu.from_source, std::vector<std::string>{"p0"});
    EXPECT_TRUE(said(log, "saved binary not used, compiling from source")) << log.text();
  }
  EXPECT_EQ(lu.unit.num_inputs(), 1u);
  EXPECT_EQ(lu.names.front(), "x");
  EXPECT_GE(lu.unit.stats().items_pruned, 1u);
  lu.unit();
  EXPECT_EQ(bytes_of(lu.buffer("out")), e.out1) << "first run (the one-time fill_table runs in it)";
  EXPECT_EQ(bytes_of(lu.buffer("st")), e.st1);
  lu.unit();
  EXPECT_EQ(bytes_of(lu.buffer("out")), e.out2) << "second run";
  EXPECT_EQ(bytes_of(lu.buffer("st")), e.st2);
  EXPECT_THROW(lu.buffer("nope"), encore::ArgumentError);
}

class LoadUnitCl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
    dev = encore::Device::open("CL:0");
    dir = fresh_dir("encore_load_unit", "cl");
    file = dir / "step.json";
    expected = capture_and_save(dev, file);
  }
  encore::Device dev;
  std::filesystem::path dir, file;
  Expected expected;
};

}  // namespace

TEST_F(LoadUnitCl, FromSavedBinariesWithoutCompiling) {
  ScopedCacheDir cache;  // private and empty: a compile could not be served from it
  const std::string json = slurp(file);
  EXPECT_NE(json.find("\"binary\": {\"file\": \"step.data/p0.clbin\""), std::string::npos) << json;
  ASSERT_TRUE(std::filesystem::exists(dir / "step.data" / "p0.clbin"));
  expect_runs_equal(dev, file, expected, true);
  EXPECT_TRUE(std::filesystem::is_empty(cache.path())) << "nothing was compiled, so nothing was cached";
}

// The sum is written as sum64 ("s64-" and 16 hex digits); a file saved before, with the binary's
// 64-bit FNV-1a (16 hex digits alone), still builds from its binary, and a damage is still seen.
TEST_F(LoadUnitCl, OlderFnvSumStillLoadsTheBinary) {
  ScopedCacheDir cache;
  std::string json = slurp(file);
  const size_t at = json.find("\"sum\": \"s64-");
  ASSERT_NE(at, std::string::npos) << json;
  const std::string bin = slurp(dir / "step.data" / "p0.clbin");
  uint64_t h = 1469598103934665603ull;
  for (char c : bin) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char sum[20];
  std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(h));
  json.replace(at + 8, 20, sum);
  spit(file, json);
  expect_runs_equal(dev, file, expected, true);
  const std::string right = sum;
  sum[0] = sum[0] == '0' ? '1' : '0';
  json.replace(at + 8, 16, sum);
  spit(file, json);
  expect_load_says(dev, file, "does not hold the bytes that were saved (checksum " + right + ", recorded " + sum + ")");
}

TEST_F(LoadUnitCl, EditedKeyCompilesFromSource) {
  ScopedCacheDir cache;
  std::string json = slurp(file);
  const size_t at = json.find("\"key\": \"");
  ASSERT_NE(at, std::string::npos);
  json.insert(at + 8, "another device | ");
  spit(file, json);
  expect_runs_equal(dev, file, expected, false);
  expect_load_says(dev, file, "it was built for \"another device | ");
}

TEST_F(LoadUnitCl, DamagedBinaryCompilesFromSource) {
  ScopedCacheDir cache;
  const std::filesystem::path bin = dir / "step.data" / "p0.clbin";
  std::string b = slurp(bin);
  ASSERT_GT(b.size(), 64u);
  b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x5a);  // a damage the driver might not notice
  spit(bin, b);
  expect_load_says(dev, file, "does not hold the bytes that were saved");
  expect_runs_equal(dev, file, expected, false);
}

TEST_F(LoadUnitCl, BinaryTheDriverRejectsCompilesFromSource) {
  ScopedCacheDir cache;
  // well-formed in the file (its checksum matches) but not a binary: the driver refuses it
  const std::filesystem::path bin = dir / "step.data" / "p0.clbin";
  const std::vector<unsigned char> junk(4096, 0xAB);
  spit(bin, std::string(junk.begin(), junk.end()));
  std::string json = slurp(file);
  const size_t at = json.find("\"sum\": \"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at + 8, 20, wl::detail::binary_sum(junk));
  spit(file, json);
  expect_load_says(dev, file, "the driver rejected it");
  expect_runs_equal(dev, file, expected, false);
}

TEST_F(LoadUnitCl, HarnessStartsFromTheSavedUnitAndFromSource) {
  BenchRun saved = bench({"start", file.string(), "--device", dev.id()});
  EXPECT_EQ(saved.rc, 0) << saved.out << saved.err;
  EXPECT_NE(saved.out.find("0 compiled from source"), std::string::npos) << saved.out;
  EXPECT_NE(saved.out.find("equal to eager"), std::string::npos) << saved.out;
  BenchRun src = bench({"start", file.string(), "--device", dev.id(), "--from-source"});
  EXPECT_EQ(src.rc, 0) << src.out << src.err;
  EXPECT_NE(src.out.find("equal to eager"), std::string::npos) << src.out;
  // and `run` builds the programs from the binaries too, with equal results
  BenchRun run = bench({"run", file.string(), "--device", dev.id(), "--calls", "3", "--rotate", "1"});
  EXPECT_EQ(run.rc, 0) << run.out << run.err;
}

TEST(LoadUnitNull, NoBinariesLoadsAndRuns) {
  encore::Device dev = encore::Device::open("NULL");
  std::filesystem::path dir = fresh_dir("encore_load_unit", "null");
  (void)capture_and_save(dev, dir / "step.json");
  EXPECT_EQ(slurp(dir / "step.json").find("\"binary\""), std::string::npos) << "the NULL device has no binaries";
  wl::LoadedUnit lu = wl::load_unit(dev, dir / "step.json");
  EXPECT_TRUE(lu.from_source.empty());
  EXPECT_NO_THROW(lu.unit());
  EXPECT_NO_THROW(lu.unit());
  EXPECT_EQ(lu.unit.stats().items, 2u);
  BenchRun r = bench({"start", (dir / "step.json").string(), "--device", "NULL"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(LoadUnitNull, ShapesAreRefused) {
  EXPECT_THROW(wl::load_unit(encore::Device::open("NULL"), kData + "shapes.json"), encore::WorkloadError);
}

// encore-bench start reads the file itself (after the timing on the saved unit's path, where
// load_unit reads it): a file with shape sets is refused on both paths.
TEST(LoadUnitNull, StartRefusesShapesOnBothPaths) {
  for (bool from_source : {false, true}) {
    std::vector<std::string> args = {"start", kData + "shapes.json", "--device", "NULL"};
    if (from_source) args.push_back("--from-source");
    BenchRun r = bench(args);
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("shape"), std::string::npos) << r.err;
  }
}

TEST(LoadUnitParse, BinaryEntryIsChecked) {
  auto doc = [](const std::string& binary) {
    return R"({"format": "encore.workload/1", "name": "b", "programs": {"p": {"source": "__kernel void k(__global float* x) {}", "binary": )" + binary +
           R"(}}, "buffers": {"x": {"dtype": "f32", "count": 4, "role": "state"}}, "step": [{"launch": "p.k", "args": [{"buf": "x"}], "global": [4]}]})";
  };
  EXPECT_EQ(wl::parse(doc(R"({"file": "p.clbin", "key": "k", "sum": "s64-0123456789abcdef"})")).programs[0].binary_sum, "s64-0123456789abcdef");
  for (const char* bad : {"s64-0123456789ABCDEF", "s64-0123456789abcde", "s640123456789abcdef", "x64-0123456789abcdef"})
    EXPECT_THROW((void)wl::parse(doc(std::string(R"({"file": "p.clbin", "key": "k", "sum": ")") + bad + "\"}")), encore::WorkloadError) << bad;
  const wl::Workload w = wl::parse(doc(R"({"file": "p.clbin", "key": "k", "sum": "0123456789abcdef"})"), "/somewhere");
  EXPECT_EQ(w.programs[0].binary_file, std::filesystem::path("/somewhere/p.clbin"));
  EXPECT_EQ(w.programs[0].binary_key, "k");
  try {
    (void)wl::parse(doc(R"({"file": "p.clbin", "key": "k", "sum": "XYZ"})"));
    ADD_FAILURE() << "a malformed sum was accepted";
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), "programs.p.binary.sum");
  }
  EXPECT_THROW((void)wl::parse(doc(R"({"file": "p.clbin", "key": "k", "sum": "0123456789abcdef", "extra": 1})")), encore::WorkloadError);
  EXPECT_THROW((void)wl::parse(doc(R"({"file": "p.clbin", "sum": "0123456789abcdef"})")), encore::WorkloadError);
  // a missing binary file falls back to the source (NULL: there is nothing to build anyway)
  EXPECT_NO_THROW(wl::validate(w, encore::Device::open("NULL")));
}

// load_unit makes the file's buffers on a thread of its own while the programs build: an error
// from either side still reaches the caller, the compile's first (it is what the file gets wrong
// first), and the buffers made meanwhile are freed (ASan in CI).
TEST(LoadUnitNull, ErrorsFromTheBuildAndFromTheBuffersMadeBesideIt) {
  encore::Device dev = encore::Device::open("NULL");
  std::filesystem::path dir = fresh_dir("encore_load_unit", "errors");
  auto doc = [&](const char* kernel, const char* count) {
    const std::filesystem::path f = dir / (std::string(kernel) + "_" + count + ".json");
    spit(f, std::string(R"({"format": "encore.workload/1", "name": "e", "programs": {"p": {"source": "__kernel void k(__global float* x) {}"}},)") +
                R"( "buffers": {"x": {"dtype": "f32", "count": )" + count + R"(, "role": "state"}, "y": {"dtype": "f32", "count": 64, "role": "input"}},)" +
                R"( "step": [{"launch": "p.)" + kernel + R"(", "args": [{"buf": "x"}], "global": [4]}, {"launch": "p.k", "args": [{"buf": "y"}], "global": [4]}]})");
    return f;
  };
  auto message = [&](const std::filesystem::path& f) {
    try {
      (void)wl::load_unit(dev, f);
    } catch (const encore::WorkloadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string huge = "274877906944";  // 1 TiB of f32: more than any host here
  EXPECT_NE(message(doc("nope", "4")).find("nope"), std::string::npos) << "the build's side";
  EXPECT_NE(message(doc("k", huge.c_str())).find("do not fit in this host's memory"), std::string::npos) << "the buffers' side";
  const std::string both = message(doc("nope", huge.c_str()));
  EXPECT_NE(both.find("nope"), std::string::npos) << both;
  EXPECT_EQ(both.find("do not fit"), std::string::npos) << both;
  {
    // where no thread can be started, the buffers are made after the build, on the caller's
    // thread, and a build that fails never makes them: load_unit itself (its file is compiled
    // again for the tests, with the switch); then its step alone, whose build counts the buffers
    // asked of the device so far
    struct NoThreads {
      NoThreads() { encore::testing::fail_thread_start = true; }
      ~NoThreads() { encore::testing::fail_thread_start = false; }
    } no_threads;
    auto served = [&] {  // the buffers asked of the device: allocations made and served from its cache
      const encore::AllocatorStats st = dev.allocator_stats();
      return st.allocations + st.reuses;
    };
    const uint64_t deferred = encore::testing::beside_deferred;
    const size_t before_failed = served();
    EXPECT_NE(message(doc("nope", "4")).find("nope"), std::string::npos) << "the build's side, no thread";
    EXPECT_EQ(served(), before_failed) << "a build that failed made buffers";
    EXPECT_NE(message(doc("k", huge.c_str())).find("do not fit in this host's memory"), std::string::npos) << "the buffers' side, no thread";
    const std::string first = message(doc("nope", huge.c_str()));
    EXPECT_NE(first.find("nope"), std::string::npos) << first;
    EXPECT_EQ(first.find("do not fit"), std::string::npos) << first;
    {
      wl::LoadedUnit alone = wl::load_unit(dev, doc("k", "4"));
      EXPECT_EQ(alone.unit.num_inputs(), 1u);
      EXPECT_NO_THROW(alone.unit());
    }
    EXPECT_EQ(encore::testing::beside_deferred - deferred, 4u) << "load_unit made its buffers on the caller's thread";
    // made after the build, not before it: the build finds none of them asked of the device
    const wl::Workload w = wl::load(doc("k", "1000"));
    const size_t before = served();
    size_t at_build = 0;
    auto [c, initial] = wl::detail::compile_beside_buffers(w, dev, [&] {
      at_build = served();
      return wl::validate(w, dev);
    });
    EXPECT_EQ(at_build, before) << "a buffer was made before the build";
    EXPECT_EQ(served() - before, 2u) << "the state and the input buffer, made after it";
    EXPECT_EQ(initial.resident.size(), 2u);
    EXPECT_EQ(initial.inputs.size(), 1u);
    EXPECT_EQ(encore::testing::beside_deferred - deferred, 5u);
  }
  // and the same device loads a good file afterwards
  wl::LoadedUnit lu = wl::load_unit(dev, doc("k", "4"));
  EXPECT_EQ(lu.unit.num_inputs(), 1u);
  EXPECT_NO_THROW(lu.unit());
}
