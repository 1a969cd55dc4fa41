#include "workload/reader.hpp"

#include <cmath>

#include "core/json_text.hpp"

namespace encore::workload::detail {

void fail(const std::string& path, const std::string& msg) { throw WorkloadError(path, msg); }

std::string quote(std::string_view s) { return encore::detail::json_quoted(s); }

Obj::Obj(const JNode& n, std::string path) : n_(n), path_(std::move(path)) {
  if (n.kind != JNode::Kind::object) fail(path_, std::string("expected an object, got ") + kind_name(n.kind));
  taken_.assign(n.members.size(), false);
}

const JNode* Obj::opt(std::string_view key) {
  for (size_t k = 0; k < n_.members.size(); ++k)
    if (n_.members[k].first == key) {
      taken_[k] = true;
      return &n_.members[k].second;
    }
  return nullptr;
}

bool Obj::has(std::string_view key) const {
  for (const auto& m : n_.members)
    if (m.first == key) return true;
  return false;
}

const JNode& Obj::req(std::string_view key) {
  const JNode* n = opt(key);
  if (!n) fail(path_, "missing required key " + quote(key));
  return *n;
}

void Obj::done(std::string_view allowed) {
  for (size_t k = 0; k < taken_.size(); ++k)
    if (!taken_[k]) fail(child(path_, n_.members[k].first), "unknown key (allowed here: " + std::string(allowed) + ")");
}

const std::string& as_string(const JNode& n, const std::string& path) {
  if (n.kind != JNode::Kind::string) fail(path, std::string("expected a string, got ") + kind_name(n.kind));
  return n.str;
}

const std::vector<JNode>& as_array(const JNode& n, const std::string& path) {
  if (n.kind != JNode::Kind::array) fail(path, std::string("expected an array, got ") + kind_name(n.kind));
  return n.elems;
}

Number as_number(const JNode& n, const std::string& path) {
  if (n.kind != JNode::Kind::number) fail(path, std::string("expected a number, got ") + kind_name(n.kind));
  Number r;
  r.d = n.d;
  switch (n.num) {
    case JNode::Num::i64: r.kind = Number::Kind::sint; r.i = n.i; break;
    case JNode::Num::u64: r.kind = Number::Kind::uint; r.u = n.u; break;
    case JNode::Num::f64:
      // 1e3 or 2.0 is an integer too; keep it exact when it fits 64 bits.
      if (std::isfinite(n.d) && std::trunc(n.d) == n.d && std::fabs(n.d) < 9223372036854775808.0) {
        r.kind = Number::Kind::sint;
        r.i = static_cast<int64_t>(n.d);
      } else if (std::isfinite(n.d) && std::trunc(n.d) == n.d && n.d >= 0 && n.d < 18446744073709551616.0) {
        r.kind = Number::Kind::uint;
        r.u = static_cast<uint64_t>(n.d);
      } else {
        r.kind = Number::Kind::real;
      }
      break;
  }
  if (!std::isfinite(r.d)) fail(path, "number out of range");
  return r;
}

double as_double(const JNode& n, const std::string& path) { return as_number(n, path).d; }

int64_t as_int(const JNode& n, const std::string& path, int64_t lo, int64_t hi) {
  Number v = as_number(n, path);
  auto range = [&] { return " (allowed: " + std::to_string(lo) + " to " + std::to_string(hi) + ")"; };
  if (!v.integral()) fail(path, "expected an integer, got " + n.str);
  if (v.kind == Number::Kind::uint || v.i < lo || v.i > hi) fail(path, n.str + " is out of range" + range());
  return v.i;
}

uint64_t as_uint(const JNode& n, const std::string& path, uint64_t hi) {
  Number v = as_number(n, path);
  if (!v.integral()) fail(path, "expected an integer, got " + n.str);
  if (v.kind == Number::Kind::sint && v.i < 0) fail(path, n.str + " is negative");
  uint64_t u = v.kind == Number::Kind::uint ? v.u : static_cast<uint64_t>(v.i);
  if (u > hi) fail(path, n.str + " is out of range (at most " + std::to_string(hi) + ")");
  return u;
}

uint64_t as_int_mod64(const JNode& n, const std::string& path) {
  if (n.kind != JNode::Kind::number) fail(path, std::string("expected an integer, got ") + kind_name(n.kind));
  if (n.num == JNode::Num::i64) return static_cast<uint64_t>(n.i);
  if (n.num == JNode::Num::u64) return n.u;
  // Decimal text [-]digits[.digits][e[+-]digits]: value = D * 10^e; an integer when the digits
  // below the decimal point are zeros. Arithmetic wraps mod 2^64 (10^64 is 0 mod 2^64).
  const std::string& s = n.str;
  size_t k = 0;
  bool neg = k < s.size() && s[k] == '-';
  if (neg) ++k;
  std::string digits;
  long long exp10 = 0;
  for (; k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])); ++k) digits += s[k];
  if (k < s.size() && s[k] == '.')
    for (++k; k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])); ++k) digits += s[k], --exp10;
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    ++k;
    bool eneg = k < s.size() && s[k] == '-';
    if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
    long long e = 0;
    for (; k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])); ++k) e = std::min(e * 10 + (s[k] - '0'), 1000000000LL);
    exp10 += eneg ? -e : e;
  }
  while (exp10 < 0 && !digits.empty() && digits.back() == '0') digits.pop_back(), ++exp10;
  bool zero = digits.find_first_not_of('0') == std::string::npos;
  if (exp10 < 0 && !zero) fail(path, "expected an integer, got " + s);
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  for (long long e = 0; e < exp10 && e < 64; ++e) v *= 10;
  if (exp10 >= 64) v = 0;
  return neg ? ~v + 1 : v;
}

}  // namespace encore::workload::detail
