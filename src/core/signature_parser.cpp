// Reads the parameter lists of the __kernel functions in OpenCL C source (see signature_parser.hpp):
// address-space and type qualifiers, pointers, attributes, comments, typedefs and simple type
// macros. What it cannot follow (other macros, unknown types, directives inside a signature, two
// kernels of one name from #if branches) makes the program unreadable instead of a guess.
#include "core/signature_parser.hpp"

#include <cctype>
#include <map>
#include <optional>

#include "encore/error.hpp"

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

// Marks where a preprocessor line was, so a directive inside a parameter list is seen.
constexpr char kDirective = '\x01';

// Comments become blanks; preprocessor lines (with their continuations) become kDirective, or are
// kept (`keep_directives`, each on one line with its continuations joined) for the alias scan.
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
      while (i < s.size() && !(s[i] == '\n' && s[i - 1] != '\\')) ++i;
      out += kDirective;
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

bool is_ident(const std::string& w) { return !w.empty() && (std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_'); }
bool is_number(const std::string& w) {
  if (w.empty() || w.size() > 18) return false;
  for (char c : w)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
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

// "float4" -> (f32, 4 lanes); a 3-vector takes 4 lanes, as OpenCL lays it out.
bool vector_type(const std::string& t, DType& elem, uint8_t& lanes) {
  size_t k = t.size();
  while (k > 0 && std::isdigit(static_cast<unsigned char>(t[k - 1]))) --k;
  if (k == 0 || k == t.size()) return false;
  const std::string base = t.substr(0, k), n = t.substr(k);
  static const char* bases[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half"};
  bool is_base = false;
  for (const char* b : bases) is_base = is_base || base == b;
  if (!is_base || !(n == "2" || n == "3" || n == "4" || n == "8" || n == "16")) return false;
  elem = *scalar_dtype_of(base);
  lanes = static_cast<uint8_t>(n == "3" ? 4 : std::stoi(n));
  return true;
}

// The program's declarations that name types, from the source, its headers and -D options.
struct Decls {
  // Type aliases: name -> the canonical type it names ("float", "uint4", "struct", "struct T"), or
  // "" when it names something encore does not check (an enum, an attributed type) or is declared
  // twice with different meanings (#if branches), "*" for a pointer type (in any declaration): such
  // a pointee is never checked, and a signature that uses "*" is unreadable.
  std::map<std::string, std::string> aliases;
  // Struct bodies by "struct T" or typedef name; nullopt when its layout is not plain (attributes,
  // declared twice).
  std::map<std::string, std::optional<std::vector<std::string>>> structs;
  // Object-like macros: name -> the identifiers it expands to, or nullopt when it is anything else
  // (function-like, numbers, operators, defined twice differently).
  std::map<std::string, std::optional<std::vector<std::string>>> macros;
};

// A name declared twice differently means "" (unchecked), or "*" when either is a pointer: a
// signature using it cannot be read, since whether the parameter is a pointer is unknown.
void add_alias(Decls& d, const std::string& name, const std::string& meaning) {
  auto [it, fresh] = d.aliases.emplace(name, meaning);
  if (!fresh && it->second != meaning) it->second = it->second == "*" || meaning == "*" ? "*" : "";
}

void add_struct(Decls& d, const std::string& key, std::optional<std::vector<std::string>> body) {
  auto [it, fresh] = d.structs.emplace(key, body);
  if (!fresh && it->second != body) it->second.reset();
}

void add_macro(Decls& d, const std::string& name, std::optional<std::vector<std::string>> words) {
  auto [it, fresh] = d.macros.emplace(name, words);
  if (!fresh && it->second != words) it->second.reset();
}

// The tokens of the braces starting at t[open] ("{"), without them; `end` gets the index after "}".
std::vector<std::string> braced(const std::vector<std::string>& t, size_t open, size_t& end) {
  int depth = 0;
  for (size_t j = open; j < t.size(); ++j) {
    if (t[j] == "{") ++depth;
    else if (t[j] == "}" && --depth == 0) {
      end = j + 1;
      return std::vector<std::string>(t.begin() + static_cast<long>(open) + 1, t.begin() + static_cast<long>(j));
    }
  }
  end = t.size();
  return {};
}

// `typedef <decl> ;` with the tokens between typedef and the semicolon.
void scan_typedef(const std::vector<std::string>& d, Decls& decls) {
  int depth = 0;
  std::vector<std::string> top;  // identifiers outside braces, brackets and parentheses
  bool pointer = false, attribute = false;
  size_t body_at = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    const std::string& w = d[i];
    if (depth == 0) {
      if (w == ",") return;  // several declarators: not read, so never checked
      if (w == "(" && (i == 0 || d[i - 1] != "__attribute__")) return;  // a function type
      if (w == "*" || w == "[") pointer = true;
      if (w == "{" && !body_at) body_at = i;
      if (w == "__attribute__") attribute = true;
      else if (is_ident(w)) top.push_back(w);
    }
    if (w == "(" || w == "{" || w == "[") ++depth;
    else if (w == ")" || w == "}" || w == "]") --depth;
  }
  if (top.size() < 2) return;
  const std::string name = top.back();
  top.pop_back();
  if (top[0] == "struct" || top[0] == "union") {
    if (pointer) return add_alias(decls, name, "*");
    if (!body_at) return add_alias(decls, name, attribute ? "" : canonical_type(top));  // typedef struct T name
    add_alias(decls, name, "struct");
    size_t end = 0;
    std::vector<std::string> body = braced(d, body_at, end);
    if (top[0] == "struct" && !attribute) add_struct(decls, name, std::move(body));
    else add_struct(decls, name, std::nullopt);
  } else if (pointer) {
    add_alias(decls, name, "*");
  } else if (attribute || top[0] == "enum") {
    add_alias(decls, name, "");
  } else {
    add_alias(decls, name, canonical_type(top));
  }
}

// `#define NAME ...`: a macro; when it is made of at most three identifiers (a type), also an alias.
void scan_define(const std::string& line, Decls& d) {
  std::vector<std::string> t = tokenize(line);
  if (t.size() < 3 || t[0] != "#" || t[1] != "define" || !is_ident(t[2])) return;
  const size_t at = line.find(t[2], line.find("define") + 6) + t[2].size();
  if (at < line.size() && line[at] == '(') return add_macro(d, t[2], std::nullopt);  // function-like
  std::vector<std::string> words(t.begin() + 3, t.end());
  bool idents = words.size() <= 3;
  for (const std::string& w : words) idents = idents && is_ident(w);
  if (!idents) return add_macro(d, t[2], std::nullopt);
  add_macro(d, t[2], words);
  if (!words.empty()) add_alias(d, t[2], canonical_type(words));
}

void scan_decls(const std::string& text, Decls& d) {
  const std::string s = strip_comments(text, true);
  std::string code;
  for (size_t i = 0; i < s.size();) {
    size_t e = s.find('\n', i);
    if (e == std::string::npos) e = s.size();
    std::string line = s.substr(i, e - i);
    size_t f = line.find_first_not_of(" \t");
    if (f != std::string::npos && line[f] == '#') scan_define(line.substr(f), d);
    else code += line + '\n';
    i = e + 1;
  }
  std::vector<std::string> t = tokenize(code);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "struct" && i + 2 < t.size() && is_ident(t[i + 1]) && t[i + 2] == "{") {  // struct T { ... }
      size_t end = 0;
      std::vector<std::string> body = braced(t, i + 2, end);
      const bool attributed = end < t.size() && t[end] == "__attribute__";
      add_struct(d, "struct " + t[i + 1], attributed ? std::nullopt : std::optional(std::move(body)));
    }
    if (t[i] != "typedef") continue;
    size_t j = i + 1;
    int depth = 0;
    for (; j < t.size() && !(depth == 0 && t[j] == ";"); ++j) {
      if (t[j] == "(" || t[j] == "{" || t[j] == "[") ++depth;
      else if (t[j] == ")" || t[j] == "}" || t[j] == "]") --depth;
    }
    if (j > i + 1) scan_typedef(std::vector<std::string>(t.begin() + static_cast<long>(i) + 1, t.begin() + static_cast<long>(j)), d);
  }
}

// -D options: "-DNAME=words" or "-D NAME=words" ("-DNAME" alone is 1).
void scan_options(const std::string& options, Decls& d) {
  std::vector<std::string> words;
  for (size_t i = 0; i < options.size();) {
    size_t e = options.find_first_of(" \t", i);
    if (e == std::string::npos) e = options.size();
    if (e > i) words.push_back(options.substr(i, e - i));
    i = e + 1;
  }
  for (size_t i = 0; i < words.size(); ++i) {
    std::string def;
    if (words[i] == "-D" && i + 1 < words.size()) def = words[++i];
    else if (words[i].rfind("-D", 0) == 0) def = words[i].substr(2);
    else continue;
    const size_t eq = def.find('=');
    scan_define("#define " + (eq == std::string::npos ? def + " 1" : def.substr(0, eq) + " " + def.substr(eq + 1)), d);
  }
}

Decls scan_all(std::span<const std::string> texts, const std::string& options) {
  Decls d;
  scan_options(options, d);
  for (const std::string& t : texts) scan_decls(t, d);
  return d;
}

// Replaces the type macros in `toks` by their words; false (with `why`) at a macro it cannot expand.
bool expand_macros(std::vector<std::string>& toks, const Decls& d, std::string& why) {
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    std::vector<std::string> out;
    for (const std::string& w : toks) {
      auto it = d.macros.find(w);
      if (it == d.macros.end()) {
        out.push_back(w);
        continue;
      }
      if (!it->second) {
        why = "it uses the macro " + w;
        return false;
      }
      out.insert(out.end(), it->second->begin(), it->second->end());
      changed = true;
    }
    toks = std::move(out);
    if (!changed) return true;
  }
  why = "its macros expand into each other too deeply";
  return false;
}

