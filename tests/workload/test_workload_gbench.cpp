// encore-bench over several workloads: one summary table, and Google Benchmark JSON
// (--format gbench) with what libbenchmark-tools' compare.py reads. compare.py itself runs when
// python3 with scipy and /usr/share/benchmark/compare.py are present.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "encore/encore.hpp"
#include "workload_test_util.hpp"
#include "workload/json_tree.hpp"

namespace wl = encore::workload;
using wl::detail::JNode;

namespace {

using namespace encore_test;

const JNode* member(const JNode& n, const std::string& key) {
  for (const auto& [k, v] : n.members)
    if (k == key) return &v;
  return nullptr;
}

double number(const JNode& n) { return n.num == JNode::Num::f64 ? n.d : n.num == JNode::Num::u64 ? double(n.u) : double(n.i); }

bool devices() { return !encore::Device::list().empty(); }

}  // namespace

TEST(WorkloadGbench, SeveralWorkloadsPrintOneTable) {
  if (!devices()) GTEST_SKIP() << "no OpenCL device";
  BenchRun r = bench({"run", kData + "small.json", kData + "vars.json", "--calls", "3", "--device", "CL:0"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::string out = r.out;  // the table alone: stderr is not part of it
  EXPECT_NE(out.find("workload"), std::string::npos) << out;
  EXPECT_NE(out.find("speedup"), std::string::npos) << out;
  EXPECT_NE(out.find("\nsmall-all-features "), std::string::npos) << out;
  EXPECT_EQ(out.find("compared,"), std::string::npos) << "several workloads print the summary, not each full report";
  // a folder stands for its .json files
  const std::filesystem::path dir = encore_test::fresh_dir("encore_gbench", "dir");
  std::filesystem::copy_file(kData + "vars.json", dir / "a.json");
  std::filesystem::copy_file(kData + "vars.json", dir / "b.json");
  std::ofstream(dir / "notes.txt") << "not a workload";
  r = bench({"run", dir.string(), "--calls", "2", "--device", "CL:0"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  out = r.out;
  size_t rows = 0;
  for (size_t at = 0; (at = out.find('\n', at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 3u) << out;  // header + two workloads
  std::filesystem::remove_all(dir / "a.json");
  std::filesystem::remove_all(dir / "b.json");
  EXPECT_EQ(bench({"run", dir.string()}).rc, 2) << "a folder without workloads is a command-line error";
}

TEST(WorkloadGbench, JsonHasWhatCompareReads) {
  if (!devices()) GTEST_SKIP() << "no OpenCL device";
  const std::filesystem::path tmp = encore_test::fresh_dir("encore_gbench", "json");
  const std::string file = (tmp / "encore_gbench.json").string();
  ASSERT_EQ(bench({"run", kData + "small.json", kData + "vars.json", "--calls", "3", "--device", "CL:0", "--format", "gbench", "--json", file}).rc, 0);
  const JNode root = wl::detail::parse_json(read_text(file));
  const JNode* ctx = member(root, "context");
  ASSERT_TRUE(ctx);
  for (const char* k : {"date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "caches", "library_build_type"})
    EXPECT_TRUE(member(*ctx, k)) << "context." << k;
  EXPECT_GE(number(*member(*ctx, "num_cpus")), 1);
  EXPECT_EQ(member(*ctx, "caches")->kind, JNode::Kind::array);
  const JNode* benchmarks = member(root, "benchmarks");
  ASSERT_TRUE(benchmarks);
  ASSERT_EQ(benchmarks->elems.size(), 4u);  // eager + replay per workload
  const char* names[] = {"small-all-features/eager", "small-all-features/replay", "variables-sizes-dtypes/eager", "variables-sizes-dtypes/replay"};
  for (size_t i = 0; i < 4; ++i) {
    const JNode& b = benchmarks->elems[i];
    for (const char* k : {"name", "run_name", "run_type", "repetitions", "threads", "iterations", "real_time", "cpu_time", "time_unit",
                          "items", "items_pruned", "temp_bytes_planned", "temp_bytes_naive"})
      ASSERT_TRUE(member(b, k)) << names[i] << ": no " << k;
    EXPECT_EQ(member(b, "name")->str, names[i]);
    EXPECT_EQ(member(b, "run_type")->str, "iteration");
    EXPECT_EQ(member(b, "time_unit")->str, "us");
    EXPECT_GE(number(*member(b, "iterations")), 3);
    EXPECT_GT(number(*member(b, "real_time")), 0);
    EXPECT_GT(number(*member(b, "cpu_time")), 0);
    EXPECT_GT(number(*member(b, "items")), 0);
  }
  const std::string compare = "/usr/share/benchmark/compare.py";
  if (std::filesystem::exists(compare) && std::system("python3 -c 'import scipy' >/dev/null 2>&1") == 0) {
    const std::string out = (tmp / "encore_compare.txt").string();
    ASSERT_EQ(std::system(("python3 " + compare + " benchmarks " + file + " " + file + " > " + out + " 2>&1").c_str()), 0);
    const std::string report = read_text(out);
    EXPECT_NE(report.find("small-all-features/replay"), std::string::npos) << report;
  }
}

TEST(WorkloadGbench, UnknownFormatIsAnError) {
  EXPECT_EQ(bench({"run", kData + "small.json", "--format", "csv"}).rc, 2);
}
