// Host values and types (issue 19 item 5): every C++ integral type has a dtype (long long is i64,
// bool is DType::boolean); a host integer converts to the parameter's integer type when it fits and
// is an ArgumentError naming the parameter, the value and the range when it does not; an integer
// Variable takes an int, long or ulong parameter's type by itself, in eager work, capture and
// replay, where the replayed value follows bind_var; bool and bf16 buffers store, copy and upload
// their bytes, bf16 goes to ushort* parameters; f16 computes only where the device supports it.
#include <cstdio>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

// Every integral type maps by size and signedness; the character types too.
static_assert(dtype_of<long long> == DType::i64 && dtype_of<unsigned long long> == DType::u64);
static_assert(dtype_of<long> == DType::i64 && dtype_of<unsigned long> == DType::u64);  // LP64
static_assert(dtype_of<size_t> == DType::u64 && dtype_of<ptrdiff_t> == DType::i64 && dtype_of<intptr_t> == DType::i64);
static_assert(dtype_of<signed char> == DType::i8 && dtype_of<unsigned char> == DType::u8);
static_assert(dtype_of<char> == (std::is_signed_v<char> ? DType::i8 : DType::u8));
static_assert(dtype_of<short> == DType::i16 && dtype_of<unsigned short> == DType::u16);
static_assert(dtype_of<int> == DType::i32 && dtype_of<unsigned> == DType::u32);
static_assert(dtype_of<char16_t> == DType::u16 && dtype_of<char32_t> == DType::u32 && dtype_of<char8_t> == DType::u8);
static_assert(dtype_of<bool> == DType::boolean && size(DType::boolean) == 1);
static_assert(dtype_of<half> == DType::f16 && dtype_of<bfloat16> == DType::bf16 && size(DType::bf16) == 2);
static_assert(dtype_of<const int> == DType::i32);
static_assert(!has_dtype<long double> && !has_dtype<void*> && !has_dtype<std::string>);
static_assert(is_float(DType::bf16) && !is_integer(DType::bf16) && is_integer(DType::boolean) && !is_signed(DType::boolean));

TEST(HostValues, DtypeNamesRoundTrip) {
  for (DType t : all_dtypes) EXPECT_EQ(parse_dtype(name(t)), t) << name(t);
  EXPECT_EQ(name(DType::boolean), "bool");
  EXPECT_EQ(name(DType::bf16), "bf16");
  EXPECT_EQ(parse_dtype("bfloat16"), std::nullopt);
}

using encore_test::argument_error;
using encore_test::expect_has;

const char* kSource = R"CL(
__kernel void hv_put(__global long* o, int a, uint b, long c, ulong d, short e, uchar f, char g) {
  o[0] = a; o[1] = (long)b; o[2] = c; o[3] = (long)d; o[4] = e; o[5] = f; o[6] = g;
}
__kernel void hv_wide(__global long* o, long v, ulong u, int i, short s) {
  size_t k = get_global_id(0);
  o[4 * k] = v + (long)k; o[4 * k + 1] = (long)u; o[4 * k + 2] = i; o[4 * k + 3] = s;
}
__kernel void hv_int(__global int* o, int n) { o[get_global_id(0)] = n; }
__kernel void hv_bf16(__global const ushort* x, __global float* o) {
  size_t i = get_global_id(0); o[i] = 2.0f * as_float((uint)x[i] << 16);
}
__kernel void hv_bf16_out(__global ushort* y, __global const float* a) {
  size_t i = get_global_id(0); y[i] = (ushort)(as_uint(a[i]) >> 16);
}
__kernel void hv_flags(__global const uchar* f, __global int* o) { size_t i = get_global_id(0); o[i] = f[i] ? 10 : 20; }
__kernel void hv_halfload(__global const half* h, __global float* o) { size_t i = get_global_id(0); o[i] = vload_half(i, h); }
__kernel void hv_halfptr(__global half* h) { }
)CL";

class HostValuesDev : public encore_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (!dev) return;
    prog = dev.compile(kSource);
  }
  Kernel k(const char* n) { return prog.kernel(n); }
  Program prog;
};

