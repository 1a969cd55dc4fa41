// encore-bench end to end, in process (bench_main): exit codes, the report fields, dumps, every
// class of invalid file (exit 2 and the JSON path in the message). Tiny workloads, few calls.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "encore/profile.hpp"
#include "encore/workload.hpp"
#include "test_util.hpp"
#include "workload_test_util.hpp"
#include "workload/json_tree.hpp"

namespace wl = encore::workload;

namespace {

using namespace encore_test;

// under this process's own folder (removed at exit): two test runs at once never share a file
std::string temp_path(const std::string& name) {
  static const std::filesystem::path dir = encore_test::fresh_dir("encore_wl_run", "files");
  return (dir / name).string();
}

// The report's JSON fields, as numbers (strings and null are skipped).
std::map<std::string, double> report_fields(const std::string& file) {
  wl::detail::JNode root = wl::detail::parse_json(read_text(file));
  std::map<std::string, double> m;
  for (const auto& [k, v] : root.members)
    if (v.kind == wl::detail::JNode::Kind::number) m[k] = v.d;
    else if (v.kind == wl::detail::JNode::Kind::boolean) m[k] = v.b;
  return m;
}

template <class T> T element(const std::vector<unsigned char>& b, size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

TEST(WorkloadRun, SmallAgreesAndReports) {
  std::string json = temp_path("small.json");
  BenchRun r = bench({"run", kData + "small.json", "--calls", "4", "--rotate", "2", "--json", json});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("agree"), std::string::npos) << r.out;
  auto f = report_fields(json);
  for (const char* k : {"items", "items_replayed", "items_pruned", "eager_step_us", "replay_step_us", "speedup", "capture_ms",
                        "temp_bytes_naive", "temp_bytes_planned", "temp_bytes_lower_bound", "mismatches"})
    EXPECT_TRUE(f.count(k)) << k;
  EXPECT_FALSE(f.count("batches"));  // no batching yet: no field that is always 0
  EXPECT_EQ(r.out.find("batch"), std::string::npos) << r.out;
  EXPECT_EQ(f["items"], 7);
  EXPECT_EQ(f["items_replayed"], f["items"] - f["items_pruned"]);
  EXPECT_EQ(f["items_pruned"], 1);  // make_table: reads a const, writes its own state once
  EXPECT_EQ(f["mismatches"], 0);
  EXPECT_GT(f["eager_step_us"], 0);
  EXPECT_GT(f["replay_step_us"], 0);
  EXPECT_LE(f["temp_bytes_lower_bound"], f["temp_bytes_planned"]);
  EXPECT_LE(f["temp_bytes_planned"], f["temp_bytes_naive"]);
  EXPECT_EQ(f["temp_bytes_naive"], 1024);  // t: 256 f32, already a multiple of the alignment
}

// --trace: a Chrome trace of the run, with the capture phases and the eager and replayed items.
TEST(WorkloadRun, TraceFile) {
  std::string trace = temp_path("trace.json");
  BenchRun r = bench({"run", kData + "small.json", "--calls", "4", "--rotate", "2", "--trace", trace});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::vector<unsigned char> b = read_bytes(trace);
  std::string text(b.begin(), b.end());
  wl::detail::JNode root = wl::detail::parse_json(text);  // well-formed JSON
  for (const char* s : {"\"traceEvents\"", "\"cat\":\"replay\"", "\"cat\":\"eager\"", "\"name\":\"record\"", "\"name\":\"bind\""})
    EXPECT_NE(text.find(s), std::string::npos) << s;
  EXPECT_FALSE(encore::profile::active());
}

TEST(WorkloadRun, OptionsMapToJit) {
  std::string json = temp_path("opts.json");
  BenchRun r = bench({"run", kData + "small.json", "--calls", "3", "--no-prune", "--no-plan", "--json", json});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto f = report_fields(json);
  EXPECT_EQ(f["prune"], 0);
  EXPECT_EQ(f["plan"], 0);
  EXPECT_FALSE(f.count("batch"));
  EXPECT_EQ(f["items_pruned"], 0);
  EXPECT_EQ(f["items_replayed"], 7);
}

// --concurrent on bench/workloads/attention_heads.json (four attention heads, plain kernels without
// const): eager and the concurrent replay agree bitwise, the report says concurrent and the five
// chains (the heads' projections) that inferred access and the arena kept apart give it; in order
// the planner packs the heads' temps and orders them (fewer chains, fewer arena bytes).
TEST(WorkloadRun, ConcurrentAttentionAgreesAndReportsChains) {
  if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
  const std::string file = std::string(ENCORE_TEST_DATA) + "/../bench/workloads/attention_heads.json";
  std::string on = temp_path("attn_on.json"), off = temp_path("attn_off.json");
  BenchRun r = bench({"run", file, "--calls", "5", "--concurrent", "--json", on});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  BenchRun q = bench({"run", file, "--calls", "5", "--json", off});
  ASSERT_EQ(q.rc, 0) << q.out << q.err;
  auto f = report_fields(on), g = report_fields(off);
  EXPECT_EQ(f["concurrent"], 1);
  EXPECT_EQ(g["concurrent"], 0);
  EXPECT_EQ(f["mismatches"], 0);
  EXPECT_EQ(f["items"], 25);
  EXPECT_EQ(f["chains"], 5);
  EXPECT_EQ(f["longest_chain"], 5) << "a head's projection, scores, softmax, weighted sum, then the output projection";
  EXPECT_LT(g["chains"], f["chains"]);
  EXPECT_EQ(g["longest_chain"], 17) << "in order the packed temps chain the heads";
  EXPECT_LT(g["temp_bytes_planned"], f["temp_bytes_planned"]);
  EXPECT_NE(r.out.find("concurrent"), std::string::npos) << r.out;
}

TEST(WorkloadRun, DumpHoldsStateAndLastOutputs) {
  std::string dir = temp_path("dump");
  std::filesystem::remove_all(dir);
  const int calls = 5;
  BenchRun r = bench({"run", kData + "small.json", "--calls", std::to_string(calls), "--dump", dir});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  for (const char* n : {"s", "table", "counter", "y", "sums"}) EXPECT_TRUE(std::filesystem::exists(dir + "/" + n + ".bin")) << n;
  EXPECT_FALSE(std::filesystem::exists(dir + "/t.bin"));  // temps are not dumped
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.bin"));  // nor inputs
  EXPECT_EQ(element<int32_t>(read_bytes(dir + "/counter.bin"), 0), 7 + calls);  // state advanced once per call
  // y = x·lr + 0.25·i + n for the last call (index 4: input set 4 % 3 = 1, lr = values[0], n = values[1])
  wl::Workload w = wl::load(kData + "small.json");
  std::vector<unsigned char> x = wl::initial_bytes(w, 0, 1), y = read_bytes(dir + "/y.bin");
  ASSERT_EQ(y.size(), 1024u);
  for (size_t i = 0; i < 256; ++i)
    EXPECT_NEAR(element<float>(y, i), element<float>(x, i) * 0.5f + 0.25f * static_cast<float>(i) + 2.0f, 1e-5) << i;
  std::vector<unsigned char> sums = read_bytes(dir + "/sums.bin");
  float total = 0;
  for (size_t i = 0; i < 256; ++i) total += element<float>(y, i);
  EXPECT_NEAR(element<float>(sums, 0) + element<float>(sums, 1), total, 1e-2);
}

TEST(WorkloadRun, VariablesSizesAndDtypes) {
  std::string dir = temp_path("dump_vars");
  std::filesystem::remove_all(dir);
  BenchRun r = bench({"run", kData + "vars.json", "--calls", "3", "--dump", dir});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::vector<unsigned char> y = read_bytes(dir + "/y.bin");
  EXPECT_EQ(element<int64_t>(y, 0), 7);    // last call (2) binds n = values[2]
  EXPECT_EQ(element<int64_t>(y, 1), 500);  // lr = values[0]
  EXPECT_EQ(element<int64_t>(y, 2), 7);    // the same variable passed as u32
  std::vector<unsigned char> never = read_bytes(dir + "/never.bin"), some = read_bytes(dir + "/some.bin");
  EXPECT_EQ(element<int32_t>(never, 0), 3);  // a size-0 launch does nothing
  EXPECT_EQ(element<int32_t>(some, 0), 99);  // k = 2 on call 1: two elements
  EXPECT_EQ(element<int32_t>(some, 1), 99);
  EXPECT_EQ(element<int32_t>(some, 2), -1);
  wl::Workload w = wl::load(kData + "vars.json");
  EXPECT_EQ(read_bytes(dir + "/hb.bin"), wl::initial_bytes(w, static_cast<size_t>(w.find_buffer("h"))));  // f16 bits copied as u16
  std::vector<unsigned char> bytes = wl::initial_bytes(w, static_cast<size_t>(w.find_buffer("bytes")), 2 % 3);
  std::vector<unsigned char> wide = read_bytes(dir + "/wide.bin");
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(element<int16_t>(wide, i), bytes[i] * 3);
}

TEST(WorkloadRun, NullDevice) {
  BenchRun r = bench({"run", kData + "small.json", "--device", "NULL", "--calls", "3"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

// A state of 1 TiB: more than the host has is the file's error with the buffer's path, said before
// any allocation (it ended as a bare std::bad_alloc).
TEST(WorkloadRun, StateLargerThanTheHostIsAFileError) {
  std::ifstream in(kData + "small.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto swap = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  swap("\"small.cl\"", "\"" + kData + "small.cl\"");
  swap("\"counter\": {\"dtype\": \"i32\", \"count\": 1,", "\"counter\": {\"dtype\": \"i32\", \"count\": 274877906944,");
  const std::string file = temp_path("huge_state.json");
  std::ofstream(file) << text;
  BenchRun r = bench({"run", file, "--device", "NULL", "--calls", "2"});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("buffers.counter.count: 274877906944 x i32 = 1099511627776 bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("do not fit in this host's memory"), std::string::npos) << r.err;
}

TEST(WorkloadRun, MismatchExitsOneAndNamesIt) {
  // Corrupt the jit's output of call 2 (a replay) to check detection and the message.
  BenchRun r = bench({"run", kData + "small.json", "--calls", "3"}, [](wl::RunOptions& o) {
    o.after_jit_call = [](size_t call, const std::vector<encore::Buffer>& outs) {
      if (call != 2) return;
      std::vector<float> v = outs[0].copyout<float>();
      v[17] += 1;
      outs[0].copyin(v);
    };
  });
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("call 2, buffer \"y\", index 17: eager "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("DIFFER"), std::string::npos) << r.out;
}

TEST(WorkloadRun, CheckValid) {
  EXPECT_EQ(bench({"check", kData + "small.json"}).rc, 0);
  EXPECT_EQ(bench({"check", kData + "vars.json"}).rc, 0);
  for (const auto& e : std::filesystem::directory_iterator(std::string(ENCORE_TEST_DATA) + "/../bench/workloads")) {
    if (e.path().extension() != ".json") continue;  // NAME.data folders of saved workloads
    BenchRun r = bench({"check", e.path().string()});
    EXPECT_EQ(r.rc, 0) << e.path() << r.err;
  }
}

TEST(WorkloadRun, CommandLineErrors) {
  EXPECT_EQ(bench({"run"}).rc, 2);
  EXPECT_EQ(bench({"frobnicate", kData + "small.json"}).rc, 2);
  EXPECT_EQ(bench({"run", kData + "small.json", "--calls", "0"}).rc, 2);
  EXPECT_EQ(bench({"run", kData + "small.json", "--bogus"}).rc, 2);
  EXPECT_EQ(bench({"run", kData + "small.json", "--calls", "x"}).rc, 2);
  EXPECT_EQ(bench({"--help"}).rc, 0);
  BenchRun r = bench({"run", kData + "small.json", "--device", "CL:99"});
  EXPECT_EQ(r.rc, 2);  // a device error
  EXPECT_EQ(bench({"check", kData + "no_such_workload.json"}).rc, 2);
}

// One test per invalid-file class of issue 5: exit 2, and the message names the JSON path.
struct InvalidCase {
  const char* file;
  const char* path;
  const char* words;
};
class WorkloadInvalid : public testing::TestWithParam<InvalidCase> {};

TEST_P(WorkloadInvalid, ExitsTwoWithPath) {
  const InvalidCase& c = GetParam();
  BenchRun r = bench({"check", kData + c.file});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(std::string(c.path) + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
  BenchRun run = bench({"run", kData + c.file, "--calls", "2"});
  EXPECT_EQ(run.rc, 2) << run.err;
}

INSTANTIATE_TEST_SUITE_P(
    Classes, WorkloadInvalid,
    testing::Values(InvalidCase{"invalid_unknown_key.json", "buffers.a.cuont", "unknown key"},
                    InvalidCase{"invalid_duplicate_key.json", "name", "duplicate key"},
                    InvalidCase{"invalid_unknown_buffer.json", "step[0].args[1]", "unknown buffer \"w9\""},
                    InvalidCase{"invalid_arg_count.json", "step[0].args", "takes 2 arguments, got 3"},
                    InvalidCase{"invalid_arg_kind.json", "step[0].args[1]", "which takes f32"},
                    InvalidCase{"invalid_const_write.json", "step[0].args[1]", "const buffer \"c\""},
                    InvalidCase{"invalid_pointee_type.json", "step[0].args[0]", "which takes f64 elements"},
                    InvalidCase{"invalid_copy_size.json", "step[1].copy", "sizes differ"},
                    InvalidCase{"invalid_dtype.json", "buffers.b.dtype", "unknown dtype \"float32\""},
                    InvalidCase{"invalid_count_zero.json", "buffers.b.count", "must be > 0"},
                    InvalidCase{"invalid_init_on_output.json", "buffers.b.init", "takes no init"},
                    InvalidCase{"invalid_variable_bounds.json", "variables.n.values[1]", "outside the bounds"},
                    InvalidCase{"invalid_misaligned_view.json", "step[0].args[0].offset", "alignment"},
                    InvalidCase{"invalid_source_file.json", "programs.p.source_file", "no such file"},
                    InvalidCase{"invalid_compile.json", "programs.p", "undefined_name"},
                    InvalidCase{"invalid_read_before_write.json", "step[0].args[0]",
                                "kernel copy_in parameter 0 (const float* a) reads temp \"t\" before any item writes it"}),
    [](const testing::TestParamInfo<InvalidCase>& i) {
      std::string n = i.param.file;
      n = n.substr(8, n.size() - 13);
      return n;
    });
