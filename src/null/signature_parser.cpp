// Reads the parameter lists of the __kernel functions in OpenCL C source, so the NULL device infers
// access and checks arguments as an OpenCL device would. It handles what kernel signatures use:
// address-space and type qualifiers, pointers, attributes, comments; not macros in signatures.
#include <cctype>
#include <map>
#include <span>

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

// Comments become blanks; preprocessor lines are dropped, or kept (`keep_directives`, each on one
// line with its continuations joined) for the alias scan.
std::string strip_comments(const std::string& s, bool keep_directives = false) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (keep_directives && s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
      out += ' ';
      continue;
    }
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 1;
      out += ' ';
    } else if (s[i] == '#' && !keep_directives) {  // preprocessor line
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

// The words of a type spelled as OpenCL's CL_KERNEL_ARG_TYPE_NAME does ("unsigned int" -> "uint"),
// so both devices report the same params and aliases resolve to the same names.
std::string canonical_type(const std::vector<std::string>& words) {
  std::string t;
  for (const std::string& w : words)
    if (w != "const" && w != "volatile") t += (t.empty() ? "" : " ") + w;
  static const std::pair<const char*, const char*> canon[] = {
      {"unsigned", "uint"},          {"unsigned int", "uint"},   {"unsigned char", "uchar"},
      {"unsigned short", "ushort"},  {"unsigned long", "ulong"}, {"signed char", "char"},
      {"signed int", "int"},         {"signed", "int"},          {"signed short", "short"},
      {"signed long", "long"}};
  for (auto& [from, to] : canon)
    if (t == from) return to;
  return t;
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
             w == "read_only" || w == "write_only") {}
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
  p.type_name = canonical_type(base);
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

bool is_ident(const std::string& w) { return !w.empty() && (std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_'); }

// Type aliases: name -> the canonical type it names ("float", "uint4", "struct"), or "" when it
// names something encore does not check (a pointer, an enum, an attributed type) or is declared
// twice with different meanings (#if branches): such a pointee is never checked.
using Aliases = std::map<std::string, std::string>;

void add_alias(Aliases& a, const std::string& name, const std::string& meaning) {
  auto [it, fresh] = a.emplace(name, meaning);
  if (!fresh && it->second != meaning) it->second.clear();
}

// `typedef <decl> ;` with the tokens between typedef and the semicolon.
void scan_typedef(const std::vector<std::string>& d, Aliases& a) {
  int depth = 0;
  std::vector<std::string> top;  // identifiers outside braces, brackets and parentheses
  bool pointer = false, attribute = false;
  for (size_t i = 0; i < d.size(); ++i) {
    const std::string& w = d[i];
    if (depth == 0) {
      if (w == ",") return;  // several declarators: not read, so never checked
      if (w == "(" && (i == 0 || d[i - 1] != "__attribute__")) return;  // a function type
      if (w == "*" || w == "[") pointer = true;
      if (w == "__attribute__") attribute = true;
      else if (is_ident(w)) top.push_back(w);
    }
    if (w == "(" || w == "{" || w == "[") ++depth;
    else if (w == ")" || w == "}" || w == "]") --depth;
  }
  if (top.size() < 2) return;
  const std::string name = top.back();
  top.pop_back();
  if (top[0] == "struct" || top[0] == "union") add_alias(a, name, pointer ? "" : "struct");
  else if (pointer || attribute || top[0] == "enum") add_alias(a, name, "");
  else add_alias(a, name, canonical_type(top));
}

// `#define NAME words` naming a type: only object-like macros made of identifiers.
void scan_define(const std::string& line, Aliases& a) {
  std::vector<std::string> t = tokenize(line);
  if (t.size() < 3 || t[0] != "#" || t[1] != "define" || !is_ident(t[2])) return;
  const size_t at = line.find(t[2], line.find("define") + 6) + t[2].size();
  if (at < line.size() && line[at] == '(') return;  // function-like
  std::vector<std::string> words(t.begin() + 3, t.end());
  if (words.empty() || words.size() > 3) return;
  for (const std::string& w : words)
    if (!is_ident(w)) return;
  add_alias(a, t[2], canonical_type(words));
}

void scan_aliases(const std::string& text, Aliases& a) {
  const std::string s = strip_comments(text, true);
  std::string code;
  for (size_t i = 0; i < s.size();) {
    size_t e = s.find('\n', i);
    if (e == std::string::npos) e = s.size();
    std::string line = s.substr(i, e - i);
    size_t f = line.find_first_not_of(" \t");
    if (f != std::string::npos && line[f] == '#') scan_define(line.substr(f), a);
    else code += line + '\n';
    i = e + 1;
  }
  std::vector<std::string> t = tokenize(code);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != "typedef") continue;
    size_t j = i + 1;
    int depth = 0;
    for (; j < t.size() && !(depth == 0 && t[j] == ";"); ++j) {
      if (t[j] == "(" || t[j] == "{" || t[j] == "[") ++depth;
      else if (t[j] == ")" || t[j] == "}" || t[j] == "]") --depth;
    }
    if (j > i + 1) scan_typedef(std::vector<std::string>(t.begin() + i + 1, t.begin() + j), a);
    i = j;
  }
}

// -D options: "-DNAME=words" or "-D NAME=words".
void scan_options(const std::string& options, Aliases& a) {
  std::vector<std::string> words;
  for (size_t i = 0; i < options.size();) {
    size_t e = options.find_first_of(" \t", i);
    if (e == std::string::npos) e = options.size();
    if (e > i) words.push_back(options.substr(i, e - i));
    i = e + 1;
  }
  for (size_t i = 0; i < words.size(); ++i) {
    std::string d;
    if (words[i] == "-D" && i + 1 < words.size()) d = words[++i];
    else if (words[i].rfind("-D", 0) == 0) d = words[i].substr(2);
    else continue;
    const size_t eq = d.find('=');
    if (eq == std::string::npos) continue;
    scan_define("#define " + d.substr(0, eq) + " " + d.substr(eq + 1), a);
  }
}

enum class Pointee { checked, any, unknown };

Pointee classify(const std::string& t, const Aliases& a, int depth, DType& dtype, uint8_t& lanes) {
  if (t == "void" || t == "char" || t == "uchar" || t == "struct" || t.rfind("struct ", 0) == 0 || t.rfind("union ", 0) == 0)
    return Pointee::any;
  if (auto d = scalar_dtype_of(t)) {
    dtype = *d;
    lanes = 1;
    return Pointee::checked;
  }
  size_t k = t.size();
  while (k > 0 && std::isdigit(static_cast<unsigned char>(t[k - 1]))) --k;
  if (k > 0 && k < t.size()) {
    const std::string base = t.substr(0, k), n = t.substr(k);
    static const char* vector_bases[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half"};
    bool is_base = false;
    for (const char* b : vector_bases) is_base = is_base || base == b;
    if (is_base && (n == "2" || n == "3" || n == "4" || n == "8" || n == "16")) {
      if (base == "char" || base == "uchar") return Pointee::any;  // bytes, as char*
      dtype = *scalar_dtype_of(base);
      lanes = static_cast<uint8_t>(n == "3" ? 4 : std::stoi(n));
      return Pointee::checked;
    }
  }
  if (auto it = a.find(t); it != a.end() && !it->second.empty() && it->second != t && depth < 16)
    return classify(it->second, a, depth + 1, dtype, lanes);
  return Pointee::unknown;
}

}  // namespace

std::vector<std::string> resolve_pointees(std::vector<KernelSignature>& sigs, std::span<const std::string> texts, const std::string& options) {
  std::vector<std::string> notes;
  Aliases aliases;
  bool scanned = false;
  for (KernelSignature& sig : sigs)
    for (KernelParam& p : sig.params) {
      p.pointee.reset();
      p.pointee_lanes = 1;
      if (!p.is_pointer || p.space == AddressSpace::local || p.type_name.empty() || p.type_name.back() != '*') continue;
      if (!scanned) {  // only programs with pointer parameters pay for the scan
        for (const std::string& t : texts) scan_aliases(t, aliases);
        scan_options(options, aliases);
        scanned = true;
      }
      std::string t = p.type_name.substr(0, p.type_name.size() - 1);
      while (!t.empty() && t.back() == ' ') t.pop_back();
      DType d{};
      uint8_t lanes = 1;
      switch (classify(t, aliases, 0, d, lanes)) {
        case Pointee::checked:
          p.pointee = d;
          p.pointee_lanes = lanes;
          break;
        case Pointee::any: break;
        case Pointee::unknown:
          notes.push_back("kernel " + sig.name + " parameter " + p.name + " (" + p.type_name + "): encore does not know the type " +
                          t + ", so buffers passed to it are not type-checked");
          break;
      }
    }
  return notes;
}

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