TEST_P(HostValuesDev, IntegralValuesConvertToTheParameterType) {
  Buffer o = dev.alloc<int64_t>(7);
  const size_t n = 12;
  const long long ll = -5;
  const unsigned long long ull = 1ull << 40;
  // size_t to int, int to uint, long long to long, int to ulong, unsigned to short, bool to uchar,
  // char to char
  dev.launch(k("hv_put"), {1}, {}, o, n, 7, ll, 3, 9u, true, 'A');
  if (is_cl()) { EXPECT_EQ(o.copyout<int64_t>(), (std::vector<int64_t>{12, 7, -5, 3, 9, 1, 65})); }
  dev.launch(k("hv_put"), {1}, {}, o, int64_t{-2147483648LL}, uint64_t{4294967295u}, ull, ull, int8_t{-32}, uint16_t{255}, int64_t{-128});
  if (is_cl()) { EXPECT_EQ(o.copyout<int64_t>(), (std::vector<int64_t>{INT32_MIN, 4294967295LL, 1LL << 40, 1LL << 40, -32, 255, -128})); }
}

TEST_P(HostValuesDev, OutOfRangeHostValuesNameTheParameterTheValueAndTheRange) {
  Kernel put = k("hv_put");
  Buffer o = dev.alloc<int64_t>(7);
  const size_t big = size_t{1} << 40;
  std::string e = argument_error([&] { dev.launch(put, {1}, {}, o, big, 0, 0, 0, 0, 0, 0); });
  expect_has(e, {"kernel hv_put", "argument 1", "int a", "1099511627776", "u64", "i32 holds -2147483648 to 2147483647"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, -1, 0, 0, 0, 0, 0); });
  expect_has(e, {"argument 2", "uint b", "-1", "u32 holds 0 to 4294967295"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, 0, 0, -1LL, 0, 0, 0); });
  expect_has(e, {"argument 4", "ulong d", "-1", "u64 holds 0 to 18446744073709551615"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, 0, UINT64_MAX, 0, 0, 0, 0); });
  expect_has(e, {"argument 3", "long c", "18446744073709551615", "i64 holds"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, 0, 0, 0, 40000, 0, 0); });
  expect_has(e, {"argument 5", "short e", "40000", "i16 holds -32768 to 32767"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, 0, 0, 0, 0, 256, 0); });
  expect_has(e, {"argument 6", "uchar f", "256", "u8 holds 0 to 255"});
  e = argument_error([&] { dev.launch(put, {1}, {}, o, 0, 0, 0, 0, 0, 0, 200u); });
  expect_has(e, {"argument 7", "char g", "200", "i8 holds -128 to 127"});
  // floats never become integers, nor integers floats
  e = argument_error([&] { dev.launch(k("hv_int"), {1}, {}, dev.alloc<int32_t>(1), 1.5f); });
  expect_has(e, {"int n", "expected i32, got f32"});
  // the device stays usable: the same launch with fitting values runs
  dev.launch(put, {1}, {}, o, 1, 2, 3, 4, 5, 6, 7);
  if (is_cl()) { EXPECT_EQ(o.copyout<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7})); }
}

// A host value converted at capture is a constant of the capture like any scalar: replay gives
// eager's bytes, and a value that changes between the recorded calls is still caught.
TEST_P(HostValuesDev, ConvertedHostValuesReplayAsEager) {
  Kernel put = k("hv_put");
  const size_t n = 42;
  auto step = [&](const Buffer& o) {
    dev.launch(put, {1}, {}, o, n, size_t{7}, 5LL, true, 'x', uint64_t{200}, int64_t{-3});
    return o;
  };
  Buffer eager = dev.alloc<int64_t>(7);
  step(eager);
  TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    Buffer o = dev.alloc<int64_t>(7);
    Buffer got = jit(o);
    if (is_cl()) { EXPECT_EQ(got.copyout<int64_t>(), eager.copyout<int64_t>()) << "call " << call; }
  }
  EXPECT_GE(jit.calls(), 4u);
  // the same through an explicit capture
  Capture cap;
  Buffer x = dev.alloc<int64_t>(7);
  cap.add_input(x);
  step(x);
  ExecutionUnit unit = cap.end();
  Buffer y = dev.alloc<int64_t>(7);
  unit.bind_input(0, y)();
  if (is_cl()) { EXPECT_EQ(y.copyout<int64_t>(), eager.copyout<int64_t>()); }
}

