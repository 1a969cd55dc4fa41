// Issue 19 item 1: vector and struct parameters passed by value with encore::bytes. The size is
// checked where the type tells it (vectors, 3-vectors taking 4 lanes, structs the source defines,
// laid out by OpenCL's rules) and trusted otherwise; eager, captured and replayed runs agree on
// OpenCL and NULL; a by-value struct is a constant of the capture like a scalar. Public headers only.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "encore/encore.hpp"
#include "by_value_twins.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

const char* kSrc = R"CL(
typedef struct { float alpha; int n; } par_str;
struct shift { float4 add; int k; };
typedef struct { char c; double d; short s[3]; } mixed;
typedef struct { par_str inner; uchar tag; } nested;
typedef struct __attribute__((packed)) { char c; int v; } packed_t;
typedef float real;

float lane(float4 w, int i) { return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w; }

__kernel void bv_scale(__global const float* x, __global float* y, par_str p, float4 w) {
  int i = (int)get_global_id(0);
  y[i] = p.alpha * x[i] * lane(w, i & 3) + (float)p.n;
}
__kernel void bv_shift(__global float* y, struct shift s) { y[get_global_id(0)] += s.add.x * (float)s.k + s.add.w; }
__kernel void bv_f3(__global float* y, float3 v, real r) { y[get_global_id(0)] = v.x + v.y * 2.0f + v.z * 4.0f + r; }
__kernel void bv_mixed(__global double* y, mixed m, nested n) { y[0] = m.c + m.d + m.s[2] + n.inner.alpha + n.tag; }
__kernel void bv_packed(__global int* y, packed_t p) { y[get_global_id(0)] = p.c + p.v; }
__kernel void bv_int2(__global int* y, int2 v, uchar16 u) { y[get_global_id(0)] = v.x * 10 + v.y + u.sf; }
)CL";

// Host twins of the kernel's structs (ParStr and Shift: by_value_twins.hpp).
using encore_test::ParStr;
using encore_test::Shift;
struct Mixed {
  char c;
  double d;
  int16_t s[3];
};
struct Nested {
  ParStr inner;
  uint8_t tag;
};
#pragma pack(push, 1)
struct Packed {
  char c;
  int32_t v;
};
#pragma pack(pop)

using encore_test::argument_error;

class ByValue : public encore_test::DeviceTest {};

const KernelParam& param(const Program& p, const char* kernel, size_t i) { return p.kernel(kernel).params()[i]; }

TEST_P(ByValue, SizesFollowOpenCLLayout) {
  Program p = dev.compile(kSrc);
  EXPECT_EQ(param(p, "bv_scale", 2).value_bytes, 8u);  // par_str
  EXPECT_TRUE(param(p, "bv_scale", 2).by_value_aggregate());
  EXPECT_EQ(param(p, "bv_scale", 3).value_bytes, 16u);  // float4
  EXPECT_EQ(param(p, "bv_shift", 1).value_bytes, 32u);  // float4 aligns the struct to 16
  EXPECT_EQ(param(p, "bv_f3", 1).value_bytes, 16u);     // float3 takes 4 lanes
  EXPECT_EQ(param(p, "bv_f3", 2).value_bytes, 4u);      // a typedef of float is a scalar
  EXPECT_EQ(param(p, "bv_f3", 2).scalar, DType::f32);
  EXPECT_EQ(param(p, "bv_mixed", 1).value_bytes, sizeof(Mixed));  // 24
  EXPECT_EQ(param(p, "bv_mixed", 2).value_bytes, sizeof(Nested));  // 12
  EXPECT_EQ(param(p, "bv_packed", 1).value_bytes, 0u) << "attributes: encore cannot tell, so it trusts";
  EXPECT_EQ(param(p, "bv_int2", 1).value_bytes, 8u);
  EXPECT_EQ(param(p, "bv_int2", 2).value_bytes, 16u);
  EXPECT_EQ(param(p, "bv_scale", 0).value_bytes, 0u) << "pointers have no by-value size";
}

