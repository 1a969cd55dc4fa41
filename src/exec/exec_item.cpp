#include "encore/exec_item.hpp"

#include "encore/device.hpp"
#include "exec/kind.hpp"

namespace encore {

Sizes::Sizes(std::initializer_list<Size> s) {
  if (s.size() > 3) throw ArgumentError("launch sizes have 1 to 3 dimensions, got " + std::to_string(s.size()));
  for (const Size& x : s) v[n++] = x;
}

bool Sizes::uses_variable() const {
  for (uint8_t i = 0; i < n; ++i)
    if (v[i].uses_variable()) return true;
  return false;
}

ByValue bytes(const void* p, size_t n) {
  if (n == 0) throw ArgumentError("encore::bytes: a by-value argument needs at least one byte");
  if (!p) throw ArgumentError("encore::bytes: null pointer for " + std::to_string(n) + " bytes");
  const auto* b = static_cast<const unsigned char*>(p);
  return ByValue{std::make_shared<const std::vector<unsigned char>>(b, b + n), p};
}

ByValue bytes_from(const void* p, size_t n) {
  if (n == 0) throw ArgumentError("encore::bytes_from: a by-value argument needs at least one byte");
  if (!p) throw ArgumentError("encore::bytes_from: null pointer for " + std::to_string(n) + " bytes");
  ByValue v = bytes(p, n);
  v.per_call = true;
  return v;
}

namespace detail {
void bytes_outside(size_t offset, size_t n, size_t total) {
  throw ArgumentError("encore::bytes_from: " + (n == SIZE_MAX ? "byte offset " + std::to_string(offset) + " lies"
                                                             : std::to_string(n) + " bytes at byte offset " + std::to_string(offset) + " lie") +
                      " outside the host input's " + std::to_string(total) + " bytes");
}
}  // namespace detail

Arg::Arg(const Variable& var_in) : kind(Kind::variable), var(var_in) {
  dtype = var_in.type() == VarType::f32 ? DType::f32 : var_in.type() == VarType::f64 ? DType::f64 : DType::i32;
}

std::vector<StorageAccess> ExecItem::accesses() const {
  std::vector<detail::Operand> ops;
  detail::kind_of(*this).operands(*this, ops);
  std::vector<StorageAccess> out;
  out.reserve(ops.size());
  for (const detail::Operand& o : ops) {
    detail::BufferImpl* i = o.buf->impl();
    out.push_back({o.buf->base(), i->offset, i->offset + i->nbytes, o.access, *o.buf});
  }
  return out;
}

bool ExecItem::uses_variables() const { return detail::kind_of(*this).uses_variables(*this); }
Device ExecItem::device() const { return Device(detail::kind_of(*this).queue(*this)); }
std::string ExecItem::describe() const { return detail::kind_of(*this).describe(*this); }

namespace detail {

std::string args_str(const std::vector<Arg>& args) {
  std::string s = "(";
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (i) s += ", ";
    switch (a.kind) {
      case Arg::Kind::buffer: s += a.buf.describe() + " " + encore::name(a.access); break;
      case Arg::Kind::variable: s += a.var->name(); break;
      case Arg::Kind::local: s += "local " + std::to_string(a.local_bytes) + "B"; break;
      case Arg::Kind::scalar: s += std::string(encore::name(a.dtype)) + " scalar"; break;
      case Arg::Kind::bytes:
        s += std::to_string(a.value->size()) + " bytes by value";
        if (a.host_slot >= 0) s += " from host input " + std::to_string(a.host_slot) + " at byte " + std::to_string(a.host_offset);
        break;
    }
  }
  return s + ")";
}

}  // namespace detail

}  // namespace encore