TEST_P(HostValuesDev, IntVariableWidensToLongParameters) {
  Kernel wide = k("hv_wide");
  Variable v{"v", -(int64_t{1} << 40), int64_t{1} << 40};
  Variable u{"u", -10, 100};  // may be negative: each value is checked against the ulong parameter
  Variable s{"s", 0, 100};
  Buffer o = dev.alloc<int64_t>(8);
  const int64_t big = (int64_t{1} << 35) + 3;  // beyond int: only a long parameter holds it
  v.bind(big);
  u.bind(4);
  s.bind(9);
  dev.launch(wide, {2}, {}, o, v, u, s, s);  // long, ulong, int, short, all from plain Variables
  if (is_cl()) { EXPECT_EQ(o.copyout<int64_t>(), (std::vector<int64_t>{big, 4, 9, 9, big + 1, 4, 9, 9})); }

  // replay: the value passed to each call reaches the kernel as a long
  auto step = [&](const Buffer& out, const BoundVar&, const BoundVar&, const BoundVar&) {
    dev.launch(wide, {2}, {}, out, v, u, s, s);
    return out;
  };
  TinyJit jit(step);
  Buffer out = dev.alloc<int64_t>(8);
  const int64_t vals[] = {big, -big, 5, int64_t{1} << 40, -7, 0};
  for (int call = 0; call < 6; ++call) {
    const int64_t x = vals[call];
    const int64_t sv = call * 10;
    jit(out, v.bind(x), u.bind(sv + 1), s.bind(sv));
    if (is_cl()) { EXPECT_EQ(out.copyout<int64_t>(), (std::vector<int64_t>{x, sv + 1, sv, sv, x + 1, sv + 1, sv, sv})) << "call " << call; }
  }
  EXPECT_GE(jit.calls(), 6u);
  // a negative value for the ulong parameter is refused before anything runs, naming the variable
  std::string e = argument_error([&] { jit(out, v.bind(1), u.bind(-1), s.bind(1)); });
  expect_has(e, {"\"u\" = -1", "u64"});
  jit(out, v.bind(2), u.bind(3), s.bind(3));  // the jit stays usable
  if (is_cl()) { EXPECT_EQ(out.copyout<int64_t>(), (std::vector<int64_t>{2, 3, 3, 3, 3, 3, 3, 3})); }
  // eager work refuses it the same way
  u.bind(-1);
  e = argument_error([&] { dev.launch(wide, {2}, {}, o, v, u, s, s); });
  expect_has(e, {"\"u\" = -1", "u64 holds 0 to"});
}

TEST_P(HostValuesDev, WidenedVariableFollowsBindVarOnReplay) {
  Kernel wide = k("hv_wide");
  Variable v{"v", -(int64_t{1} << 50), int64_t{1} << 50};
  Variable u{"u", -10, int64_t{1} << 50};  // may be negative: each bound value is checked against ulong
  Capture cap;
  Buffer o = dev.alloc<int64_t>(8);
  cap.add_input(o);
  v.bind(1);
  u.bind(2);
  dev.launch(wide, {2}, {}, o, v, u, 0, 0);
  ExecutionUnit unit = cap.end();
  ASSERT_EQ(unit.stats().variables, 2u);
  for (int64_t x : {int64_t{1} << 45, int64_t{-3}, int64_t{77}}) {
    unit.bind(v.bind(x)).bind(u.bind(x + (int64_t{1} << 44)))();
    if (is_cl()) {
      const int64_t w = x + (int64_t{1} << 44);
      EXPECT_EQ(o.copyout<int64_t>(), (std::vector<int64_t>{x, w, 0, 0, x + 1, w, 0, 0})) << x;
    }
  }
  // a value the ulong parameter cannot hold: an error at bind, the unit keeps its last values
  EXPECT_THROW(unit.bind(u.bind(-1)), ArgumentError);
  unit();
  if (is_cl()) { EXPECT_EQ(o.copyout<int64_t>()[1], 77 + (int64_t{1} << 44)); }
}