TEST_P(ByValue, WrongSizesAndKindsAreArgumentErrors) {
  Program p = dev.compile(kSrc);
  Kernel scale = p.kernel("bv_scale"), f3 = p.kernel("bv_f3");
  Buffer x = dev.alloc<float>(8), y = dev.alloc<float>(8);
  const ParStr ps{2.0f, 1};
  std::string e = argument_error([&] { dev.launch(scale, {8}, {}, x, y, bytes(ps), bytes(std::array<float, 3>{1, 2, 3})); });
  EXPECT_NE(e.find("argument 3"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 16 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("got 12 bytes"), std::string::npos) << e;
  e = argument_error([&] { dev.launch(scale, {8}, {}, x, y, 2.0f, bytes(std::array<float, 4>{})); });
  EXPECT_NE(e.find("expected encore::bytes(value) with the 8 bytes of a par_str"), std::string::npos) << e;
  e = argument_error([&] { dev.launch(scale, {8}, {}, x, y, bytes(int64_t{7}), bytes(std::array<float, 4>{})); });
  EXPECT_TRUE(e.empty()) << "an 8-byte value is an 8-byte struct's bytes: " << e;
  // a float3 is 16 bytes, not 12
  e = argument_error([&] { dev.launch(f3, {8}, {}, y, bytes(std::array<float, 3>{1, 2, 3}), 0.0f); });
  EXPECT_NE(e.find("a 3-vector takes the room of 4"), std::string::npos) << e;
  // bytes for a scalar parameter must be its size
  e = argument_error([&] { dev.launch(f3, {8}, {}, y, bytes(std::array<float, 4>{}), bytes(int16_t{1})); });
  EXPECT_NE(e.find("expected 4 bytes"), std::string::npos) << e;
  EXPECT_NO_THROW(dev.launch(f3, {8}, {}, y, bytes(std::array<float, 4>{}), bytes(1.0f)));
  EXPECT_THROW(bytes(nullptr, 4), ArgumentError);
  EXPECT_THROW(bytes(&ps, 0), ArgumentError);
  // nothing was left half-set: the kernel still launches with good arguments
  EXPECT_NO_THROW(dev.launch(scale, {8}, {}, x, y, bytes(ps), bytes(std::array<float, 4>{1, 1, 1, 1})));
  dev.synchronize();
}

TEST_P(ByValue, EagerComputesWithTheValues) {
  if (!is_cl()) GTEST_SKIP() << "NULL runs no kernels";
  Program p = dev.compile(kSrc);
  Buffer x = dev.alloc<float>(8), y = dev.alloc<float>(8);
  x.copyin(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  dev.launch(p.kernel("bv_scale"), {8}, {}, x, y, bytes(ParStr{0.5f, 3}), bytes(std::array<float, 4>{1, 2, 4, 8}));
  Shift s{{2, 0, 0, 0.25f}, 3};
  dev.launch(p.kernel("bv_shift"), {8}, {}, y, bytes(s));
  std::vector<float> got = y.copyout<float>(), want(8);
  const float w[4] = {1, 2, 4, 8};
  for (int i = 0; i < 8; ++i) want[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i + 1) * w[i & 3] + 3.0f + 2.0f * 3.0f + 0.25f;
  EXPECT_EQ(got, want);

  dev.launch(p.kernel("bv_f3"), {8}, {}, y, bytes(std::array<float, 4>{1, 10, 100, -1}), 0.5f);
  EXPECT_EQ(y.copyout<float>()[7], 1 + 20 + 400 + 0.5f);

  Buffer d = dev.alloc<double>(1);
  Mixed m{};
  m.c = 3;
  m.d = 0.125;
  m.s[2] = 40;
  Nested n{{1.5f, 0}, 7};
  dev.launch(p.kernel("bv_mixed"), {1}, {}, d, bytes(m), bytes(n));
  EXPECT_EQ(d.copyout<double>()[0], 3 + 0.125 + 40 + 1.5 + 7);

  // a packed struct's size is the user's word: 5 bytes
  Buffer i = dev.alloc<int32_t>(2);
  dev.launch(p.kernel("bv_packed"), {2}, {}, i, bytes(Packed{2, 40}));
  EXPECT_EQ(i.copyout<int32_t>(), (std::vector<int32_t>{42, 42}));

  std::array<uint8_t, 16> u{};
  u[15] = 9;
  dev.launch(p.kernel("bv_int2"), {2}, {}, i, bytes(std::array<int32_t, 2>{4, 2}), bytes(u));
  EXPECT_EQ(i.copyout<int32_t>(), (std::vector<int32_t>{51, 51}));
}

TEST_P(ByValue, ReplayEqualsEager) {
  Program p = dev.compile(kSrc);
  Kernel scale = p.kernel("bv_scale"), shift = p.kernel("bv_shift");
  const ParStr ps{1.5f, -2};
  const Shift sh{{0.5f, 0, 0, 1}, 4};
  auto step = [&](const Buffer& x) {
    Buffer y = dev.alloc<float>(x.count());
    dev.launch(scale, {x.count()}, {}, x, y, bytes(ps), bytes(std::array<float, 4>{1, -1, 2, 0.5f}));
    dev.launch(shift, {x.count()}, {}, y, bytes(sh));
    return y;
  };
  TinyJit jit(step);
  for (int call = 0; call < 5; ++call) {
    Buffer x = dev.alloc<float>(64);
    std::vector<float> h(64);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i) * 0.25f + static_cast<float>(call);
    x.copyin(h);
    std::vector<float> got = jit(x).copyout<float>();
    std::vector<float> want = step(x).copyout<float>();
    if (is_cl()) {  // NULL runs no kernels: its fresh buffers hold whatever they held
      EXPECT_EQ(got, want) << "call " << call;
    }
  }
  EXPECT_EQ(jit.unit().items().size(), 2u) << "the calls from 2 on replayed the captured unit";
}

TEST_P(ByValue, ValueThatChangesBetweenCall0AndCall1IsAJitError) {
  Program p = dev.compile(kSrc);
  Kernel shift = p.kernel("bv_shift");
  int calls = 0;
  TinyJit jit([&](const Buffer& y) {
    Shift s{{1, 0, 0, 0}, calls++};  // a host value frozen at capture: caught
    dev.launch(shift, {y.count()}, {}, y, bytes(s));
  });
  Buffer y = dev.alloc<float>(16);
  jit(y);
  try {
    jit(y);
    FAIL() << "expected a JitError";
  } catch (const JitError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("32 bytes 0x"), std::string::npos) << m;
    EXPECT_NE(m.find("argument 1"), std::string::npos) << m;
    EXPECT_NE(m.find("encore::bytes_from(span)"), std::string::npos) << m;  // the per-call form, not "must be a Variable"
    EXPECT_EQ(m.find("must be a Variable"), std::string::npos) << m;          // which a struct cannot be
  }
}

