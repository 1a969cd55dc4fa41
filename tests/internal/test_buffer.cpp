// Buffers: typed host transfers for every dtype, size and type checks, views (and views of views,
// view_as), alignment errors, versions, lazy allocation. Device-independent: runs on every OpenCL
// device and on NULL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;
using encore_test::DeviceTest;

namespace {

// Views start at multiples of the device's base alignment (128 bytes on PoCL, 512 or more on
// GPUs): `a` is that alignment in 4-byte elements, and every view offset below is a multiple of it.
class BufferTest : public DeviceTest {
 protected:
  size_t a() const { return dev.info().base_align_bytes / 4; }
};

// A deterministic, non-trivial value of host type T for element i (covers negative values and
// high bits).
template <class T> T pattern(size_t i) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>((static_cast<double>(i) - 17.25) * 1.5);
  } else {
    uint64_t v = 0x9E3779B97F4A7C15ull * (i + 1);
    T t;
    std::memcpy(&t, &v, sizeof t);
    return t;
  }
}

template <class T> void round_trip(const Device& dev, DType t, size_t n) {
  SCOPED_TRACE(std::string(name(t)));
  Buffer b = dev.alloc(t, n);
  EXPECT_EQ(b.dtype(), t);
  EXPECT_EQ(b.count(), n);
  EXPECT_EQ(b.nbytes(), n * size(t));
  std::vector<T> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = pattern<T>(i);
  b.copyin(host);
  std::vector<T> back = b.copyout<T>();
  ASSERT_EQ(back.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(std::memcmp(&back[i], &host[i], sizeof(T)), 0) << "element " << i;
  // the span form into caller memory
  std::vector<T> back2(n);
  b.copyout(std::span<T>(back2));
  EXPECT_EQ(std::memcmp(back2.data(), host.data(), n * sizeof(T)), 0);
}

}  // namespace

TEST_P(BufferTest, EveryDtypeRoundTrips) {
  const size_t n = 37;  // not a multiple of anything convenient
  for (DType t : all_dtypes) {
    switch (t) {
      case DType::f16: round_trip<uint16_t>(dev, t, n); break;  // f16 as raw bits
      case DType::f32: round_trip<float>(dev, t, n); break;
      case DType::f64: round_trip<double>(dev, t, n); break;
      case DType::i8: round_trip<int8_t>(dev, t, n); break;
      case DType::i16: round_trip<int16_t>(dev, t, n); break;
      case DType::i32: round_trip<int32_t>(dev, t, n); break;
      case DType::i64: round_trip<int64_t>(dev, t, n); break;
      case DType::u8: round_trip<uint8_t>(dev, t, n); break;
      case DType::u16: round_trip<uint16_t>(dev, t, n); break;
      case DType::u32: round_trip<uint32_t>(dev, t, n); break;
      case DType::u64: round_trip<uint64_t>(dev, t, n); break;
      case DType::boolean: round_trip<uint8_t>(dev, t, n); break;  // bool as bytes
      case DType::bf16: round_trip<uint16_t>(dev, t, n); break;    // bf16 as raw bits
    }
  }
}

