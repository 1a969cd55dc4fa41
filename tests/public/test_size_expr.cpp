// Issue 19 item 4: launch sizes as small integer expressions of Variables (+ - *, floor and ceiling
// division, min, max), through the public headers: their arithmetic (never wrapping), ranges, text
// form; eager == replay over a random sweep of variable values on NULL and OpenCL; the blocked
// factorisation shape; errors at capture for expressions that some values in the ranges break;
// check-then-commit when a unit's variable changes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "encore/profile.hpp"
#include "test_util.hpp"

namespace {

using encore::ArgumentError;
using encore::BoundVar;
using encore::JitError;
using encore::Size;
using encore::Sizes;
using encore::Variable;

bool contains(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }

// Reference arithmetic in __int128: the exact value, so a wrap in encore's int64 would differ.
__int128 floor_div_ref(__int128 a, __int128 b) {
  __int128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__int128 ceil_div_ref(__int128 a, __int128 b) {
  __int128 q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

int64_t eval_with(const Size& s, std::vector<BoundVar> vals) {
  encore::BindingScope scope(vals);
  return s.eval();
}

TEST(SizeExpr, FloorAndCeilingDivisionRoundAsNamedForEverySign) {
  Variable a{"a", -50, 50}, b{"b", -7, 7};
  for (int64_t x = -50; x <= 50; ++x)
    for (int64_t y = -7; y <= 7; ++y) {
      if (y == 0) continue;
      std::vector<BoundVar> v{a.bind(x), b.bind(y)};
      ASSERT_EQ(eval_with(a / b, v), static_cast<int64_t>(floor_div_ref(x, y))) << x << "/" << y;
      ASSERT_EQ(eval_with(floor_div(a, b), v), static_cast<int64_t>(floor_div_ref(x, y))) << x << "/" << y;
      ASSERT_EQ(eval_with(ceil_div(a, b), v), static_cast<int64_t>(ceil_div_ref(x, y))) << x << " ceil/ " << y;
      ASSERT_EQ(eval_with(min(a, b), v), std::min(x, y));
      ASSERT_EQ(eval_with(max(a, b), v), std::max(x, y));
      ASSERT_EQ(eval_with(a * b - a + 3, v), x * y - x + 3);
      ASSERT_EQ(eval_with(-a, v), -x);
    }
}

TEST(SizeExpr, AffineFormsFoldAndOthersStayTrees) {
  Variable n{"n", 0, 1000}, i{"i", 0, 1000};
  Size s = n * 4 + 1;
  EXPECT_TRUE(s.is_affine());
  EXPECT_EQ(s.mul(), 4);
  EXPECT_EQ(s.add(), 1);
  EXPECT_EQ(s.var()->name(), "n");
  Size t = 16 * (n - 1) + n;  // 17n - 16
  EXPECT_TRUE(t.is_affine());
  EXPECT_EQ(t.mul(), 17);
  EXPECT_EQ(t.add(), -16);
  EXPECT_TRUE((Size(3) * 5 - 2).is_literal());
  EXPECT_EQ((Size(3) * 5 - 2).eval(), 13);
  Size blocked = 16 * ((n - i) / 16 - 1);
  EXPECT_FALSE(blocked.is_affine());
  EXPECT_EQ(blocked.op(), Size::Op::mul);
  EXPECT_EQ(blocked.lhs(), Size(16));
  EXPECT_EQ(blocked.str(), "16*((n-i)/16-1)");
  std::vector<Variable> used;
  blocked.variables(used);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0], n);
  EXPECT_EQ(used[1], i);
  EXPECT_THROW((void)s.lhs(), ArgumentError);  // a leaf has no operands
  // a float variable is never a size, in any position
  Variable f = Variable::f32("f");
  EXPECT_THROW((void)(n + f), ArgumentError);
}

TEST(SizeExpr, TextFormRoundTrips) {
  Variable n{"n", 1, 100}, i{"i", 0, 100}, blk{"blk_2", 1, 8};
  const std::vector<Variable> vars{n, i, blk};
  const std::vector<Size> sizes = {
      16 * ((n - i) / 16 - 1), ceil_div(n, 16) * 16, min(n, 64), max(n - i, 0), n - (i - 3), n * -1 + 5, (n + i) * (n - i),
      Size(INT64_MIN) + n,     n * INT64_MIN,        floor_div(n * 3, blk),        -(n / blk),  max(min(n, i), ceil_div(i, blk) - 2),
      n - 3,                   Size(-5) * (i + n),
  };
  for (const Size& s : sizes) {
    Size back = Size::parse(s.str(), vars);
    EXPECT_EQ(back, s) << s.str() << " read back as " << back.str();
  }
  EXPECT_EQ(Size::parse(" 16 * ( ( n - i ) / 16 - 1 ) ", vars), 16 * ((n - i) / 16 - 1));
  EXPECT_EQ(Size::parse("max(ceil_div(n,blk_2), 1)", vars), max(ceil_div(n, blk), 1));
}

TEST(SizeExpr, ParseErrorsNameThePosition) {
  Variable n{"n", 1, 100};
  auto expect_error = [&](const std::string& text, const std::string& word) {
    try {
      (void)Size::parse(text, {n});
      ADD_FAILURE() << "no ArgumentError for " << text;
    } catch (const ArgumentError& e) {
      EXPECT_TRUE(contains(e.what(), word)) << text << ": " << e.what();
      EXPECT_TRUE(contains(e.what(), text)) << e.what();
    }
  };
  expect_error("n +", "position 3");
  expect_error("m * 2", "\"m\"");
  expect_error("sqrt(n, 2)", "min, max, ceil_div or floor_div");
  expect_error("min(n)", "','");
  expect_error("(n", "')'");
  expect_error("n 2", "an operator or the end");
  expect_error("99999999999999999999", "fits int64");
  expect_error(std::string(100, '(') + "n" + std::string(100, ')'), "nesting");
  Variable f = Variable::f64("f");
  EXPECT_THROW((void)Size::parse("n + f", {n, f}), ArgumentError);  // a float variable
  Variable n2{"n", 1, 5};
  EXPECT_THROW((void)Size::parse("n", {n, n2}), ArgumentError);  // two variables of that name
}

TEST(SizeExpr, OverflowAndDivisionByZeroAreErrorsNeverWraps) {
  // the literal fold used to wrap: INT64_MAX + 1
  Size big = Size(INT64_MAX) + 1;
  EXPECT_THROW((void)big.eval(), ArgumentError);
  Variable n{"n", 0, INT64_MAX};
  Size s = n + INT64_MAX;  // folds to the affine n + INT64_MAX
  EXPECT_EQ(eval_with(s, {n.bind(0)}), INT64_MAX);
  EXPECT_THROW((void)eval_with(s, {n.bind(1)}), ArgumentError);
  Size t = s + 1;  // the constant does not fit: a tree, checked when evaluated
  EXPECT_THROW((void)eval_with(t, {n.bind(0)}), ArgumentError);
  Variable d{"d", -3, 3};
  try {
    (void)eval_with(Size(64) / d, {d.bind(0)});
    ADD_FAILURE() << "no ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "divides by zero")) << e.what();
    EXPECT_TRUE(contains(e.what(), "d = 0")) << e.what();
  }
  EXPECT_THROW((void)eval_with(Size(INT64_MIN) / (d - 2), {d.bind(1)}), ArgumentError);  // INT64_MIN / -1
  EXPECT_THROW((void)eval_with(n * n, {n.bind(int64_t{1} << 32)}), ArgumentError);
  EXPECT_EQ(eval_with(n * n, {n.bind(int64_t{1} << 31)}), int64_t{1} << 62);
  // every step of (m - 5) * 2 fits at m = 2^62 + 3; its folded form 2m - 10 must not report the
  // product 2m overflowing
  Variable m{"m", 0, (int64_t{1} << 62) + 3};
  const Size f = (m - 5) * 2;
  EXPECT_TRUE(f.is_affine());
  EXPECT_EQ(eval_with(f, {m.bind((int64_t{1} << 62) + 3)}), INT64_MAX - 3);
  EXPECT_EQ(f.eval((int64_t{1} << 62) + 3), INT64_MAX - 3);
  EXPECT_EQ(f.range().hi, INT64_MAX - 3);
  // the nesting bound
  Size deep = n;
  EXPECT_THROW(
      {
        for (int k = 0; k < 40; ++k) deep = max(deep, n) + n;
      },
      ArgumentError);
}

TEST(SizeExpr, RangesAreSoundIntervals) {
  Variable n{"n", 16, 512}, i{"i", 0, 496};
  Size::Range r = (16 * ((Size(512) - i) / 16 - 1)).range();
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 496);
  r = ceil_div(n, 16).range();
  EXPECT_EQ(r.lo, 1);
  EXPECT_EQ(r.hi, 32);
  r = (n - i).range();
  EXPECT_EQ(r.lo, 16 - 496);
  EXPECT_EQ(r.hi, 512);
  r = max(n - i, 0).range();
  EXPECT_EQ(r.lo, 0);
  EXPECT_THROW((void)(n / (i - 3)).range(), ArgumentError);           // the divisor's range holds 0
  EXPECT_THROW((void)(n * (Size(INT64_MAX) - i)).range(), ArgumentError);  // some products overflow
  // every value of a random sweep lies inside the range
  std::mt19937_64 rng(7);
  const Size e = max(16 * ((n - i) / 16 - 1), 0) + min(ceil_div(n * 3, 7), i) - floor_div(i, 5);
  r = e.range();
  for (int k = 0; k < 2000; ++k) {
    int64_t x = std::uniform_int_distribution<int64_t>(16, 512)(rng), y = std::uniform_int_distribution<int64_t>(0, 496)(rng);
    int64_t v = eval_with(e, {n.bind(x), i.bind(y)});
    ASSERT_LE(r.lo, v);
    ASSERT_LE(v, r.hi);
  }
}