// A host struct's padding holds whatever was there (here: other garbage each call). The kernel never
// reads it, so only member bytes may tell call 0 from call 1: the capture must succeed and replay.
TEST_P(ByValue, PaddingBytesDoNotFailTheCaptureCheck) {
  Program p = dev.compile(kSrc);
  Kernel mixed = p.kernel("bv_mixed"), f3 = p.kernel("bv_f3");
  int call = 0;
  auto garbage = [](void* v, size_t n, int call) { std::memset(v, 0x11 * (call + 1), n); };
  auto step = [&](const Buffer& y, const Buffer& z) {
    Mixed m;
    Nested n;
    std::array<float, 4> v;
    garbage(&m, sizeof m, call);
    garbage(&n, sizeof n, call);
    garbage(v.data(), sizeof v, call);  // lane 4 of a float3 is padding too
    m.c = 3;
    m.d = 0.5;
    m.s[0] = m.s[1] = 0;
    m.s[2] = 7;
    n.inner = ParStr{2.f, 1};
    n.tag = 9;
    v[0] = 1, v[1] = 2, v[2] = 3;
    ++call;
    dev.launch(mixed, {1}, {}, y, bytes(m), bytes(n));
    dev.launch(f3, {z.count()}, {}, z, bytes(v), 0.25f);
  };
  TinyJit jit(step);
  Buffer y = dev.alloc<double>(1), z = dev.alloc<float>(4);
  for (int k = 0; k < 4; ++k) {
    y.copyin(std::vector<double>{0});
    z.copyin(std::vector<float>(4, 0.f));
    ASSERT_NO_THROW(jit(y, z)) << "call " << k;
    if (is_cl()) {
      EXPECT_EQ(y.copyout<double>(), std::vector<double>{3 + 0.5 + 7 + 2 + 9}) << "call " << k;
      EXPECT_EQ(z.copyout<float>(), std::vector<float>(4, 1 + 4 + 12 + 0.25f)) << "call " << k;
    }
  }
  EXPECT_EQ(jit.unit().items().size(), 2u) << "calls 2 and 3 replayed the captured unit";
}

INSTANTIATE_TEST_SUITE_P(Devices, ByValue, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