TEST_P(HostValuesDev, ExplicitAsMustMatchTheParameter) {
  Kernel wide = k("hv_wide");
  Variable v{"v", 0, 10};
  Buffer o = dev.alloc<int64_t>(4);
  std::string e = argument_error([&] { dev.launch(wide, {1}, {}, o, v.as(DType::i32), 0, 0, 0); });
  expect_has(e, {"argument 1", "long v", "expected i64", "as(DType::i32) given"});
  dev.launch(wide, {1}, {}, o, v.as(DType::i64), v.as(DType::u64), v.as(DType::i32), v.as(DType::i16));  // the matching types
  EXPECT_THROW((void)v.as(DType::boolean), ArgumentError);
  EXPECT_THROW((void)v.as(DType::bf16), ArgumentError);
  // a float variable is passed as its own type only
  e = argument_error([&] { dev.launch(k("hv_int"), {1}, {}, dev.alloc<int32_t>(1), Variable::f32("lr")); });
  expect_has(e, {"int n", "expected i32", "\"lr\""});
  // an int variable's value that does not fit a narrower parameter: named at launch
  Variable big{"big", 0, 100000};
  big.bind(40000);
  e = argument_error([&] { dev.launch(wide, {1}, {}, o, 0, 0, 0, big); });
  expect_has(e, {"\"big\" = 40000", "i16", "-32768 to 32767"});
}

TEST_P(HostValuesDev, BoolBuffers) {
  const std::array<bool, 4> flags{true, false, false, true};
  Buffer f = dev.alloc<bool>(4);
  EXPECT_EQ(f.dtype(), DType::boolean);
  EXPECT_EQ(f.nbytes(), 4u);
  f.copyin(std::span<const bool>(flags));
  std::array<bool, 4> back{};
  f.copyout(std::span<bool>(back));
  if (is_cl()) { EXPECT_EQ(back, flags); }
  // bytes in and out too
  f.copyin(std::vector<uint8_t>{0, 1, 1, 0});
  EXPECT_THROW(f.copyin(std::vector<int8_t>(4)), ArgumentError);
  // a bool buffer goes to a uchar* parameter; replay == eager
  Buffer o = dev.alloc<int32_t>(4);
  auto step = [&](const Buffer& fl) {
    dev.launch(k("hv_flags"), {4}, {}, fl, o);
    return o;
  };
  TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    Buffer in = dev.alloc<bool>(4);
    std::array<bool, 4> h{call % 2 == 0, call % 3 == 0, true, false};
    in.copyin(std::span<const bool>(h));
    Buffer got = jit(in);
    if (is_cl()) { EXPECT_EQ(got.copyout<int32_t>(), (std::vector<int32_t>{h[0] ? 10 : 20, h[1] ? 10 : 20, 10, 20})) << call; }
  }
}

// bf16 is storage: its bits travel through copies and uploads, and a kernel reads them as ushort.
TEST_P(HostValuesDev, Bf16BuffersStoreAndReachUshortParameters) {
  const std::vector<bfloat16> h{{0x3f80}, {0xc000}, {0x4049}, {0x0080}};  // 1, -2, 3.140625, 2^-126
  Buffer x = dev.alloc<bfloat16>(4);
  EXPECT_EQ(x.dtype(), DType::bf16);
  EXPECT_EQ(x.nbytes(), 8u);
  x.copyin(h);
  if (is_cl()) {
    std::vector<bfloat16> back = x.copyout<bfloat16>();
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(back[i].bits, h[i].bits);
    std::vector<uint16_t> bits = x.copyout<uint16_t>();  // its raw bits
    EXPECT_EQ(bits[2], 0x4049);
  }
  EXPECT_THROW(x.copyin(std::vector<half>(4)), ArgumentError);  // f16 data is not bf16 data
  EXPECT_THROW(dev.alloc<half>(4).copyin(h), ArgumentError);
  // copies keep the bits
  Buffer y = dev.alloc(DType::bf16, 4);
  dev.copy(y, x);
  if (is_cl()) { EXPECT_EQ(y.copyout<uint16_t>(), x.copyout<uint16_t>()); }
  // ushort* takes bf16, float* and half* do not
  Buffer o = dev.alloc<float>(4);
  dev.launch(k("hv_bf16"), {4}, {}, x, o);
  if (is_cl()) { EXPECT_EQ(o.copyout<float>(), (std::vector<float>{2.f, -4.f, 6.28125f, 0x1p-125f})); }
  std::string e = argument_error([&] { dev.launch(k("hv_halfload"), {4}, {}, x, o); });
  expect_has(e, {"half* h", "expected a buffer of f16", "bf16[4]"});
  // replay == eager, with an upload of bf16 bits inside the step and a bf16 output
  auto step = [&](const Buffer& in) {
    Buffer bits = dev.alloc<bfloat16>(4);
    bits.copyin(h);  // an upload item
    dev.launch(k("hv_bf16"), {4}, {}, bits, in);
    Buffer out = dev.alloc<bfloat16>(4);
    dev.launch(k("hv_bf16_out"), {4}, {}, out, in);
    return out;
  };
  std::vector<uint16_t> want;
  {
    Buffer in = dev.alloc<float>(4);
    want = step(in).copyout<uint16_t>();
  }
  TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    Buffer in = dev.alloc<float>(4);
    Buffer got = jit(in);
    EXPECT_EQ(got.dtype(), DType::bf16);
    if (is_cl()) {
      EXPECT_EQ(got.copyout<uint16_t>(), want) << call;
      EXPECT_EQ(in.copyout<float>(), o.copyout<float>()) << call;
    }
  }
}