// ---- eager == replay

// Each work-item writes a value that depends on its position and the grid's size, so a launch of
// the wrong size (or shape) leaves different bytes.
constexpr const char* kMarkSrc = R"CL(
__kernel void sz_mark(__global int* o, int stride, int tag) {
  size_t x = get_global_id(0), y = get_global_id(1);
  o[y * stride + x] = tag + (int)(x * 7 + y * 13 + get_global_size(0) * 1000 + get_global_size(1) * 100000);
}
__kernel void sz_clear(__global int* o) { o[get_global_id(0)] = -1; }
)CL";
constexpr int64_t kCells = 16384;

// The global sizes of the sz_mark launches in a Chrome trace, in order.
std::vector<std::string> traced_globals(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string t = ss.str();
  std::vector<std::string> out;
  for (size_t p = t.find("sz_mark"); p != std::string::npos; p = t.find("sz_mark", p + 1)) {
    size_t g = t.find("\"global\":\"", p);
    if (g == std::string::npos) break;
    g += 10;
    out.push_back(t.substr(g, t.find('"', g) - g));
  }
  return out;
}

class SizeExprDevice : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "NULL" && !encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
    dev = encore::Device::open(GetParam());
    prog = dev.compile(kMarkSrc);
    mark = prog.kernel("sz_mark");
    clear = prog.kernel("sz_clear");
  }
  bool runs_kernels() const { return GetParam() != "NULL"; }
  encore::Device dev;
  encore::Program prog;
  encore::Kernel mark, clear;
};