// Whether the type words of a parameter (name removed) are a type the reader knows.
bool known_type(const std::vector<std::string>& words, const Decls& d, std::string& why) {
  if (words.empty()) {
    why = "a parameter has no type";
    return false;
  }
  if ((words[0] == "struct" || words[0] == "union" || words[0] == "enum") && words.size() == 2) return true;
  static const char* builtin[] = {"unsigned", "signed", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half", "bool", "void",
                                  "size_t", "ptrdiff_t", "intptr_t", "uintptr_t"};
  bool all_builtin = true;
  for (const std::string& w : words) {
    bool b = false;
    for (const char* x : builtin) b = b || w == x;
    all_builtin = all_builtin && b;
  }
  if (all_builtin) return true;
  if (words.size() == 1) {
    const std::string& w = words[0];
    DType e{};
    uint8_t lanes = 0;
    if (vector_type(w, e, lanes)) return true;
    static const char* opaque[] = {"image1d_t", "image1d_array_t", "image1d_buffer_t", "image2d_t", "image2d_array_t", "image3d_t",
                                   "image2d_depth_t", "image2d_array_depth_t", "sampler_t", "event_t", "queue_t", "clk_event_t"};
    for (const char* x : opaque)
      if (w == x) return true;
    if (auto it = d.aliases.find(w); it != d.aliases.end()) {
      if (it->second != "*") return true;  // its name is the type name the driver reports, whatever it means
      why = "the type " + w + " is a pointer typedef (in some #if branch at least)";
      return false;
    }
  }
  std::string t;
  for (const std::string& w : words) t += (t.empty() ? "" : " ") + w;
  why = "it uses the type " + t + ", which the reader does not know";
  return false;
}