TEST_P(BufferTest, HalfTypeRoundTrips) {
  Buffer b = dev.alloc(DType::f16, 5);
  std::vector<half> h{{0x3c00}, {0xbc00}, {0x7bff}, {0x0001}, {0x8000}};
  b.copyin(h);
  std::vector<half> back = b.copyout<half>();
  ASSERT_EQ(back.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(back[i].bits, h[i].bits);
  // and the same bytes read back as uint16_t
  std::vector<uint16_t> raw = b.copyout<uint16_t>();
  EXPECT_EQ(raw[0], 0x3c00);
  EXPECT_EQ(raw[2], 0x7bff);
}

TEST_P(BufferTest, SizeMismatchThrows) {
  Buffer b = dev.alloc<float>(16);
  EXPECT_THROW(b.copyin(std::vector<float>(15)), ArgumentError);
  EXPECT_THROW(b.copyin(std::vector<float>(17)), ArgumentError);
  std::vector<float> small(8);
  EXPECT_THROW(b.copyout(std::span<float>(small)), ArgumentError);
  std::vector<unsigned char> bytes(63);
  EXPECT_THROW(b.copyin_bytes(bytes.data(), bytes.size()), ArgumentError);
  EXPECT_THROW(b.copyout_bytes(bytes.data(), bytes.size()), ArgumentError);
  try {
    b.copyin(std::vector<float>(15));
    FAIL();
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("60 bytes given"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();
  }
  // a failed copyin leaves the buffer usable
  std::vector<float> ok(16, 2.5f);
  b.copyin(ok);
  EXPECT_EQ(b.copyout<float>(), ok);
}

TEST_P(BufferTest, HostTypeMismatchThrows) {
  Buffer f = dev.alloc<float>(4);
  EXPECT_THROW(f.copyin(std::vector<int32_t>(4)), ArgumentError);
  EXPECT_THROW(f.copyout<uint32_t>(), ArgumentError);
  Buffer h = dev.alloc(DType::f16, 4);
  EXPECT_NO_THROW(h.copyin(std::vector<uint16_t>(4)));
  EXPECT_THROW(h.copyin(std::vector<int16_t>(4)), ArgumentError);
  Buffer u = dev.alloc(DType::u16, 4);
  EXPECT_THROW(u.copyin(std::vector<half>(4)), ArgumentError);  // f16 host data into a u16 buffer
}

TEST_P(BufferTest, BadConstructionAndNullHandles) {
  EXPECT_THROW(dev.alloc<float>(0), ArgumentError);
  EXPECT_THROW(Buffer(Device{}, DType::f32, 4), ArgumentError);
  Buffer null;
  EXPECT_FALSE(null);
  EXPECT_THROW(null.count(), ArgumentError);
  EXPECT_THROW(null.copyin(std::vector<float>(1)), ArgumentError);
  EXPECT_EQ(null.describe(), "null buffer");
}

TEST_P(BufferTest, LazyAllocation) {
  Buffer b = dev.alloc<int32_t>(a() + 68);
  EXPECT_FALSE(b.allocated());
  Buffer v = b.view(a(), 32);
  EXPECT_FALSE(v.allocated());
  v.copyin(std::vector<int32_t>(32, 7));
  EXPECT_TRUE(b.allocated());
  EXPECT_TRUE(v.allocated());
}

TEST_P(BufferTest, ViewsShareStorage) {
  const size_t a = this->a(), n = 8 * a;
  Buffer x = dev.alloc<float>(n);
  x.set_name("x");
  std::vector<float> host(n);
  std::iota(host.begin(), host.end(), 0.f);
  x.copyin(host);

  Buffer v = x.view(2 * a, 4 * a);  // two alignments in
  EXPECT_TRUE(v.is_view());
  EXPECT_FALSE(x.is_view());
  EXPECT_EQ(v.offset(), 8 * a);
  EXPECT_EQ(v.count(), 4 * a);
  EXPECT_EQ(v.nbytes(), 16 * a);
  EXPECT_EQ(v.base(), x);
  EXPECT_EQ(v.device(), dev);
  EXPECT_EQ(v.name(), "x");
  EXPECT_NE(v.describe().find("view at byte " + std::to_string(8 * a)), std::string::npos) << v.describe();
  std::vector<float> got = v.copyout<float>();
  for (size_t i = 0; i < 4 * a; ++i) ASSERT_EQ(got[i], static_cast<float>(2 * a + i));

  // a write through the view lands in the base, and nowhere else
  v.copyin(std::vector<float>(4 * a, -1.f));
  std::vector<float> all = x.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(all[i], (i >= 2 * a && i < 6 * a) ? -1.f : static_cast<float>(i)) << i;

  // a view of a view is a view of the base, offsets added
  Buffer vv = v.view(a, 2 * a);
  EXPECT_EQ(vv.offset(), 8 * a + 4 * a);
  EXPECT_EQ(vv.base(), x);
  vv.copyin(std::vector<float>(2 * a, 5.f));
  all = x.copyout<float>();
  for (size_t i = 0; i < n; ++i) {
    float want = (i >= 3 * a && i < 5 * a) ? 5.f : (i >= 2 * a && i < 6 * a) ? -1.f : static_cast<float>(i);
    ASSERT_EQ(all[i], want) << i;
  }

  // overlap is over storage
  EXPECT_TRUE(v.overlaps(x));
  EXPECT_TRUE(vv.overlaps(v));
  EXPECT_FALSE(x.view(0, a).overlaps(x.view(a, a)));
  EXPECT_FALSE(x.overlaps(dev.alloc<float>(n)));

  // a full-size view of the same type is the buffer itself
  EXPECT_EQ(x.view(0, n), x);
}

TEST_P(BufferTest, ViewAsReinterpretsBytes) {
  const size_t a = this->a(), n = 8 * a, align = 4 * a;
  Buffer x = dev.alloc<float>(n);
  std::vector<float> host(n);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i) - 3.f;
  x.copyin(host);
  Buffer u = x.view_as(DType::u32, align, 2 * a);  // floats a..3a as bits
  EXPECT_EQ(u.dtype(), DType::u32);
  EXPECT_EQ(u.offset(), align);
  std::vector<uint32_t> bits = u.copyout<uint32_t>();
  for (size_t i = 0; i < 2 * a; ++i) {
    uint32_t want;
    std::memcpy(&want, &host[a + i], 4);
    ASSERT_EQ(bits[i], want) << i;
  }
  Buffer bytes = x.view_as(DType::u8, 0, 4 * n);  // all bytes: a view (dtype differs), not x itself
  EXPECT_TRUE(bytes.is_view());
  std::vector<uint8_t> b = bytes.copyout<uint8_t>();
  EXPECT_EQ(std::memcmp(b.data(), host.data(), 4 * n), 0);
  // writes through a reinterpreting view are visible as floats
  float one = 1.f;
  uint32_t one_bits;
  std::memcpy(&one_bits, &one, 4);
  u.view(0, a).copyin(std::vector<uint32_t>(a, one_bits));
  std::vector<float> f = x.copyout<float>();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(f[i], (i >= a && i < 2 * a) ? 1.f : host[i]) << i;
  // view of a reinterpreting view, back to float
  Buffer back = u.view_as(DType::f32, align, a / 2);  // byte 2 * align into x: floats 2a..2.5a
  EXPECT_EQ(back.offset(), 2 * align);
  std::vector<float> bf = back.copyout<float>();
  for (size_t i = 0; i < a / 2; ++i) ASSERT_EQ(bf[i], host[2 * a + i]);
}

TEST_P(BufferTest, MisalignedAndOutOfRangeViewsThrow) {
  const size_t align = dev.info().base_align_bytes, n = std::max<size_t>(1024, align);
  Buffer x = dev.alloc<float>(n);
  ASSERT_GT(align, 4u);
  try {
    (void)x.view(1, 16);
    FAIL() << "misaligned view accepted";
  } catch (const ArgumentError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("alignment"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(align)), std::string::npos) << m;
  }
  EXPECT_THROW((void)x.view_as(DType::u8, 4, 16), ArgumentError);
  // a view of an aligned view must itself be aligned in the base storage
  Buffer v = x.view(align / 4, 2 * align / 4);
  EXPECT_THROW((void)v.view(1, 4), ArgumentError);
  EXPECT_NO_THROW((void)v.view(align / 4, 4));
  // out of range, empty
  EXPECT_THROW((void)x.view(n - align / 4, 2 * align / 4), ArgumentError);  // aligned, past the end
  EXPECT_THROW((void)x.view(0, 0), ArgumentError);
  EXPECT_THROW((void)x.view(0, n + 1), ArgumentError);
  EXPECT_THROW((void)x.view_as(DType::f64, 0, n / 2 + 1), ArgumentError);
  // the buffer is still fine after the failures
  x.copyin(std::vector<float>(n, 3.f));
  EXPECT_EQ(x.copyout<float>()[n - 1], 3.f);
}

