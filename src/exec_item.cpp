#include "encore/exec_item.hpp"

#include "encore/device.hpp"
#include "internal.hpp"

namespace encore {

Sizes::Sizes(std::initializer_list<Size> s) {
  if (s.size() > 3) throw ArgumentError("launch sizes have 1 to 3 dimensions, got " + std::to_string(s.size()));
  for (const Size& x : s) v[n++] = x;
}

bool Sizes::uses_variable() const {
  for (uint8_t i = 0; i < n; ++i)
    if (v[i].var()) return true;
  return false;
}

ByValue bytes(const void* p, size_t n) {
  if (n == 0) throw ArgumentError("encore::bytes: a by-value argument needs at least one byte");
  if (!p) throw ArgumentError("encore::bytes: null pointer for " + std::to_string(n) + " bytes");
  const auto* b = static_cast<const unsigned char*>(p);
  return ByValue{std::make_shared<const std::vector<unsigned char>>(b, b + n)};
}

Arg::Arg(const Variable& var_in) : kind(Kind::variable), var(var_in) {
  dtype = var_in.type() == VarType::f32 ? DType::f32 : var_in.type() == VarType::f64 ? DType::f64 : DType::i32;
}

static void add_access(std::vector<StorageAccess>& out, const Buffer& b, Access a) {
  detail::BufferImpl* i = b.impl();
  out.push_back({i->root(), i->offset, i->offset + i->nbytes, a, b});
}

std::vector<StorageAccess> ExecItem::accesses() const {
  std::vector<StorageAccess> out;
  switch (kind) {
    case ItemKind::kernel:
    case ItemKind::native:
      for (const Arg& a : args)
        if (a.kind == Arg::Kind::buffer) add_access(out, a.buf, a.access);
      break;
    case ItemKind::copy:
      add_access(out, src, Access::in);
      add_access(out, dst, Access::out);
      break;
    case ItemKind::upload:
      add_access(out, dst, Access::out);
      break;
  }
  return out;
}

bool ExecItem::uses_variables() const {
  if (kind != ItemKind::kernel) return false;
  if (global.uses_variable() || local.uses_variable()) return true;
  for (const Arg& a : args)
    if (a.kind == Arg::Kind::variable) return true;
  return false;
}

Device ExecItem::device() const {
  switch (kind) {
    case ItemKind::kernel: return kernel.device();
    case ItemKind::native: return Device(native->dev);
    default: return dst.device();
  }
}

static std::string sizes_str(const Sizes& s) {
  std::string r = "[";
  for (uint8_t i = 0; i < s.n; ++i) {
    if (i) r += ",";
    const Size& z = s.v[i];
    if (z.var()) r += (z.mul() != 1 ? std::to_string(z.mul()) + "*" : "") + z.var()->name() + (z.add() ? "+" + std::to_string(z.add()) : "");
    else r += std::to_string(z.add());
  }
  return r + "]";
}

std::string ExecItem::describe() const {
  switch (kind) {
    case ItemKind::copy: return "copy " + dst.describe() + " <- " + src.describe();
    case ItemKind::upload: return "upload " + std::to_string(data ? data->size() : 0) + " bytes -> " + dst.describe();
    case ItemKind::kernel:
    case ItemKind::native: break;
  }
  std::string s = (kind == ItemKind::native ? "native " + name : name.empty() ? kernel.name() : name) + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (i) s += ", ";
    switch (a.kind) {
      case Arg::Kind::buffer: s += a.buf.describe() + " " + encore::name(a.access); break;
      case Arg::Kind::variable: s += a.var->name(); break;
      case Arg::Kind::local: s += "local " + std::to_string(a.local_bytes) + "B"; break;
      case Arg::Kind::scalar: s += std::string(encore::name(a.dtype)) + " scalar"; break;
      case Arg::Kind::bytes: s += std::to_string(a.value->size()) + " bytes by value"; break;
    }
  }
  s += ")";
  if (kind == ItemKind::native) return s;
  s += " global " + sizes_str(global);
  if (!local.empty()) s += " local " + sizes_str(local);
  return s;
}

}  // namespace encore