// One parameter; nullopt (with `why`) when it cannot be read.
std::optional<KernelParam> parse_param(std::vector<std::string> toks, const Decls& d, std::string& why) {
  if (!expand_macros(toks, d, why)) return std::nullopt;
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
             w == "__read_write" || w == "read_only" || w == "write_only" || w == "read_write") {}
    else if (w == "*") {
      if (star) {
        why = "a parameter is a pointer to a pointer";
        return std::nullopt;
      }
      star = true;
    } else if (is_ident(w)) {
      base.push_back(w);
    } else {
      why = std::string("a parameter holds \"") + (w[0] == kDirective ? "#" : w) + "\"" +
            (w[0] == kDirective ? " (a preprocessor directive inside the parameter list)" : "");
      return std::nullopt;
    }
  }
  if (base.size() < 2) {
    why = "a parameter has no name or no type";
    return std::nullopt;
  }
  p.name = base.back();
  base.pop_back();
  if (!known_type(base, d, why)) return std::nullopt;
  p.type_name = canonical_type(base);
  p.is_pointer = star;
  if (star) {
    p.const_data = const_before_star;
    p.type_name += "*";
    if (p.space == AddressSpace::private_) p.space = AddressSpace::global;  // generic pointers: treat as global
  } else {
    p.scalar = scalar_dtype_of(p.type_name);
    if (p.type_name.rfind("image", 0) == 0) p.space = AddressSpace::global;  // as the driver reports images
  }
  return p;
}

