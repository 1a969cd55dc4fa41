// Eager execution: kernel results element by element, scalars and Variables as arguments and in
// launch sizes, __local memory, explicit access, argument errors naming the argument, versions,
// recorded items.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>

#include "encore/encore.hpp"
#include "test_util.hpp"
#include "core/recorder.hpp"

using namespace encore;
using encore_test::DeviceTest;

namespace {

const char* kEagerSrc = R"CL(
__kernel void eg_axpy(__global const float* x, __global float* y, float a) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}
__kernel void eg_iota(__global int* out, int base) {
  size_t i = get_global_id(0);
  out[i] = base + (int)i;
}
__kernel void eg_mark(__global int* out) {
  size_t i = get_global_id(0);
  out[i] = (int)i + 1;
}
__kernel void eg_fill_long(__global long* out, long v) { out[get_global_id(0)] = v * 2 + (long)get_global_id(0); }
__kernel void eg_fill_uint(__global uint* out, uint v) { out[get_global_id(0)] = v + 1u; }
__kernel void eg_grid2d(__global int* out, int w) {
  int x = get_global_id(0), y = get_global_id(1);
  out[y * w + x] = x + 1000 * y + 100000 * (int)get_local_size(0);
}
__kernel void eg_wgsum(__global const float* x, __global float* sums, __local float* tmp) {
  size_t l = get_local_id(0), n = get_local_size(0);
  tmp[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    float s = 0.0f;
    for (size_t i = 0; i < n; ++i) s += tmp[i];
    sums[get_group_id(0)] = s;
  }
}
__kernel void eg_add1(__global float* x) { x[get_global_id(0)] += 1.0f; }
__kernel void eg_from_const(__constant float* src, __global float* dst, float k) {
  size_t i = get_global_id(0);
  dst[i] = src[i] * k;
}
)CL";

const char* kF64Src = R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void eg_scale_d(__global double* x, double s) { x[get_global_id(0)] *= s; }
)CL";

bool has_extension(const Device& d, const std::string& ext) {
  for (const auto& [n, v] : d.info().extensions)
    if (n == ext) return true;
  return false;
}

// Recording scope: every eager op on this thread is also recorded into `rec`.
struct Recording {
  std::shared_ptr<detail::Recorder> p = std::make_shared<detail::Recorder>();
  detail::Recorder& rec = *p;
  Recording() {
    rec.id = detail::next_capture_id();
    detail::start_recording(p);
  }
  ~Recording() { stop(); }
  void stop() { detail::stop_recording(&rec); }
};

template <class T> std::vector<T> iota_vec(size_t n, T start) {
  std::vector<T> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ArgumentError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ArgumentError";
  return {};
}

}  // namespace

// ---- results (OpenCL only: NULL launches do nothing) ----

class EagerCl : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    prog = dev.compile(kEagerSrc);
  }
  Kernel k(const char* name) { return prog.kernel(name); }
  Program prog;
};

TEST_P(EagerCl, AxpyResults) {
  const size_t n = 1024;
  Buffer x = dev.alloc<float>(n), y = dev.alloc<float>(n);
  std::vector<float> hx = iota_vec<float>(n, 0.f), hy(n);
  for (size_t i = 0; i < n; ++i) hy[i] = 1000.f - static_cast<float>(i) * 0.5f;
  x.copyin(hx);
  y.copyin(hy);
  dev.launch(k("eg_axpy"), {n}, {}, x, y, 2.5f);
  std::vector<float> got = y.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], 2.5f * hx[i] + hy[i]) << i;
  EXPECT_EQ(x.copyout<float>(), hx) << "the const input is unchanged";
  // an explicit local size gives the same result
  dev.launch(k("eg_axpy"), {n}, {64}, x, y, -2.5f);
  got = y.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], hy[i]) << i;
}

TEST_P(EagerCl, LaunchesRunInOrder) {
  Buffer x = dev.alloc<float>(256);
  x.copyin(std::vector<float>(256, 0.f));
  Kernel add1 = k("eg_add1");
  for (int i = 0; i < 50; ++i) dev.launch(add1, {256}, {}, x);
  dev.synchronize();
  for (float v : x.copyout<float>()) ASSERT_EQ(v, 50.f);
}