TEST_P(BufferTest, ViewKeepsStorageAlive) {
  Buffer v;
  {
    Buffer x = dev.alloc<int32_t>(4 * a() + 128);
    std::vector<int32_t> h(4 * a() + 128);
    std::iota(h.begin(), h.end(), 100);
    x.copyin(h);
    v = x.view(4 * a(), 64);
  }
  std::vector<int32_t> got = v.copyout<int32_t>();
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], static_cast<int32_t>(100 + 4 * a() + i));
}

TEST_P(BufferTest, VersionsBumpOnWrites) {
  const size_t n = std::max<size_t>(256, 2 * a());
  Buffer x = dev.alloc<float>(n);
  Buffer y = dev.alloc<float>(n);
  uint64_t v0 = x.version();
  x.copyin(std::vector<float>(n, 1.f));
  uint64_t v1 = x.version();
  EXPECT_GT(v1, v0);
  (void)x.copyout<float>();
  EXPECT_EQ(x.version(), v1) << "a read is not a write";
  x.touch();
  uint64_t v2 = x.version();
  EXPECT_GT(v2, v1);
  // a write through a view bumps the storage, seen through every handle of it
  Buffer v = x.view(a(), 32);
  v.copyin(std::vector<float>(32, 2.f));
  EXPECT_GT(x.version(), v2);
  EXPECT_EQ(v.version(), x.version());
  v.touch();
  EXPECT_EQ(v.version(), x.version());
  // copy bumps the destination, not the source
  uint64_t xs = x.version(), ys = y.version();
  dev.copy(y, x);
  EXPECT_GT(y.version(), ys);
  EXPECT_EQ(x.version(), xs);
  EXPECT_EQ(y.copyout<float>(), x.copyout<float>());
}

