// Reads the parameter lists of the __kernel functions in OpenCL C source, so the NULL device infers
// access and checks arguments as an OpenCL device would. It handles what kernel signatures use:
// address-space and type qualifiers, pointers, attributes, comments; not macros in signatures.
#include <cctype>

#include "encore/error.hpp"
#include "internal.hpp"

namespace encore::detail {

std::optional<DType> scalar_dtype_of(const std::string& t) {
  static const std::pair<const char*, DType> map[] = {
      {"char", DType::i8},   {"uchar", DType::u8},   {"unsigned char", DType::u8},   {"short", DType::i16},
      {"ushort", DType::u16}, {"unsigned short", DType::u16}, {"int", DType::i32},   {"uint", DType::u32},
      {"unsigned int", DType::u32}, {"unsigned", DType::u32}, {"long", DType::i64},  {"ulong", DType::u64},
      {"unsigned long", DType::u64}, {"float", DType::f32}, {"double", DType::f64}, {"half", DType::f16},
      {"size_t", DType::u64}, {"signed char", DType::i8}, {"int8_t", DType::i8}, {"int32_t", DType::i32}};
  for (auto& [n, d] : map)
    if (t == n) return d;
  return std::nullopt;
}

namespace {

std::string strip_comments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 1;
      out += ' ';
    } else if (s[i] == '#') {  // preprocessor line
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> tokenize(const std::string& s) {
  std::vector<std::string> t;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isalnum(c) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.push_back(s.substr(i, j - i));
      i = j;
    } else {
      t.push_back(std::string(1, s[i]));
      ++i;
    }
  }
  return t;
}

// Skips "__attribute__ ( ( ... ) )" starting at i; returns the index after it.
size_t skip_attribute(const std::vector<std::string>& t, size_t i) {
  if (i >= t.size() || t[i] != "__attribute__") return i;
  ++i;
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i] == "(") ++depth;
    else if (t[i] == ")" && --depth == 0) return i + 1;
  }
  return i;
}

KernelParam parse_param(const std::vector<std::string>& toks, const std::string& kernel) {
  KernelParam p;
  std::vector<std::string> base;
  bool star = false, const_before_star = false;
  for (size_t i = 0; i < toks.size(); ++i) {
    const std::string& w = toks[i];
    if (w == "__attribute__") {
      i = skip_attribute(toks, i) - 1;
      continue;
    }
    if (w == "__global" || w == "global") p.space = AddressSpace::global;
    else if (w == "__constant" || w == "constant") p.space = AddressSpace::constant;
    else if (w == "__local" || w == "local") p.space = AddressSpace::local;
    else if (w == "__private" || w == "private") p.space = AddressSpace::private_;
    else if (w == "const") { if (!star) const_before_star = true; }
    else if (w == "volatile" || w == "restrict" || w == "__restrict" || w == "__read_only" || w == "__write_only" ||
             w == "read_only" || w == "write_only" || w == "struct") {}
    else if (w == "*") {
      if (star) throw ArgumentError("kernel " + kernel + ": pointer-to-pointer parameters are not supported");
      star = true;
    } else if (w == "[" || w == "]") {
      star = true;  // float a[] is a pointer
    } else if (std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_') {
      base.push_back(w);
    }
  }
  if (base.size() < 2) throw ArgumentError("kernel " + kernel + ": cannot read parameter \"" + [&] {
    std::string s;
    for (auto& w : toks) s += w + " ";
    return s;
  }() + "\"");
  p.name = base.back();
  base.pop_back();
  for (size_t i = 0; i < base.size(); ++i) p.type_name += (i ? " " : "") + base[i];
  // spell types as OpenCL's CL_KERNEL_ARG_TYPE_NAME does, so both devices report the same params
  static const std::pair<const char*, const char*> canon[] = {
      {"unsigned", "uint"},          {"unsigned int", "uint"},   {"unsigned char", "uchar"},
      {"unsigned short", "ushort"},  {"unsigned long", "ulong"}, {"signed char", "char"},
      {"signed int", "int"},         {"signed", "int"},          {"signed short", "short"},
      {"signed long", "long"}};
  for (auto& [from, to] : canon)
    if (p.type_name == from) p.type_name = to;
  p.is_pointer = star;
  if (star) {
    p.const_data = const_before_star;
    p.type_name += "*";
    if (p.space == AddressSpace::private_) p.space = AddressSpace::global;  // generic pointers: treat as global
  } else {
    p.scalar = scalar_dtype_of(p.type_name);
  }
  return p;
}

}  // namespace

std::vector<KernelSignature> parse_kernel_signatures(const std::string& source) {
  std::vector<std::string> t = tokenize(strip_comments(source));
  std::vector<KernelSignature> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != "__kernel" && t[i] != "kernel") continue;
    size_t j = i + 1;
    while (j < t.size() && t[j] == "__attribute__") j = skip_attribute(t, j);
    if (j >= t.size() || t[j] != "void") continue;
    ++j;
    while (j < t.size() && t[j] == "__attribute__") j = skip_attribute(t, j);
    if (j + 1 >= t.size() || t[j + 1] != "(") continue;
    KernelSignature sig;
    sig.name = t[j];
    j += 2;
    std::vector<std::string> cur;
    int depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j] == "(") ++depth;
      if (t[j] == ")" && depth-- == 0) break;
      if (t[j] == "," && depth == 0) {
        sig.params.push_back(parse_param(cur, sig.name));
        cur.clear();
      } else {
        cur.push_back(t[j]);
      }
    }
    if (j >= t.size()) throw CompileError("NULL device: unterminated parameter list of kernel " + sig.name, "");
    if (!cur.empty() && !(cur.size() == 1 && cur[0] == "void")) sig.params.push_back(parse_param(cur, sig.name));
    out.push_back(std::move(sig));
    i = j;
  }
  if (out.empty() && source.find("kernel") == std::string::npos)
    throw CompileError("NULL device: the source defines no __kernel function", "");
  return out;
}

}  // namespace encore::detail