TEST_P(EagerCl, ViewsAsKernelArguments) {
  Buffer x = dev.alloc<float>(1024);
  std::vector<float> h = iota_vec<float>(1024, 0.f);
  x.copyin(h);
  Buffer v = x.view(256, 128);
  dev.launch(k("eg_add1"), {128}, {}, v);
  Buffer vv = v.view(64, 32);  // elements 320..351 of x
  dev.launch(k("eg_add1"), {32}, {}, vv);
  std::vector<float> got = x.copyout<float>();
  for (size_t i = 0; i < 1024; ++i) {
    float want = h[i] + (i >= 256 && i < 384 ? 1.f : 0.f) + (i >= 320 && i < 352 ? 1.f : 0.f);
    ASSERT_EQ(got[i], want) << i;
  }
  // a reinterpreting view as an int argument
  Buffer ints = x.view_as(DType::i32, 512 * 4, 64);
  dev.launch(k("eg_iota"), {64}, {}, ints, 7);
  std::vector<int32_t> gi = ints.copyout<int32_t>();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(gi[i], 7 + i);
  // a view of storage nothing has touched yet: the launch allocates it
  Buffer fresh = dev.alloc<int32_t>(256);
  EXPECT_FALSE(fresh.allocated());
  dev.launch(k("eg_iota"), {32}, {}, fresh.view(64, 32), 100);
  EXPECT_TRUE(fresh.allocated());
  gi = fresh.view(64, 32).copyout<int32_t>();
  for (int i = 0; i < 32; ++i) ASSERT_EQ(gi[i], 100 + i);
}

TEST_P(EagerCl, TwoDimensionalGrid) {
  const int w = 16, hgt = 8;
  Buffer out = dev.alloc<int32_t>(w * hgt);
  dev.launch(k("eg_grid2d"), {w, hgt}, {}, out, w);  // encore chooses the local size
  std::vector<int32_t> got = out.copyout<int32_t>();
  for (int y = 0; y < hgt; ++y)
    for (int x = 0; x < w; ++x) ASSERT_EQ(got[y * w + x] % 100000, x + 1000 * y) << x << "," << y;
  dev.launch(k("eg_grid2d"), {w, hgt}, {4, 2}, out, w);
  got = out.copyout<int32_t>();
  for (int y = 0; y < hgt; ++y)
    for (int x = 0; x < w; ++x) ASSERT_EQ(got[y * w + x], x + 1000 * y + 400000) << x << "," << y;
}

TEST_P(EagerCl, ScalarTypes) {
  Buffer l = dev.alloc<int64_t>(8);
  dev.launch(k("eg_fill_long"), {8}, {}, l, int64_t{1} << 40);
  std::vector<int64_t> gl = l.copyout<int64_t>();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(gl[i], (int64_t{1} << 41) + i);
  Buffer u = dev.alloc<uint32_t>(8);
  dev.launch(k("eg_fill_uint"), {8}, {}, u, 0xFFFFFFF0u);
  for (uint32_t v : u.copyout<uint32_t>()) ASSERT_EQ(v, 0xFFFFFFF1u);
}

TEST_P(EagerCl, VariablesAsScalarArguments) {
  Variable base{"base", -100, 100};
  Buffer out = dev.alloc<int32_t>(32);
  for (int b : {-100, 0, 42, 100}) {
    base.bind(b);
    dev.launch(k("eg_iota"), {32}, {}, out, base);
    std::vector<int32_t> got = out.copyout<int32_t>();
    for (int i = 0; i < 32; ++i) ASSERT_EQ(got[i], b + i) << "base " << b;
  }
  // .as(i64) for a long parameter, .as(u32) for a uint one
  Variable big{"big", 0, int64_t{1} << 50};
  Buffer l = dev.alloc<int64_t>(4);
  big.bind(int64_t{3} << 40);
  dev.launch(k("eg_fill_long"), {4}, {}, l, big.as(DType::i64));
  std::vector<int64_t> gl = l.copyout<int64_t>();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(gl[i], (int64_t{6} << 40) + i);
  Buffer u = dev.alloc<uint32_t>(4);
  big.bind(int64_t{4000000000});
  dev.launch(k("eg_fill_uint"), {4}, {}, u, big.as(DType::u32));
  for (uint32_t v : u.copyout<uint32_t>()) ASSERT_EQ(v, 4000000001u);
  // a value that does not fit the argument type is an error at launch, naming the variable
  std::string m = message_of([&] { dev.launch(k("eg_iota"), {4}, {}, u.view_as(DType::i32, 0, 4), big); });
  EXPECT_NE(m.find("big"), std::string::npos) << m;
  EXPECT_NE(m.find("i32"), std::string::npos) << m;

  // float variables
  Variable a = Variable::f32("a", -10, 10);
  Buffer x = dev.alloc<float>(64), y = dev.alloc<float>(64);
  std::vector<float> hx = iota_vec<float>(64, 1.f);
  x.copyin(hx);
  for (float av : {0.5f, -3.f, 7.25f}) {
    y.copyin(std::vector<float>(64, 1.f));
    a.bind(av);
    dev.launch(k("eg_axpy"), {64}, {}, x, y, a);
    std::vector<float> got = y.copyout<float>();
    for (size_t i = 0; i < 64; ++i) ASSERT_FLOAT_EQ(got[i], av * hx[i] + 1.f) << av;
  }
  EXPECT_THROW(a.bind(11.0), ArgumentError);
  EXPECT_EQ(a.fvalue(), 7.25) << "a rejected value leaves the old one";
}