// reqd_work_group_size(x, y, z) in the attribute tokens t[from, to), when written with numbers.
std::array<size_t, 3> reqd_size(const std::vector<std::string>& t, size_t from, size_t to) {
  for (size_t i = from; i + 7 < to; ++i)
    if (t[i] == "reqd_work_group_size" && t[i + 1] == "(" && is_number(t[i + 2]) && t[i + 3] == "," && is_number(t[i + 4]) &&
        t[i + 5] == "," && is_number(t[i + 6]) && t[i + 7] == ")")
      return {std::stoul(t[i + 2]), std::stoul(t[i + 4]), std::stoul(t[i + 6])};
  return {};
}

// Size and alignment of a by-value type under OpenCL's rules (a scalar or vector aligns to its size,
// a 3-vector is a 4-vector, a struct to its largest member), or nullopt when not computable.
struct Layout {
  size_t size = 0, align = 1;
};
std::optional<Layout> layout_of(const std::string& type, const Decls& d, int depth);

std::optional<Layout> struct_layout(const std::vector<std::string>& body, const Decls& d, int depth) {
  Layout s;
  std::vector<std::string> member;
  auto add_member = [&]() -> bool {
    std::string why;
    if (!expand_macros(member, d, why)) return false;
    // type words, then declarators "name [N]..." separated by commas: the first declarator is the
    // first identifier followed by "[", "," or the end
    size_t i = 0;
    while (i < member.size() && !(is_ident(member[i]) && (i + 1 == member.size() || member[i + 1] == "[" || member[i + 1] == ","))) ++i;
    std::vector<std::string> type(member.begin(), member.begin() + static_cast<long>(i));
    for (const std::string& w : type)
      if (!is_ident(w)) return false;
    std::optional<Layout> t = layout_of(canonical_type(type), d, depth + 1);
    if (!t || type.empty()) return false;
    while (i < member.size()) {
      if (!is_ident(member[i])) return false;
      size_t count = 1;
      ++i;
      while (i < member.size() && member[i] == "[") {
        if (i + 2 >= member.size() || !is_number(member[i + 1]) || member[i + 2] != "]") return false;
        count *= std::stoul(member[i + 1]);
        i += 3;
      }
      if (i < member.size()) {
        if (member[i] != ",") return false;
        ++i;
      }
      s.size = (s.size + t->align - 1) / t->align * t->align + t->size * count;
      s.align = std::max(s.align, t->align);
    }
    return true;
  };
  for (const std::string& w : body) {
    if (w == "*" || w == ":" || w == "(" || w == "{" || w == "__attribute__" || w == "#" || w[0] == kDirective) return std::nullopt;
    if (w == ";") {
      if (!add_member()) return std::nullopt;
      member.clear();
    } else {
      member.push_back(w);
    }
  }
  if (!member.empty() || s.size == 0) return std::nullopt;
  s.size = (s.size + s.align - 1) / s.align * s.align;
  return s;
}

std::optional<Layout> layout_of(const std::string& type, const Decls& d, int depth) {
  if (depth > 16) return std::nullopt;
  if (auto t = scalar_dtype_of(type)) return Layout{size(*t), size(*t)};
  DType e{};
  uint8_t lanes = 0;
  if (vector_type(type, e, lanes)) return Layout{size(e) * lanes, size(e) * lanes};
  if (auto it = d.structs.find(type); it != d.structs.end()) {
    if (!it->second) return std::nullopt;
    return struct_layout(*it->second, d, depth);
  }
  if (auto it = d.aliases.find(type); it != d.aliases.end() && !it->second.empty() && it->second != type && it->second != "struct")
    return layout_of(it->second, d, depth + 1);
  return std::nullopt;
}

enum class Pointee { checked, any, unknown };

Pointee classify(const std::string& t, const Decls& d, int depth, DType& dtype, uint8_t& lanes) {
  if (t == "void" || t == "char" || t == "uchar" || t == "struct" || t.rfind("struct ", 0) == 0 || t.rfind("union ", 0) == 0)
    return Pointee::any;
  if (auto s = scalar_dtype_of(t)) {
    dtype = *s;
    lanes = 1;
    return Pointee::checked;
  }
  if (vector_type(t, dtype, lanes)) return dtype == DType::i8 || dtype == DType::u8 ? Pointee::any : Pointee::checked;  // char vectors: bytes
  if (auto it = d.aliases.find(t); it != d.aliases.end() && !it->second.empty() && it->second != t && depth < 16)
    return classify(it->second, d, depth + 1, dtype, lanes);
  return Pointee::unknown;
}

}  // namespace

