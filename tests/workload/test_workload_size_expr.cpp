// Expression sizes in workload files ({"expr": "16*((n-i)/16-1)"} beside the {"var","mul","add"}
// form): parsing and its errors (each naming its JSON path), a run through encore-bench where eager
// and replay must agree, and save_workload writing an expression size back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;

namespace {

using namespace encore_test;

// One launch of `mark` with the given global (and local) sizes; variables n and i.
std::string doc(const std::string& global, const std::string& local = "", const std::string& vars = "") {
  return R"({"format": "encore.workload/1", "name": "sizes",
    "programs": {"p": {"source": "__kernel void mark(__global int* o, int tag) { o[get_global_id(0)] = tag + (int)get_global_size(0); }"}},
    "buffers": {"o": {"dtype": "i32", "count": 512, "role": "state"}},
    "variables": {)" + (vars.empty() ? R"("n": {"min": 16, "max": 256, "values": [256, 200, 16, 97]},
                  "i": {"min": 0, "max": 256, "values": [0, 32, 64, 240, 256]})" : vars) + R"(},
    "step": [{"launch": "p.mark", "args": ["o", {"i32": 3}], "global": [)" + global + "]" +
         (local.empty() ? "" : R"(, "local": [)" + local + "]") + "}]}";
}

void expect_error(const std::string& json, const std::string& path, const std::string& msg) {
  expect_workload_error([&] { wl::parse(json); }, path, msg);
}

}  // namespace

TEST(WorkloadSizeExpr, ParsesBesideTheAffineForm) {
  wl::Workload w = wl::parse(doc(R"J({"expr": "max(16*((n - i)/16 - 1), 0)"}, {"var": "n", "mul": 2, "add": 1}, 4)J"));
  ASSERT_EQ(w.step[0].global.size(), 3u);
  const wl::SizeExpr& e = w.step[0].global[0];
  EXPECT_EQ(e.expr, "max(16*((n - i)/16 - 1), 0)");
  EXPECT_EQ(e.vars, (std::vector<int>{w.find_variable("n"), w.find_variable("i")}));
  EXPECT_TRUE(w.step[0].global[1].expr.empty());
  EXPECT_EQ(w.step[0].global[1].mul, 2);
  EXPECT_EQ(w.step[0].global[2].add, 4);
  // local sizes take expressions too; every call's global is a multiple of its local
  EXPECT_NO_THROW(wl::parse(doc(R"J({"expr": "ceil_div(n, 16)*16"})J", R"J({"expr": "min(n, 16)"})J")));
}

TEST(WorkloadSizeExpr, ErrorsNameTheirPath) {
  const std::string at = "step[0].global[0].expr";
  expect_error(doc(R"J({"expr": "16*((n-i)/16-1)"})J"), at, "negative");  // over the ranges, as a capture would refuse
  expect_error(doc(R"J({"expr": "n +"})J"), at, "position 3");
  expect_error(doc(R"J({"expr": "n * k"})J"), at, "\"k\"");
  expect_error(doc(R"J({"expr": "n / (i - 3)"})J"), at, "divide by zero");
  expect_error(doc(R"J({"expr": 16})J"), at, "string");
  expect_error(doc(R"J({"expr": "n", "add": 1})J"), "step[0].global[0].add", "unknown key");
  expect_error(doc(R"J({"expr": "n*f"})J", "", R"J("n": {"min": 1, "max": 8, "values": [1]}, "f": {"type": "f32", "values": [0.5]})J"), at,
               "float variable");
  expect_error(doc(R"J({"expr": "ceil_div(n, 16)*16"})J", R"J({"expr": "max(n - i, 0)"})J"), "step[0].local[0].expr", "below 1");
  // a call whose global is not a multiple of its local
  expect_error(doc(R"J({"expr": "max(n, 16)"})J", R"J({"expr": "min(n, 16)"})J"), "step[0].global[0]", "multiple");
}

TEST(WorkloadSizeExpr, RunsEagerEqualToReplay) {
  const std::string file = (encore_test::fresh_dir("encore_wl_size_expr", "doc") / "step.json").string();
  {
    std::ofstream f(file);
    f << doc(R"J({"expr": "max(16*((n - i)/16 - 1), 0)"})J");
  }
  std::string out;
  EXPECT_EQ(bench({"check", file, "--device", "NULL"}, &out), 0) << out;
  EXPECT_EQ(bench({"run", file, "--device", "NULL", "--calls", "8", "--rotate", "1"}, &out), 0) << out;
  if (!encore::Device::list().empty()) {
    EXPECT_EQ(bench({"run", file, "--calls", "12", "--rotate", "1"}, &out), 0) << out;
  }
  std::filesystem::remove(file);
}

TEST(WorkloadSizeExpr, SaveWritesExpressionsBack) {
  encore::Device dev = encore::Device::open("NULL");
  encore::Program p = dev.compile("__kernel void mark(__global int* o, int tag) { o[get_global_id(0)] = tag; }");
  encore::Variable n{"n", 16, 256}, i{"i", 0, 256}, odd{"odd name", 1, 4};
  encore::Buffer o = dev.alloc<int32_t>(512);
  n.bind(200);
  i.bind(32);
  odd.bind(2);
  encore::Capture cap;
  dev.launch(p.kernel("mark"), {max(16 * ((n - i) / 16 - 1), 0), ceil_div(n, odd)}, {}, o, 3);
  dev.launch(p.kernel("mark"), {n * 2 + 1}, {}, o, 4);
  encore::ExecutionUnit unit = cap.end();
  const auto dir = fresh_dir("encore_wl_size_expr", "save");
  wl::save_workload(unit, dir / "s.json");
  wl::Workload w = wl::load(dir / "s.json");
  ASSERT_EQ(w.step.size(), 2u);
  EXPECT_EQ(w.step[0].global[0].expr, "max(16*((n-i)/16-1), 0)");
  // "odd name" cannot appear in an expression's text: the file names it anew
  const std::string& g1 = w.step[0].global[1].expr;
  EXPECT_EQ(g1.rfind("ceil_div(n, ", 0), 0u) << g1;
  EXPECT_EQ(g1.find("odd name"), std::string::npos) << g1;
  EXPECT_TRUE(w.step[1].global[0].expr.empty());  // the affine form stays {"var", "mul", "add"}
  EXPECT_EQ(w.step[1].global[0].mul, 2);
  std::string out;
  EXPECT_EQ(bench({"run", (dir / "s.json").string(), "--device", "NULL", "--calls", "3", "--rotate", "1"}, &out), 0) << out;
  std::filesystem::remove_all(dir);
}