TEST_P(EagerCl, Float64Variable) {
  if (!has_extension(dev, "cl_khr_fp64")) GTEST_SKIP() << "no cl_khr_fp64";
  Kernel kd = dev.compile(kF64Src).kernel("eg_scale_d");
  Variable s = Variable::f64("s");
  Buffer x = dev.alloc<double>(16);
  std::vector<double> h = iota_vec<double>(16, 1.0);
  x.copyin(h);
  s.bind(1.0 / 3.0);
  dev.launch(kd, {16}, {}, x, s);
  std::vector<double> got = x.copyout<double>();
  for (size_t i = 0; i < 16; ++i) ASSERT_DOUBLE_EQ(got[i], h[i] * (1.0 / 3.0));  // not rounded through float
  dev.launch(kd, {16}, {}, x, 3.0);  // a literal double
  got = x.copyout<double>();
  for (size_t i = 0; i < 16; ++i) ASSERT_NEAR(got[i], h[i], 1e-12);
}

TEST_P(EagerCl, VariablesInLaunchSizes) {
  Variable pos{"pos", 1, 15};
  Buffer out = dev.alloc<int32_t>(64);
  Kernel mark = k("eg_mark");
  for (int p : {1, 3, 7, 15, 2}) {
    out.copyin(std::vector<int32_t>(64, 0));
    pos.bind(p);
    dev.launch(mark, {pos * 4 + 1}, {}, out);
    std::vector<int32_t> got = out.copyout<int32_t>();
    int n = p * 4 + 1;
    for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], i < n ? i + 1 : 0) << "pos " << p << " element " << i;
  }
  // one variable as a size and an argument at once
  Kernel iota = k("eg_iota");
  for (int p : {2, 9}) {
    out.copyin(std::vector<int32_t>(64, -1));
    pos.bind(p);
    dev.launch(iota, {pos * 4}, {}, out, pos);
    std::vector<int32_t> got = out.copyout<int32_t>();
    for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], i < 4 * p ? p + i : -1) << "pos " << p;
  }
  // out-of-bounds binds throw and keep the old value
  EXPECT_THROW(pos.bind(16), ArgumentError);
  EXPECT_THROW(pos.bind(0), ArgumentError);
  EXPECT_EQ(pos.value(), 9);
  // a size that evaluates negative is an error
  EXPECT_THROW(dev.launch(mark, {pos * 1 - 10}, {}, out), ArgumentError);
}

TEST_P(EagerCl, LocalMemory) {
  const size_t n = 256, wg = 64;
  Buffer x = dev.alloc<float>(n), sums = dev.alloc<float>(n / wg);
  std::vector<float> h = iota_vec<float>(n, 0.f);
  x.copyin(h);
  dev.launch(k("eg_wgsum"), {n}, {wg}, x, sums, LocalMem{wg * sizeof(float)});
  std::vector<float> got = sums.copyout<float>();
  for (size_t g = 0; g < n / wg; ++g) {
    float want = 0;
    for (size_t i = g * wg; i < (g + 1) * wg; ++i) want += h[i];
    ASSERT_EQ(got[g], want) << "group " << g;
  }
}

