// Element comparison for eager vs replay results: bitwise by default; with a tolerance,
// |a − b| <= atol + rtol·max(|a|, |b|) in long double (exact for every 64-bit integer), NaN agreeing
// only with NaN and an infinity only with the same infinity.
#include <cmath>
#include <cstring>
#include <sstream>

#include "encore/workload.hpp"

namespace encore::workload {

namespace {

template <class T> T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

long double value(DType t, const unsigned char* p) {
  switch (t) {
    case DType::f16: return f16_to_double(load<uint16_t>(p));
    case DType::bf16: return bf16_to_double(load<uint16_t>(p));
    case DType::boolean: return load<uint8_t>(p);
    case DType::f32: return load<float>(p);
    case DType::f64: return load<double>(p);
    case DType::i8: return load<int8_t>(p);
    case DType::i16: return load<int16_t>(p);
    case DType::i32: return load<int32_t>(p);
    case DType::i64: return load<int64_t>(p);
    case DType::u8: return load<uint8_t>(p);
    case DType::u16: return load<uint16_t>(p);
    case DType::u32: return load<uint32_t>(p);
    case DType::u64: return load<uint64_t>(p);
  }
  return 0;
}

bool agree(long double a, long double b, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  if (std::isinf(a) || std::isinf(b)) return false;
  return std::fabs(a - b) <= tol.atol + tol.rtol * std::fmax(std::fabs(a), std::fabs(b));
}

}  // namespace

Diff compare(DType t, const unsigned char* a, const unsigned char* b, size_t count, const Tolerance& tol) {
  Diff d;
  size_t es = size(t);
  if (tol.bitwise && std::memcmp(a, b, count * es) == 0) return d;
  for (size_t i = 0; i < count; ++i) {
    bool ok = tol.bitwise ? std::memcmp(a + i * es, b + i * es, es) == 0 : agree(value(t, a + i * es), value(t, b + i * es), tol);
    if (!ok && d.count++ == 0) d.first = i;
  }
  return d;
}

std::string format_element(DType t, const unsigned char* p) {
  std::ostringstream s;
  if (is_float(t)) {
    s.precision(t == DType::f64 ? 17 : t == DType::f32 ? 9 : t == DType::bf16 ? 4 : 5);
    s << static_cast<double>(value(t, p));
  } else if (is_signed(t)) {
    s << static_cast<long long>(value(t, p));
  } else {
    s << static_cast<unsigned long long>(value(t, p));
  }
  return s.str();
}

}  // namespace encore::workload