// f16 buffers are storage on every device (vload_half); half arithmetic and by-value half
// parameters need cl_khr_fp16: the NULL device reports it, PoCL 3.1 on the CPU does not.
TEST_P(HostValuesDev, F16WhereTheDeviceSupportsIt) {
  if (dev.is_null()) { EXPECT_TRUE(dev.supports(DType::f16)); }
  bool listed = false;
  for (const auto& [ext, ver] : dev.info().extensions) listed = listed || ext == "cl_khr_fp16";
  EXPECT_EQ(dev.supports(DType::f16), listed);
  for (DType t : all_dtypes)
    if (t != DType::f16 && t != DType::f64) { EXPECT_TRUE(dev.supports(t)) << name(t); }

  // storage works everywhere: 1.0, -2.0, 0.5, 65504 as half bits, read back as floats
  const std::vector<half> h{{0x3c00}, {0xc000}, {0x3800}, {0x7bff}};
  Buffer hb = dev.alloc<half>(4);
  hb.copyin(h);
  Buffer o = dev.alloc<float>(4);
  dev.launch(k("hv_halfload"), {4}, {}, hb, o);
  if (is_cl()) { EXPECT_EQ(o.copyout<float>(), (std::vector<float>{1.f, -2.f, 0.5f, 65504.f})); }
  dev.launch(k("hv_halfptr"), {4}, {}, hb);

  const std::string arith = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
                            "__kernel void hv_hscale(__global half* x, half s) { size_t i = get_global_id(0); x[i] = x[i] * s; }\n"
                            "// " + encore_test::unique_token();
  if (dev.supports(DType::f16)) {
    Kernel hs = dev.compile(arith).kernel("hv_hscale");
    dev.launch(hs, {4}, {}, hb, half{0x4000});  // x 2
    if (is_cl()) { EXPECT_EQ(hb.copyout<uint16_t>(), (std::vector<uint16_t>{0x4000, 0xc400, 0x3c00, 0x7c00})); }
    std::string e = argument_error([&] { dev.launch(hs, {4}, {}, hb, 2.0f); });
    expect_has(e, {"half s", "expected f16, got f32"});
  } else {
    try {
      // a lenient compiler may build it anyway (Oclgrind does, without listing the extension):
      // then there is no error to explain; PoCL refuses it, and the error must say why
      dev.compile(arith);
      std::printf("note: half arithmetic compiled on %s, which does not report cl_khr_fp16\n", dev.id().c_str());
    } catch (const CompileError& e) {
      expect_has(e.what(), {"does not report cl_khr_fp16", "vload_half", "Device::supports(DType::f16)"});
      EXPECT_FALSE(e.log().empty());
    }
    // the device is still usable
    dev.launch(k("hv_halfload"), {4}, {}, hb, o);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, HostValuesDev, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