TEST_P(EagerCl, ConstantMemoryArgument) {
  Buffer src = dev.alloc<float>(32), dst = dev.alloc<float>(32);
  std::vector<float> h = iota_vec<float>(32, -5.f);
  src.copyin(h);
  uint64_t sv = src.version();
  dev.launch(k("eg_from_const"), {32}, {}, src, dst, 2.f);
  std::vector<float> got = dst.copyout<float>();
  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(got[i], 2.f * h[i]);
  EXPECT_EQ(src.version(), sv) << "__constant data is only read";
}

TEST_P(EagerCl, RecordedItemsRunAgain) {
  const size_t n = 128;
  Variable a = Variable::f32("a");
  Buffer x = dev.alloc<float>(n), y = dev.alloc<float>(n);
  std::vector<float> hx = iota_vec<float>(n, 0.f);
  x.copyin(hx);
  y.copyin(std::vector<float>(n, 0.f));
  std::vector<ExecItem> items;
  {
    Recording r;
    a.bind(1.f);
    dev.launch(k("eg_axpy"), {n}, {}, x, y, a);
    dev.launch(k("eg_add1"), {n}, {}, y);
    items = std::move(r.rec.items);
  }
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].uses_variables());
  EXPECT_FALSE(items[1].uses_variables());
  std::vector<float> got = y.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], hx[i] + 1.f) << "recording also ran the work";

  // Device::run re-runs one item as it was recorded
  dev.run(items[1]);
  got = y.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], hx[i] + 2.f);
}

TEST_P(EagerCl, ConcurrentLaunchesOfOneKernel) {
  Kernel iota = k("eg_iota");
  std::vector<Buffer> outs{dev.alloc<int32_t>(256), dev.alloc<int32_t>(256)};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      for (int r = 0; r < 40; ++r) dev.launch(iota, {256}, {}, outs[t], t * 1000 + r);
    });
  for (auto& t : ts) t.join();
  dev.synchronize();
  for (int t = 0; t < 2; ++t) {
    std::vector<int32_t> got = outs[t].copyout<int32_t>();
    for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], t * 1000 + 39 + i);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, EagerCl, ::testing::ValuesIn(encore_test::cl_params()), encore_test::param_name);

// ---- argument checks, access, versions, recording (any device: NULL parses signatures) ----

class EagerAll : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    prog = dev.compile(kEagerSrc);
    x = dev.alloc<float>(64);
    y = dev.alloc<float>(64);
    x.copyin(std::vector<float>(64, 1.f));
    y.copyin(std::vector<float>(64, 2.f));
  }
  Kernel k(const char* name) { return prog.kernel(name); }
  Program prog;
  Buffer x, y;
};

TEST_P(EagerAll, WrongArgumentCount) {
  std::string m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, y); });
  EXPECT_NE(m.find("eg_axpy"), std::string::npos) << m;
  EXPECT_NE(m.find("takes 3 arguments"), std::string::npos) << m;
  EXPECT_NE(m.find("float a"), std::string::npos) << "the signature is listed: " << m;
  EXPECT_NE(m.find("got 2"), std::string::npos) << m;
  m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, y, 1.f, 2.f); });
  EXPECT_NE(m.find("got 4"), std::string::npos) << m;
}

TEST_P(EagerAll, WrongScalarType) {
  std::string m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, y, 2.0); });
  EXPECT_NE(m.find("argument 2"), std::string::npos) << m;
  EXPECT_NE(m.find(" a)"), std::string::npos) << "names the parameter: " << m;
  EXPECT_NE(m.find("expected f32"), std::string::npos) << m;
  EXPECT_NE(m.find("f64"), std::string::npos) << m;
  m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, y, 2); });
  EXPECT_NE(m.find("got i32"), std::string::npos) << m;
  // a host integer converts to an integer parameter, and an integer Variable takes its type
  // (tests/public/test_host_values.cpp); a type fixed with as() must be the parameter's: the hint says so
  Variable v{"v", 0, 10};
  EXPECT_NO_THROW(dev.launch(k("eg_fill_long"), {4}, {}, dev.alloc<int64_t>(4), 5));
  EXPECT_NO_THROW(dev.launch(k("eg_fill_long"), {4}, {}, dev.alloc<int64_t>(4), v));
  m = message_of([&] { dev.launch(k("eg_fill_long"), {4}, {}, dev.alloc<int64_t>(4), v.as(DType::i32)); });
  EXPECT_NE(m.find("expected i64"), std::string::npos) << m;
  EXPECT_NE(m.find("as(DType::i32) given"), std::string::npos) << m;
  // a float variable for an int parameter
  m = message_of([&] { dev.launch(k("eg_iota"), {4}, {}, dev.alloc<int32_t>(4), Variable::f32("fv")); });
  EXPECT_NE(m.find("argument 1"), std::string::npos) << m;
  EXPECT_THROW((void)v.as(DType::f32), ArgumentError);
  EXPECT_THROW((void)Variable::f32("fv").as(DType::i32), ArgumentError);
}

