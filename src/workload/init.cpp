// The init generators. `uniform` must be bit-exact anywhere (tests/workload/gen_uniform_golden.py
// computes the same values in Python), so its arithmetic is spelled out step by step and kept away
// from fused multiply-add by volatile temporaries.
#include "workload/init.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "workload/reader.hpp"

namespace encore::workload {

__extension__ typedef __int128 i128;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double uniform_value(double lo, double hi, uint64_t seed, uint64_t i) {
  uint64_t r = splitmix64((seed << 32) + i);       // seed * 2^32 + i, mod 2^64
  volatile double u = static_cast<double>(r >> 40) * 0x1p-24;  // exact: 24 bits scaled by a power of two
  volatile double span = hi - lo;
  volatile double scaled = span * u;
  return lo + scaled;
}

uint16_t f16_from_double(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;  // 65520 is the midpoint between 65504 and 2^16: rounds to inf (even)
  if (a < 0x1p-14) {                        // subnormal (or zero): a multiple of 2^-24
    double m = std::nearbyint(a * 0x1p24);  // exact scaling, then round to nearest even
    return sign | static_cast<uint16_t>(m);  // m == 1024 encodes the smallest normal, as it should
  }
  int e;
  std::frexp(a, &e);                        // a = f·2^e, f in [0.5, 1): exponent e-1
  double m = std::nearbyint(std::ldexp(a, 11 - e));  // 11 significant bits in [1024, 2048]
  // A carry to 2048 rolls into the exponent field, which is the right encoding.
  return sign | static_cast<uint16_t>(((e - 1 + 15) << 10) + static_cast<int>(m) - 1024);
}

double f16_to_double(uint16_t h) {
  double s = (h & 0x8000) ? -1.0 : 1.0;
  int e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * std::numeric_limits<double>::infinity();
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

uint16_t bf16_from_double(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7fc0;
  double a = std::fabs(v);
  if (a >= 0x1.ffp127) return sign | 0x7f80;  // the midpoint between the largest bf16 and 2^128: rounds to inf (even)
  if (a < 0x1p-126) {                          // subnormal (or zero): a multiple of 2^-133
    double m = std::nearbyint(a * 0x1p133);
    return sign | static_cast<uint16_t>(m);    // m == 128 encodes the smallest normal
  }
  int e;
  std::frexp(a, &e);
  double m = std::nearbyint(std::ldexp(a, 8 - e));  // 8 significant bits in [128, 256]
  return sign | static_cast<uint16_t>(((e - 1 + 127) << 7) + static_cast<int>(m) - 128);
}

double bf16_to_double(uint16_t h) {
  const uint32_t u = uint32_t{h} << 16;  // bf16 is the upper half of an f32
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace detail {

namespace {

template <class T> void put(unsigned char* dst, T v) { std::memcpy(dst, &v, sizeof(T)); }

bool store_int(DType t, i128 v, unsigned char* dst) {
  auto in = [&](i128 lo, i128 hi) { return v >= lo && v <= hi; };
  switch (t) {
    case DType::i8: if (!in(INT8_MIN, INT8_MAX)) return false; put<int8_t>(dst, int8_t(v)); return true;
    case DType::i16: if (!in(INT16_MIN, INT16_MAX)) return false; put<int16_t>(dst, int16_t(v)); return true;
    case DType::i32: if (!in(INT32_MIN, INT32_MAX)) return false; put<int32_t>(dst, int32_t(v)); return true;
    case DType::i64: if (!in(INT64_MIN, INT64_MAX)) return false; put<int64_t>(dst, int64_t(v)); return true;
    case DType::u8: if (!in(0, UINT8_MAX)) return false; put<uint8_t>(dst, uint8_t(v)); return true;
    case DType::u16: if (!in(0, UINT16_MAX)) return false; put<uint16_t>(dst, uint16_t(v)); return true;
    case DType::u32: if (!in(0, UINT32_MAX)) return false; put<uint32_t>(dst, uint32_t(v)); return true;
    case DType::u64: if (!in(0, UINT64_MAX)) return false; put<uint64_t>(dst, uint64_t(v)); return true;
    case DType::boolean: if (!in(0, 1)) return false; put<uint8_t>(dst, uint8_t(v)); return true;
    default: return false;
  }
}

// An exactly known integer (fill or arange with integral numbers).
bool store_exact(DType t, i128 v, unsigned char* dst) {
  if (!is_float(t)) return store_int(t, v, dst);
  return store_double(t, static_cast<double>(v), dst);
}

i128 exact(const Number& n) { return n.kind == Number::Kind::uint ? i128(n.u) : i128(n.i); }

[[noreturn]] void range_error(const BufferSpec& b, const std::string& path, size_t i, double v) {
  fail(path, "element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit " + std::string(encore::name(b.dtype)));
}

// Fills `out` (count elements); element i in [first, last) only when check_only.
void generate(const BufferSpec& b, uint64_t set, const std::string& path, unsigned char* out) {
  const Init& in = b.init;
  size_t es = size(b.dtype);
  switch (in.kind) {
    case Init::Kind::zeros: std::memset(out, 0, b.count * es); return;
    case Init::Kind::fill: {
      unsigned char one[8];
      bool ok = in.fill.integral() ? store_exact(b.dtype, exact(in.fill), one) : store_double(b.dtype, in.fill.d, one);
      if (!ok) range_error(b, path, 0, in.fill.d);
      for (size_t i = 0; i < b.count; ++i) std::memcpy(out + i * es, one, es);
      return;
    }
    case Init::Kind::uniform:
      for (size_t i = 0; i < b.count; ++i) {
        double v = uniform_value(in.lo, in.hi, in.seed + set, i);
        if (!store_double(b.dtype, v, out + i * es)) range_error(b, path, i, v);
      }
      return;
    case Init::Kind::arange: {
      bool ints = !is_float(b.dtype) && in.start.integral() && in.step.integral();
      for (size_t i = 0; i < b.count; ++i) {
        if (ints) {
          i128 v = exact(in.start) + exact(in.step) * i128(i);
          if (!store_int(b.dtype, v, out + i * es)) range_error(b, path, i, double(v));
        } else {
          volatile double prod = in.step.d * static_cast<double>(i);
          double v = in.start.d + prod;
          if (!store_double(b.dtype, v, out + i * es)) range_error(b, path, i, v);
        }
      }
      return;
    }
    case Init::Kind::file: {
      const std::filesystem::path& file = in.files[set % in.files.size()];
      std::ifstream f(file, std::ios::binary);
      f.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(b.count * es));
      if (!f || f.gcount() != static_cast<std::streamsize>(b.count * es))
        fail(path + ".file", "cannot read " + quote(file.string()) + " (" + std::to_string(b.count * es) + " bytes)");
      return;
    }
  }
}

}  // namespace

bool store_double(DType t, double v, unsigned char* dst) {
  switch (t) {
    case DType::f64: put<double>(dst, v); return true;
    case DType::f32:
      // 0x1.ffffffp127 is the midpoint between FLT_MAX and 2^128: at or above it rounds to inf.
      if (std::fabs(v) >= 0x1.ffffffp127) return false;
      put<float>(dst, static_cast<float>(v));
      return true;
    case DType::f16: {
      uint16_t h = f16_from_double(v);
      if ((h & 0x7fff) == 0x7c00) return false;
      put<uint16_t>(dst, h);
      return true;
    }
    case DType::bf16: {
      uint16_t h = bf16_from_double(v);
      if ((h & 0x7fff) == 0x7f80) return false;
      put<uint16_t>(dst, h);
      return true;
    }
    default: {
      if (std::isnan(v)) return false;
      double tv = std::trunc(v);
      if (tv <= -0x1p64 || tv >= 0x1p64) return false;
      return store_int(t, static_cast<i128>(tv), dst);
    }
  }
}

void check_init_range(const BufferSpec& b, const std::string& path) {
  const Init& in = b.init;
  unsigned char tmp[8];
  switch (in.kind) {
    case Init::Kind::zeros:
    case Init::Kind::file: return;
    case Init::Kind::fill: {
      bool ok = in.fill.integral() ? store_exact(b.dtype, exact(in.fill), tmp) : store_double(b.dtype, in.fill.d, tmp);
      if (!ok) fail(path + ".fill", std::to_string(in.fill.d) + " does not fit " + std::string(encore::name(b.dtype)));
      return;
    }
    case Init::Kind::arange: {
      // Linear in i and conversion is monotonic: the ends decide.
      for (size_t i : {size_t(0), b.count - 1}) {
        bool ints = !is_float(b.dtype) && in.start.integral() && in.step.integral();
        bool ok;
        double v;
        if (ints) {
          i128 x = exact(in.start) + exact(in.step) * i128(i);
          v = double(x);
          ok = store_int(b.dtype, x, tmp);
        } else {
          volatile double prod = in.step.d * static_cast<double>(i);
          v = in.start.d + prod;
          ok = store_double(b.dtype, v, tmp);
        }
        if (!ok) range_error(b, path, i, v);
      }
      return;
    }
    case Init::Kind::uniform: {
      // Values are monotonic in u in [0, 1 - 2^-24]: when both ends convert, every element does.
      volatile double top = (in.hi - in.lo) * (1 - 0x1p-24);
      if (store_double(b.dtype, in.lo, tmp) && store_double(b.dtype, in.lo + top, tmp)) return;
      // Scan for an element that does not fit; bounded so a huge buffer cannot stall `check`
      // (generation at run time checks every element anyway).
      for (size_t i = 0; i < std::min<size_t>(b.count, size_t(1) << 22); ++i) {
        double v = uniform_value(in.lo, in.hi, in.seed, i);
        if (!store_double(b.dtype, v, tmp)) range_error(b, path, i, v);
      }
      return;
    }
  }
}

}  // namespace detail

std::vector<unsigned char> initial_bytes(const Workload& w, size_t b, uint64_t set) {
  const BufferSpec& spec = w.buffers.at(b);
  std::vector<unsigned char> out(spec.count * size(spec.dtype));
  const bool rotates = spec.init.kind == Init::Kind::uniform || spec.init.kind == Init::Kind::file;
  detail::generate(spec, rotates ? set : 0, "buffers." + spec.name + ".init", out.data());
  return out;
}

}  // namespace encore::workload