TEST_P(SizeExprDevice, EagerEqualsReplayOverARandomSweep) {
  Variable n{"n", 1, 256}, i{"i", 0, 256}, j{"j", 0, 240};
  // one launch per form: the blocked shape with a literal n, clamped, rounded up, 2-D with local sizes
  auto step = [&](const encore::Buffer& a, const encore::Buffer& b, const encore::Buffer& c, const encore::Buffer& d) {
    for (const encore::Buffer& o : {a, b, c, d}) dev.launch(clear, {kCells}, {}, o);
    dev.launch(mark, {16 * ((Size(256) - j) / 16 - 1)}, {}, a, 1, 1);
    dev.launch(mark, {max(16 * ((n - i) / 16 - 1), 0)}, {}, b, 1, 2);
    dev.launch(mark, {ceil_div(n, 16) * 16, max(n - i, 1) / 8 + 1}, {16, 1}, c, 256, 3);
    dev.launch(mark, {min(n, 64), ceil_div(max(n - i, 0) + 1, 3)}, {}, d, 64, 4);
  };
  auto fresh = [&] {
    std::vector<encore::Buffer> v;
    for (int k = 0; k < 4; ++k) v.push_back(dev.alloc<int32_t>(kCells));
    return v;
  };
  std::vector<encore::Buffer> out = fresh(), want = fresh();
  auto jit = encore::TinyJit([&](const encore::Buffer& a, const encore::Buffer& b, const encore::Buffer& c, const encore::Buffer& d,
                                 BoundVar, BoundVar, BoundVar) { step(a, b, c, d); });
  const auto dir = std::filesystem::temp_directory_path() / ("encore-size-expr-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(19);
  auto pick = [&](const Variable& v) { return std::uniform_int_distribution<int64_t>(v.min(), v.max())(rng); };
  for (int call = 0; call < 40; ++call) {
    // the edges first: the last block (a 0-item launch) and the extremes of every range
    int64_t vn = call == 0 ? 256 : call == 1 ? 1 : pick(n), vi = call == 0 ? 0 : call == 1 ? 256 : pick(i),
            vj = call == 0 ? 240 : call == 1 ? 0 : pick(j) / 16 * 16;
    encore::profile::start();
    {
      std::vector<BoundVar> vals{n.bind(vn), i.bind(vi), j.bind(vj)};
      encore::BindingScope scope(vals);
      step(want[0], want[1], want[2], want[3]);
    }
    encore::profile::stop((dir / "eager.json").string());
    encore::profile::start();
    jit(out[0], out[1], out[2], out[3], n.bind(vn), i.bind(vi), j.bind(vj));
    encore::profile::stop((dir / "jit.json").string());
    const std::string at = "call " + std::to_string(call) + ": n=" + std::to_string(vn) + " i=" + std::to_string(vi) + " j=" + std::to_string(vj);
    std::vector<std::string> eager_g = traced_globals((dir / "eager.json").string()), jit_g = traced_globals((dir / "jit.json").string());
    EXPECT_EQ(eager_g, jit_g) << at;
    if (call == 0) {
      EXPECT_EQ(eager_g.size(), 3u) << "the last block launches nothing";  // 16*((256-240)/16-1) = 0
    }
    if (runs_kernels()) {
      for (int k = 0; k < 4; ++k) ASSERT_EQ(out[k].copyout<int32_t>(), want[k].copyout<int32_t>()) << at << " launch " << k;
    }
  }
  EXPECT_EQ(jit.calls(), 40u);
  std::filesystem::remove_all(dir);
}

TEST_P(SizeExprDevice, BlockedFactorisationShape) {
  // a blocked sweep over an n x n matrix: block k updates the trailing 16*((n - i)/16 - 1) rows,
  // i = 16k; with n a Variable too, max(..., 0) keeps the size non-negative over the ranges
  const int64_t N = 256;
  Variable n{"n", 16, N}, i{"i", 0, N};
  encore::Buffer acc = dev.alloc<int32_t>(kCells), ref = dev.alloc<int32_t>(kCells);
  auto block = [&](const encore::Buffer& o) { dev.launch(mark, {max(16 * ((n - i) / 16 - 1), 0), 2}, {16, 1}, o, 512, 9); };
  auto jit = encore::TinyJit([&](const encore::Buffer& o, BoundVar, BoundVar) { block(o); });
  for (int64_t vn : {N, int64_t{200}, int64_t{16}})
    for (int64_t vi = 0; vi < vn; vi += 16) {
      dev.launch(clear, {kCells}, {}, acc);
      dev.launch(clear, {kCells}, {}, ref);
      {
        std::vector<BoundVar> vals{n.bind(vn), i.bind(vi)};
        encore::BindingScope scope(vals);
        block(ref);
      }
      jit(acc, n.bind(vn), i.bind(vi));
      if (runs_kernels()) {
        std::vector<int32_t> got = acc.copyout<int32_t>();
        ASSERT_EQ(got, ref.copyout<int32_t>()) << "n=" << vn << " i=" << vi;
        // the launch covered exactly its rows: 16*((n-i)/16-1) columns of 2 rows at stride 512
        const int64_t rows = std::max<int64_t>(16 * ((vn - vi) / 16 - 1), 0);
        for (int64_t x = 0; x < 512; ++x) ASSERT_EQ(got[static_cast<size_t>(x)] != -1, x < rows) << "n=" << vn << " i=" << vi << " x=" << x;
      }
    }
  EXPECT_GT(jit.calls(), 2u);
}

TEST_P(SizeExprDevice, ExpressionsThatValuesInTheRangesBreakAreCaptureErrors) {
  Variable n{"n", 0, 100}, i{"i", 0, 100};
  encore::Buffer o = dev.alloc<int32_t>(kCells);
  auto expect_capture_error = [&](const Sizes& g, const Sizes& l, std::vector<std::string> words) {
    n.bind(50);
    i.bind(10);
    encore::Capture cap;
    try {
      dev.launch(mark, g, l, o, 1, 1);  // fine for these values
    } catch (...) {
      (void)cap.end();
      throw;
    }
    try {
      (void)cap.end();
      ADD_FAILURE() << "no JitError for " << g.v[0].str();
    } catch (const JitError& e) {
      for (const std::string& w : words) EXPECT_TRUE(contains(e.what(), w)) << w << " not in: " << e.what();
    }
  };
  expect_capture_error({16 * ((n - i) / 16 - 1)}, {}, {"16*((n-i)/16-1)", "negative", "max(", "sz_mark", "global"});
  expect_capture_error({n / (i - 5)}, {}, {"n/(i-5)", "divide by zero", "i in [0, 100]"});
  expect_capture_error({min(n * Size(INT64_MAX / 60), 64)}, {}, {"overflow"});  // 64 for n = 50, overflows for n = 100
  expect_capture_error({Size(64)}, {max(n - i - 24, 0)}, {"local", "below 1"});  // 16 for n = 50, i = 10
  // the same through a TinyJit: its capture (call 1) refuses it
  auto jit = encore::TinyJit([&](const encore::Buffer& x, BoundVar, BoundVar) { dev.launch(mark, {16 * ((n - i) / 16 - 1)}, {}, x, 1, 1); });
  jit(o, n.bind(50), i.bind(10));
  EXPECT_THROW(jit(o, n.bind(50), i.bind(10)), JitError);
  // clamped, the same launches capture and replay
  n.bind(50);
  i.bind(10);
  encore::Capture cap;
  dev.launch(mark, {max(16 * ((n - i) / 16 - 1), 0)}, {}, o, 1, 1);
  dev.launch(mark, {n / max(i - 5, 1)}, {}, o, 1, 1);
  encore::ExecutionUnit unit = cap.end();
  unit();
  unit.bind_var(unit.variable_slot(i), 100);  // max(16*(-4), 0) = 0: an empty launch, as eagerly
  unit();
  dev.synchronize();
}

TEST_P(SizeExprDevice, EagerLaunchWithABadValueIsAnArgumentError) {
  Variable n{"n", 0, 100}, i{"i", 0, 100};
  encore::Buffer o = dev.alloc<int32_t>(kCells);
  n.bind(10);
  i.bind(50);
  try {
    dev.launch(mark, {16 * ((n - i) / 16 - 1)}, {}, o, 1, 1);
    ADD_FAILURE() << "no ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "negative")) << e.what();
  }
  i.bind(0);
  try {
    dev.launch(mark, {n / i}, {}, o, 1, 1);
    ADD_FAILURE() << "no ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "divides by zero")) << e.what();
  }
  i.bind(2);
  dev.launch(mark, {n / i}, {}, o, 1, 1);  // still usable
  dev.synchronize();
}

TEST_P(SizeExprDevice, SetVarChecksEveryDependentSizeBeforeCommitting) {
  Variable n{"n", 1, 256}, i{"i", 0, 256};
  encore::Buffer o = dev.alloc<int32_t>(kCells), ref = dev.alloc<int32_t>(kCells);
  // global max(n, 16) is a multiple of the local 16 only for some n: checked when n changes
  n.bind(32);
  i.bind(0);
  encore::Capture cap;
  dev.launch(clear, {kCells}, {}, o);
  dev.launch(mark, {max(n, 16), min(i + 1, 4)}, {16, 1}, o, 256, 5);
  encore::ExecutionUnit unit = cap.end();
  const size_t ns = unit.variable_slot(n), is = unit.variable_slot(i);
  unit.bind_var(ns, 48);
  unit.bind_var(is, 2);
  try {
    unit.bind_var(ns, 17);
    ADD_FAILURE() << "no ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "multiple")) << e.what();
  }
  EXPECT_EQ(unit.variable_value(ns).i, 48);  // unchanged
  unit();
  {
    std::vector<BoundVar> vals{n.bind(48), i.bind(2)};
    encore::BindingScope scope(vals);
    dev.launch(clear, {kCells}, {}, ref);
    dev.launch(mark, {max(n, 16), min(i + 1, 4)}, {16, 1}, ref, 256, 5);
  }
  if (runs_kernels()) {
    EXPECT_EQ(o.copyout<int32_t>(), ref.copyout<int32_t>());
  }
  // the same through a TinyJit: the failing call throws, the next one replays
  auto jit = encore::TinyJit([&](const encore::Buffer& x, BoundVar) { dev.launch(mark, {max(n, 16)}, {16}, x, 1, 6); });
  for (int64_t v : {16, 32, 64}) jit(o, n.bind(v));
  EXPECT_THROW(jit(o, n.bind(17)), ArgumentError);
  jit(o, n.bind(80));
  EXPECT_EQ(jit.calls(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Devices, SizeExprDevice, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