TEST_P(EagerAll, BufferWhereAScalarGoesAndTheReverse) {
  std::string m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, y, x); });
  EXPECT_NE(m.find("argument 2 (float a)"), std::string::npos) << m;
  EXPECT_NE(m.find("scalar"), std::string::npos) << m;
  m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, 1.f, y, 1.f); });
  EXPECT_NE(m.find("argument 0 (float* x)"), std::string::npos) << m;
  EXPECT_NE(m.find("expected a buffer"), std::string::npos) << m;
  m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, x, Buffer{}, 1.f); });
  EXPECT_NE(m.find("argument 1"), std::string::npos) << m;
  EXPECT_NE(m.find("null buffer"), std::string::npos) << m;
  m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, LocalMem{64}, y, 1.f); });
  EXPECT_NE(m.find("expected a buffer"), std::string::npos) << m;
  // __local parameters take LocalMem, of a non-zero size
  Buffer s = dev.alloc<float>(4);
  m = message_of([&] { dev.launch(k("eg_wgsum"), {64}, {16}, x, s, y); });
  EXPECT_NE(m.find("argument 2"), std::string::npos) << m;
  EXPECT_NE(m.find("LocalMem"), std::string::npos) << m;
  EXPECT_THROW(dev.launch(k("eg_wgsum"), {64}, {16}, x, s, LocalMem{0}), ArgumentError);
  EXPECT_THROW(dev.launch(k("eg_axpy"), {64}, {}, x, LocalMem{64}, 1.f), ArgumentError);
}

TEST_P(EagerAll, BuffersAndKernelsFromAnotherDevice) {
  Device other = dev.is_null() ? (Device::list().empty() ? Device{} : Device::open("CL:0")) : Device::open("NULL");
  if (!other) GTEST_SKIP() << "no second device";
  Buffer ox = other.alloc<float>(64);
  std::string m = message_of([&] { dev.launch(k("eg_axpy"), {64}, {}, ox, y, 1.f); });
  EXPECT_NE(m.find("argument 0"), std::string::npos) << m;
  EXPECT_NE(m.find("is not on " + dev.id()), std::string::npos) << m;
  Kernel ok = other.compile(kEagerSrc).kernel("eg_add1");
  m = message_of([&] { dev.launch(ok, {64}, {}, x); });
  EXPECT_NE(m.find("compiled for " + other.id()), std::string::npos) << m;
  EXPECT_THROW(dev.launch(Kernel{}, {64}, {}, x), ArgumentError);
}

TEST_P(EagerAll, BadLaunchSizes) {
  Kernel add1 = k("eg_add1");
  EXPECT_THROW(dev.launch(add1, {64}, {48}, x), ArgumentError);    // not a multiple
  EXPECT_THROW(dev.launch(add1, {64}, {16, 1}, x), ArgumentError); // dimensions differ
  EXPECT_THROW(dev.launch(add1, Sizes{}, {}, x), ArgumentError);    // no dimensions
  EXPECT_THROW(dev.launch(add1, {64}, {0}, x), ArgumentError);
  EXPECT_THROW((Sizes{1, 2, 3, 4}), ArgumentError);
  std::string m = message_of([&] { dev.launch(add1, {64}, {48}, x); });
  EXPECT_NE(m.find("not a multiple"), std::string::npos) << m;
  // a float variable cannot be a size
  EXPECT_THROW(Size(Variable::f32("f")), ArgumentError);
}

