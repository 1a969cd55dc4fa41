// DESIGN rule 6: a buffer passed to a pointer parameter has the parameter's element type. A
// mismatch is an ArgumentError at launch, eagerly and while capturing, on OpenCL and NULL alike;
// void*, char*, uchar* and struct pointees take any buffer; vector pointees take their element type
// in whole vectors; typedefs and #defines in the source resolve; an alias encore cannot resolve is
// accepted unchecked (and logged), never a false error; Buffer::as reinterprets on purpose.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;
using namespace encore_test;

namespace {

class Types : public DeviceTest {};

const char* kTyped = R"CL(
__kernel void widen(__global const double* a, __global long* o) {
  size_t i = get_global_id(0); o[i] = (long)a[i];
}
__kernel void fset(__global float* x) { x[get_global_id(0)] = 1.5f; }
)CL";

TEST_P(Types, MismatchedElementTypeIsAnArgumentError) {
  Program p = dev.compile(kTyped);
  Kernel widen = p.kernel("widen"), fset = p.kernel("fset");
  Buffer a = dev.alloc<float>(4).set_name("a");
  Buffer o = dev.alloc<int32_t>(4).set_name("o");
  std::string e = argument_error([&] { dev.launch(widen, {4}, {}, a, o); });
  expect_has(e, {"kernel widen", "argument 0", "double* a", "expected a buffer of f64", "f32[4] 'a'", "as(DType::f64)"});
  // the second argument is checked as well
  Buffer ad = dev.alloc<double>(4);
  e = argument_error([&] { dev.launch(widen, {4}, {}, ad, o); });
  expect_has(e, {"argument 1", "long* o", "expected a buffer of i64", "i32[4] 'o'"});
  // same size, other type: still a mismatch
  Buffer xi = dev.alloc<int32_t>(4);
  e = argument_error([&] { dev.launch(fset, {4}, {}, xi); });
  expect_has(e, {"kernel fset", "float* x", "expected a buffer of f32", "i32[4]"});
  // the right types run
  Buffer od = dev.alloc<int64_t>(4);
  ad.copyin(std::vector<double>{1, 2, 3, 4});
  dev.launch(widen, {4}, {}, ad, od);
  if (is_cl()) {
    EXPECT_EQ(od.copyout<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  }
  // a view keeps its element type: a view of the wrong type is refused too, one of the right type runs
  Buffer big = dev.alloc<int32_t>(256);
  e = argument_error([&] { dev.launch(fset, {4}, {}, big.view(0, 4)); });
  expect_has(e, {"expected a buffer of f32"});
  dev.launch(fset, {4}, {}, big.view(0, 4).as(DType::f32));
}

TEST_P(Types, MismatchIsRefusedWhileCapturingAndThroughTinyJit) {
  Kernel fset = dev.compile(kTyped).kernel("fset");
  Buffer xi = dev.alloc<int32_t>(8);
  {
    Capture cap;
    std::string e = argument_error([&] { dev.launch(fset, {8}, {}, xi); });
    expect_has(e, {"kernel fset", "expected a buffer of f32"});
    EXPECT_EQ(cap.items_recorded(), 0u) << "a refused launch is not recorded";
  }
  auto jit = TinyJit([&](const Buffer& x) { dev.launch(fset, {8}, {}, x); });
  for (int call = 0; call < 3; ++call)
    EXPECT_NE(argument_error([&] { jit(xi); }), "") << "call " << call;
  Buffer xf = dev.alloc<float>(8);
  for (int call = 0; call < 3; ++call) jit(xf);  // the same jit still works with the right type
  if (is_cl()) {
    EXPECT_EQ(xf.copyout<float>(), std::vector<float>(8, 1.5f));
  }
}

TEST_P(Types, BytesVoidAndStructPointeesTakeAnyBuffer) {
  Program p = dev.compile(R"CL(
typedef struct { float x, y; } Pt;
struct Raw { int a; };
__kernel void anyp(__global void* v, __global char* c, __global uchar* u, __global Pt* s, __global struct Raw* r,
                   __global uchar4* u4) {}
)CL");
  Kernel k = p.kernel("anyp");
  for (const KernelParam& prm : k.params()) EXPECT_FALSE(prm.pointee) << prm.type_name;
  Buffer f = dev.alloc<float>(6), i = dev.alloc<int64_t>(3), h = dev.alloc<uint16_t>(5);
  dev.launch(k, {1}, {}, f, i, h, f, i, h);
}

TEST_P(Types, VectorPointeesTakeTheirElementTypeInWholeVectors) {
  Program p = dev.compile(R"CL(
__kernel void v4(__global float4* x) { x[get_global_id(0)] *= 2.0f; }
__kernel void v3(__global int3* x) { x[get_global_id(0)] += (int3)(1); }
)CL");
  Kernel v4 = p.kernel("v4"), v3 = p.kernel("v3");
  EXPECT_EQ(v4.params()[0].pointee, DType::f32);
  EXPECT_EQ(v4.params()[0].pointee_lanes, 4);
  EXPECT_EQ(v3.params()[0].pointee_lanes, 4) << "a 3-vector takes the room of 4";
  Buffer x = dev.alloc<float>(8);
  x.copyin(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  dev.launch(v4, {2}, {}, x);
  if (is_cl()) {
    EXPECT_EQ(x.copyout<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  }
  expect_has(argument_error([&] { dev.launch(v4, {1}, {}, dev.alloc<float>(6)); }),
             {"float4* x", "whole number of float4", "4 f32 elements each", "f32[6]"});
  expect_has(argument_error([&] { dev.launch(v4, {2}, {}, dev.alloc<int32_t>(8)); }), {"expected a buffer of f32"});
  dev.launch(v3, {2}, {}, dev.alloc<int32_t>(8));
  expect_has(argument_error([&] { dev.launch(v3, {1}, {}, dev.alloc<int32_t>(3)); }), {"int3* x", "4 i32 elements each"});
}

TEST_P(Types, AliasesInTheSourceResolve) {
  Program p = dev.compile(R"CL(
typedef float real;
typedef real real_t;         // an alias of an alias
typedef unsigned int index_t;
#define ACC double
typedef float4 vec;
__kernel void al(__global real* a, __global real_t* b, __global const index_t* c, __global ACC* d, __global vec* e) {}
)CL");
  const auto& prm = p.kernel("al").params();
  ASSERT_EQ(prm.size(), 5u);
  EXPECT_EQ(prm[0].pointee, DType::f32);
  EXPECT_EQ(prm[1].pointee, DType::f32);
  EXPECT_EQ(prm[2].pointee, DType::u32);
  EXPECT_EQ(prm[3].pointee, DType::f64);
  EXPECT_EQ(prm[4].pointee, DType::f32);
  EXPECT_EQ(prm[4].pointee_lanes, 4);
  Kernel k = p.kernel("al");
  Buffer f = dev.alloc<float>(4), u = dev.alloc<uint32_t>(4), d = dev.alloc<double>(4);
  dev.launch(k, {1}, {}, f, f, u, d, f);
  expect_has(argument_error([&] { dev.launch(k, {1}, {}, u, f, u, d, f); }), {"real* a", "expected a buffer of f32", "u32[4]"});
  expect_has(argument_error([&] { dev.launch(k, {1}, {}, f, f, f, d, f); }), {"index_t* c", "expected a buffer of u32"});
}

// What encore cannot read is accepted unchecked, and said once at compile (ENCORE_DEBUG=1 prints
// the log): never a false error on a correct program.
TEST_P(Types, UnresolvedAliasesAreNotCheckedAndLogged) {
  encore_test::LogCapture logs;
  Program p = dev.compile("// " + encore_test::unique_token() + R"CL(
#ifdef __FAST_RELAXED_MATH__
typedef double real;
#else
typedef float real;
#endif
typedef float v4f __attribute__((ext_vector_type(4)));
__kernel void unres(__global real* a, __global v4f* b) {}
)CL");
  Kernel k = p.kernel("unres");
  EXPECT_FALSE(k.params()[0].pointee);
  EXPECT_FALSE(k.params()[1].pointee);
  dev.launch(k, {1}, {}, dev.alloc<float>(4), dev.alloc<float>(4));
  std::string text = logs.text();
  expect_has(text, {"kernel unres parameter a (real*)", "not type-checked", "kernel unres parameter b (v4f*)"});
  // a -D option naming a type resolves like a #define
  Program p2 = dev.compile("__kernel void unres2(__global real* a) {}", "-Dreal=double");
  EXPECT_EQ(p2.kernel("unres2").params()[0].pointee, DType::f64) << "-D defines resolve";
}

TEST_P(Types, AsReinterpretsTheSameBytes) {
  Kernel k = dev.compile("__kernel void bits(__global uint* o) { o[get_global_id(0)] = 0x3f800000u; }").kernel("bits");
  Buffer f = dev.alloc<float>(4);
  EXPECT_THROW(dev.launch(k, {4}, {}, f), ArgumentError);
  Buffer u = f.as(DType::u32);
  EXPECT_EQ(u.dtype(), DType::u32);
  EXPECT_EQ(u.count(), 4u);
  EXPECT_TRUE(u.overlaps(f));
  dev.launch(k, {4}, {}, u);
  if (is_cl()) {
    EXPECT_EQ(f.copyout<float>(), std::vector<float>(4, 1.0f));
  }
  EXPECT_EQ(f.as(DType::f64).count(), 2u);
  EXPECT_EQ(f.as(DType::u8).count(), 16u);
  EXPECT_EQ(f.as(DType::f32), f) << "as its own type is itself";
  Buffer three = dev.alloc<float>(3);
  try {
    (void)three.as(DType::f64);
    FAIL() << "12 bytes are not a whole number of f64";
  } catch (const ArgumentError& e) {
    expect_has(e.what(), {"Buffer::as", "12 bytes", "f64"});
  }
  // a view reinterpreted stays at its place
  Buffer big = dev.alloc<float>(1024);
  const size_t elems = dev.info().base_align_bytes / sizeof(float);
  Buffer tail = big.view(elems, 4).as(DType::i32);
  EXPECT_EQ(tail.offset(), dev.info().base_align_bytes);
  EXPECT_EQ(tail.count(), 4u);
}

// Replay never sees a buffer of another type: an input of another dtype is another signature (a
// JitError with max_units = 1, else a new capture whose launch is refused).
TEST_P(Types, ReplayedJitRefusesAnInputOfAnotherType) {
  Kernel fset = dev.compile(kTyped).kernel("fset");
  auto jit = TinyJit([&](const Buffer& x) { dev.launch(fset, {8}, {}, x); });
  Buffer xf = dev.alloc<float>(8);
  for (int call = 0; call < 4; ++call) jit(xf);
  EXPECT_THROW(jit(dev.alloc<int32_t>(8)), Error);
  jit(xf);
}

INSTANTIATE_TEST_SUITE_P(Devices, Types, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