TEST_P(BufferTest, CopiesBetweenViewsOfOneBuffer) {
  const size_t a = this->a(), n = 16 * a;
  Buffer x = dev.alloc<int32_t>(n);
  std::vector<int32_t> h(n);
  std::iota(h.begin(), h.end(), 0);
  x.copyin(h);
  dev.copy(x.view(8 * a, 4 * a), x.view(0, 4 * a));  // disjoint ranges
  std::vector<int32_t> got = x.copyout<int32_t>();
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], (i >= 8 * a && i < 12 * a) ? static_cast<int32_t>(i - 8 * a) : static_cast<int32_t>(i)) << i;
  // sizes must match, in bytes
  EXPECT_THROW(dev.copy(x.view(0, 2 * a), x.view(8 * a, a)), ArgumentError);
  // a copy across dtypes of equal byte size is allowed (bytes are bytes)
  Buffer f = dev.alloc<float>(n);
  dev.copy(f, x);
  {  // copies move bytes on every device, NULL included
    std::vector<float> fb = f.copyout<float>();
    std::vector<int32_t> xb = x.copyout<int32_t>();
    ASSERT_EQ(std::memcmp(fb.data(), xb.data(), n * 4), 0) << "the copy across dtypes must move the bytes unchanged";
  }
  EXPECT_THROW(dev.copy(Buffer{}, x), ArgumentError);
  // overlapping ranges are an error on every device (OpenCL cannot do them), naming both sides
  got = x.copyout<int32_t>();
  try {
    dev.copy(x.view(a, 4 * a), x.view(0, 4 * a));
    FAIL() << "overlapping copy accepted";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dev.copy(x, x), ArgumentError);
  EXPECT_EQ(x.copyout<int32_t>(), got) << "a rejected copy writes nothing";
}

INSTANTIATE_TEST_SUITE_P(Devices, BufferTest, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);