TEST_P(EagerAll, ExplicitAccess) {
  Kernel axpy = k("eg_axpy");
  Buffer z = dev.alloc<float>(64);
  z.copyin(std::vector<float>(64, 0.f));
  uint64_t xv = x.version(), zv = z.version();
  dev.launch(axpy, {64}, {}, x, z, 1.f);  // default: x in, z inout
  EXPECT_EQ(x.version(), xv);
  EXPECT_GT(z.version(), zv);
  zv = z.version();
  dev.launch(axpy, {64}, {}, in(x), in(z), 0.f);  // stated read-only: no bump
  EXPECT_EQ(z.version(), zv);
  dev.launch(axpy, {64}, {}, x, out(z), 1.f);
  EXPECT_GT(z.version(), zv);
  zv = z.version();
  dev.launch(axpy, {64}, {}, x, inout(z), 1.f);
  EXPECT_GT(z.version(), zv);
  // a const parameter cannot be written
  std::string m = message_of([&] { dev.launch(axpy, {64}, {}, out(x), z, 1.f); });
  EXPECT_NE(m.find("argument 0"), std::string::npos) << m;
  EXPECT_NE(m.find("const"), std::string::npos) << m;
  EXPECT_THROW(dev.launch(axpy, {64}, {}, inout(x), z, 1.f), ArgumentError);
  EXPECT_NO_THROW(dev.launch(axpy, {64}, {}, in(x), z, 1.f));
  // recorded items carry the resolved access
  Recording r;
  dev.launch(axpy, {64}, {}, x, out(z), 1.f);
  dev.launch(axpy, {64}, {}, x, z, 1.f);
  r.stop();
  ASSERT_EQ(r.rec.items.size(), 2u);
  EXPECT_EQ(r.rec.items[0].accesses()[1].access, Access::out);
  EXPECT_EQ(r.rec.items[1].accesses()[1].access, Access::inout);
  EXPECT_EQ(r.rec.items[1].accesses()[0].access, Access::in);
}

TEST_P(EagerAll, VersionsBumpOnLaunchesAndCopies) {
  Buffer base = dev.alloc<float>(512);
  base.copyin(std::vector<float>(512, 0.f));
  Buffer v = base.view(128, 64);
  uint64_t bv = base.version();
  dev.launch(k("eg_add1"), {64}, {}, v);  // a launch writing a view bumps its storage
  EXPECT_GT(base.version(), bv);
  bv = base.version();
  uint64_t xv = x.version();
  dev.copy(v, x);
  EXPECT_GT(base.version(), bv);
  EXPECT_EQ(x.version(), xv);
  // the versions of distinct storage are independent
  uint64_t yv = y.version();
  dev.launch(k("eg_add1"), {64}, {}, x);
  EXPECT_EQ(y.version(), yv);
  EXPECT_GT(x.version(), xv);
  // a failed launch writes nothing
  xv = x.version();
  EXPECT_THROW(dev.launch(k("eg_add1"), {64}, {48}, x), ArgumentError);
  EXPECT_EQ(x.version(), xv);
}

TEST_P(EagerAll, RecordingCapturesLaunchesCopiesAndUploads) {
  Variable pos{"pos", 1, 16};
  pos.bind(4);
  std::vector<float> data(64, 9.f);
  Recording r;
  dev.launch(k("eg_add1"), {pos * 16}, {}, x);
  dev.copy(y, x);
  y.copyin(data);
  data[0] = -1.f;  // the upload holds a snapshot
  r.stop();
  auto& items = r.rec.items;
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].kind, ItemKind::kernel);
  EXPECT_TRUE(items[0].uses_variables());
  EXPECT_NE(items[0].describe().find("16*pos"), std::string::npos) << items[0].describe();
  EXPECT_EQ(items[1].kind, ItemKind::copy);
  auto ca = items[1].accesses();
  ASSERT_EQ(ca.size(), 2u);
  EXPECT_EQ(ca[0].storage, x);
  EXPECT_EQ(ca[0].access, Access::in);
  EXPECT_EQ(ca[1].storage, y);
  EXPECT_EQ(ca[1].access, Access::out);
  EXPECT_EQ(items[2].kind, ItemKind::upload);
  ASSERT_TRUE(items[2].data);
  EXPECT_EQ(items[2].data->size(), 64 * sizeof(float));
  float first;
  std::memcpy(&first, items[2].data->data(), 4);
  EXPECT_EQ(first, 9.f);
  EXPECT_EQ(y.copyout<float>()[0], 9.f) << "the upload ran eagerly";
  // copyout during a capture is an error by default
  Recording r2;
  EXPECT_THROW((void)y.copyout<float>(), JitError);
}

INSTANTIATE_TEST_SUITE_P(Devices, EagerAll, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);