std::vector<std::string> resolve_pointees(std::vector<KernelSignature>& sigs, std::span<const std::string> texts, const std::string& options) {
  std::vector<std::string> notes;
  std::optional<Decls> decls;  // only programs with pointer or non-scalar parameters pay for the scan
  auto scanned = [&]() -> const Decls& {
    if (!decls) decls = scan_all(texts, options);
    return *decls;
  };
  for (KernelSignature& sig : sigs)
    for (KernelParam& p : sig.params) {
      p.pointee.reset();
      p.pointee_lanes = 1;
      p.value_bytes = 0;
      if (!p.is_pointer) {
        if (!p.scalar) {  // a typedef or #define of a scalar, or an aggregate of known size
          DType t{};
          uint8_t lanes = 1;
          if (!p.type_name.empty() && classify(p.type_name, scanned(), 0, t, lanes) == Pointee::checked && lanes == 1) p.scalar = t;
        }
        if (p.scalar) p.value_bytes = size(*p.scalar);
        else if (auto l = layout_of(p.type_name, scanned(), 0)) p.value_bytes = l->size;
        continue;
      }
      if (p.space == AddressSpace::local || p.type_name.empty() || p.type_name.back() != '*') continue;
      std::string t = p.type_name.substr(0, p.type_name.size() - 1);
      while (!t.empty() && t.back() == ' ') t.pop_back();
      DType dt{};
      uint8_t lanes = 1;
      switch (classify(t, scanned(), 0, dt, lanes)) {
        case Pointee::checked:
          p.pointee = dt;
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

SignatureRead read_signatures(const std::string& source, std::span<const std::string> headers, const std::string& options) {
  std::vector<std::string> texts{source};
  texts.insert(texts.end(), headers.begin(), headers.end());
  const Decls decls = scan_all(texts, options);
  std::vector<std::string> t = tokenize(strip_comments(source));
  SignatureRead r;
  auto fail = [&](const std::string& kernel, const std::string& why) {
    r.unreadable = "the signature of kernel " + kernel + " cannot be read from the source: " + why;
    r.kernels.clear();
    return r;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != "__kernel" && t[i] != "kernel") continue;
    const size_t attrs = i + 1;
    size_t j = attrs;
    while (j < t.size() && t[j] == "__attribute__") j = skip_attribute(t, j);
    if (j >= t.size() || t[j] != "void") continue;
    ++j;
    while (j < t.size() && t[j] == "__attribute__") j = skip_attribute(t, j);
    if (j + 1 >= t.size() || t[j + 1] != "(") continue;
    KernelSignature sig;
    sig.name = t[j];
    sig.reqd_work_group_size = reqd_size(t, attrs, j);
    if (decls.macros.count(sig.name)) return fail(sig.name, "its name is a macro");
    for (const KernelSignature& k : r.kernels)
      if (k.name == sig.name) return fail(sig.name, "it is defined twice (in #if branches?)");
    j += 2;
    std::vector<std::string> cur;
    int depth = 0;
    std::string why;
    for (; j < t.size(); ++j) {
      if (t[j] == "(") ++depth;
      if (t[j] == ")" && depth-- == 0) break;
      if (t[j] == "," && depth == 0) {
        auto p = parse_param(cur, decls, why);
        if (!p) return fail(sig.name, why);
        sig.params.push_back(std::move(*p));
        cur.clear();
      } else {
        cur.push_back(t[j]);
      }
    }
    if (j >= t.size()) return fail(sig.name, "its parameter list does not end");
    if (!cur.empty() && !(cur.size() == 1 && cur[0] == "void")) {
      auto p = parse_param(cur, decls, why);
      if (!p) return fail(sig.name, why);
      sig.params.push_back(std::move(*p));
    }
    r.kernels.push_back(std::move(sig));
    i = j;
  }
  return r;
}

std::vector<KernelSignature> parse_kernel_signatures(const std::string& source) {
  SignatureRead r = read_signatures(source);
  if (!r.ok()) throw CompileError("NULL device: " + r.unreadable, "");
  if (r.kernels.empty() && source.find("kernel") == std::string::npos) throw CompileError("NULL device: the source defines no __kernel function", "");
  return std::move(r.kernels);
}

}  // namespace encore::detail
