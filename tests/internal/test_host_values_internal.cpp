// The integer conversion behind host values and variables (src/core/dtype.cpp), edge by edge, and the
// f16 capability check with a faked device: a NULL device that does not report cl_khr_fp16
// refuses a by-value half at launch but keeps f16 buffers working (PoCL 3.1's CPU device takes
// the same path through its compiler: tests/public/test_host_values.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "encore/encore.hpp"
#include "core/device_impl.hpp"
#include "core/scalar.hpp"

using namespace encore;

namespace {

uint64_t conv(DType from, uint64_t bits, DType to, bool* ok = nullptr) {
  uint64_t out = 0xdead;
  const bool r = detail::convert_integer(from, bits, to, out);
  if (ok) *ok = r;
  return r ? out : 0xdead;
}

bool fits(DType from, uint64_t bits, DType to) {
  bool ok = false;
  conv(from, bits, to, &ok);
  return ok;
}

TEST(HostValuesInternal, ConvertIntegerEdges) {
  // signed sources sign-extend from their own width; the high bytes of `bits` are ignored
  EXPECT_EQ(conv(DType::i8, 0xff, DType::i64), UINT64_MAX);                    // -1
  EXPECT_EQ(conv(DType::i8, 0xffffff80, DType::i16), 0xff80u);                 // -128
  EXPECT_EQ(conv(DType::i32, 0x80000000u, DType::i64), uint64_t(int64_t{INT32_MIN}));
  EXPECT_EQ(conv(DType::u8, 0xff, DType::i16), 255u);
  EXPECT_EQ(conv(DType::i64, uint64_t(-5), DType::i8), 0xfbu);                 // -5 as one byte
  EXPECT_EQ(conv(DType::boolean, 1, DType::i32), 1u);
  EXPECT_EQ(conv(DType::u64, UINT64_MAX, DType::u64), UINT64_MAX);
  // the limits of every target
  EXPECT_TRUE(fits(DType::i64, 127, DType::i8));
  EXPECT_FALSE(fits(DType::i64, 128, DType::i8));
  EXPECT_TRUE(fits(DType::i64, uint64_t(-128), DType::i8));
  EXPECT_FALSE(fits(DType::i64, uint64_t(-129), DType::i8));
  EXPECT_TRUE(fits(DType::i64, 65535, DType::u16));
  EXPECT_FALSE(fits(DType::i64, 65536, DType::u16));
  EXPECT_FALSE(fits(DType::i64, uint64_t(-1), DType::u16));
  EXPECT_TRUE(fits(DType::u64, 4294967295u, DType::u32));
  EXPECT_FALSE(fits(DType::u64, 4294967296u, DType::u32));
  EXPECT_TRUE(fits(DType::u64, uint64_t{INT64_MAX}, DType::i64));
  EXPECT_FALSE(fits(DType::u64, uint64_t{INT64_MAX} + 1, DType::i64));
  EXPECT_FALSE(fits(DType::i64, uint64_t(INT64_MIN), DType::u64));
  EXPECT_TRUE(fits(DType::i64, uint64_t(INT64_MIN), DType::i64));
  EXPECT_FALSE(fits(DType::i32, 2, DType::boolean));
  EXPECT_EQ(detail::integer_range(DType::i16), "i16 holds -32768 to 32767");
  EXPECT_EQ(detail::integer_range(DType::u64), "u64 holds 0 to 18446744073709551615");
}

TEST(HostValuesInternal, ByValueHalfNeedsFp16) {
  Device d(detail::open_null());
  ASSERT_TRUE(d.supports(DType::f16));
  d.impl()->info.extensions.clear();  // a device without cl_khr_fp16 (and without cl_khr_fp64)
  EXPECT_FALSE(d.supports(DType::f16));
  EXPECT_FALSE(d.supports(DType::f64));
  EXPECT_TRUE(d.supports(DType::bf16));
  Program p = d.compile("__kernel void hvi_h(__global half* x, half s) { }\n__kernel void hvi_g(__global half* x) { }\n");
  Buffer x = d.alloc<half>(4);
  x.copyin(std::vector<half>(4, half{0x3c00}));
  try {
    d.launch(p.kernel("hvi_h"), {4}, {}, x, half{0x3c00});
    ADD_FAILURE() << "a by-value half launched on a device without cl_khr_fp16";
  } catch (const ArgumentError& e) {
    const std::string m = e.what();
    for (const char* w : {"hvi_h", "half s", "cl_khr_fp16", "does not report"}) EXPECT_NE(m.find(w), std::string::npos) << w << ": " << m;
  }
  d.launch(p.kernel("hvi_g"), {4}, {}, x);  // f16 buffers are storage: still fine
  EXPECT_EQ(x.copyout<half>().size(), 4u);
}

}  // namespace
