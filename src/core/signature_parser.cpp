// Reads the parameter lists of the __kernel functions in OpenCL C source (see signature_parser.hpp)
// from the program the compiler sees (core/preprocessor.hpp): address-space and type qualifiers,
// pointers, attributes, typedefs and structs. What it cannot follow (a function-like macro or an
// undecided #if in a signature, unknown types, two kernels of one name) makes the program
// unreadable instead of a guess.
#include "core/signature_parser.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "core/access_infer.hpp"
#include "core/env.hpp"
#include "core/preprocessor.hpp"
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

// The words of a type spelled as OpenCL's CL_KERNEL_ARG_TYPE_NAME does ("unsigned long int" ->
// "ulong", "int unsigned" -> "uint"), so both devices report the same params and aliases resolve to
// the same names. OpenCL's long is 64 bits; "long long" is reserved and stays as written (unknown).
std::string canonical_type(const std::vector<std::string>& words) {
  std::string t;
  int n[6] = {};  // signed, unsigned, char, short, int, long
  static const char* const ints[] = {"signed", "unsigned", "char", "short", "int", "long"};
  bool integer = true;
  for (const std::string& w : words) {
    if (w == "const" || w == "volatile") continue;
    t += (t.empty() ? "" : " ") + w;
    const auto k = std::find(std::begin(ints), std::end(ints), w) - std::begin(ints);
    if (k < 6) ++n[k];
    else integer = false;
  }
  const int sizes = n[2] + n[3] + (n[5] ? 1 : 0);
  if (!integer || t.empty() || n[0] + n[1] > 1 || n[2] > 1 || n[3] > 1 || n[4] > 1 || n[5] > 1 || sizes > 1 || (n[2] && n[4])) return t;
  const char* kind = n[2] ? "char" : n[3] ? "short" : n[5] ? "long" : "int";
  return (n[1] ? "u" : "") + std::string(kind);
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
  // A pointee type name the program does not declare is taken as a name (unchecked): for the NULL
  // device, which has no driver to ask, where a group under an undecided #if may declare it. (Not
  // for by-value parameters: such a name may be a pointer typedef.)
  bool lenient = false;
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
    if (depth == 0 && is_unknown(w)) {  // an undecided #if or a function-like macro: even whether it is a pointer is unknown
      for (size_t j = d.size(); j-- > i;)
        if (is_ident(d[j])) return add_alias(decls, d[j], "*");
      return;
    }
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

// The typedefs and structs of the preprocessed program.
Decls scan_decls(const std::vector<std::string>& t) {
  Decls d;
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
  return d;
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
std::optional<KernelParam> parse_param(const std::vector<std::string>& toks, const Decls& d, std::string& why) {
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
    } else if (is_unknown(w)) {
      why = "a parameter depends on " + unknown_what(w);
      return std::nullopt;
    } else {
      why = "a parameter holds \"" + w + "\"";
      return std::nullopt;
    }
  }
  if (base.size() < 2) {
    why = "a parameter has no name or no type";
    return std::nullopt;
  }
  p.name = base.back();
  base.pop_back();
  if (!known_type(base, d, why) && !(d.lenient && star && base.size() == 1)) return std::nullopt;
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
// A type's size and alignment as OpenCL C lays it out, and its padding: the byte ranges [begin, end)
// no member covers (between members, at a struct's end, a 3-vector's fourth lane). A struct whose
// padding would take more than kMaxPadRanges ranges keeps none (its bytes are then compared whole).
struct Layout {
  size_t size = 0, align = 1;
  std::vector<std::pair<uint32_t, uint32_t>> pad;
  bool pad_known = true;
};
constexpr size_t kMaxPadRanges = 256, kMaxLaidOut = size_t(1) << 32;
void add_pad(Layout& l, size_t b, size_t e) {
  if (b >= e) return;
  if (!l.pad.empty() && l.pad.back().second == b) l.pad.back().second = static_cast<uint32_t>(e);
  else l.pad.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  if (l.pad.size() > kMaxPadRanges) {
    l.pad.clear();
    l.pad_known = false;
  }
}
std::optional<Layout> layout_of(const std::string& type, const Decls& d, int depth);

std::optional<Layout> struct_layout(const std::vector<std::string>& body, const Decls& d, int depth) {
  Layout s;
  std::vector<std::string> member;
  auto add_member = [&]() -> bool {
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
        if (i + 2 >= member.size() || !is_number(member[i + 1]) || member[i + 2] != "]" || member[i + 1].size() > 9) return false;
        count *= std::stoul(member[i + 1]);
        if (count > kMaxLaidOut) return false;  // no by-value argument is this large
        i += 3;
      }
      if (i < member.size()) {
        if (member[i] != ",") return false;
        ++i;
      }
      const size_t at = (s.size + t->align - 1) / t->align * t->align;
      if (t->size * count > kMaxLaidOut || at + t->size * count > kMaxLaidOut) return false;
      if (s.pad_known) add_pad(s, s.size, at);
      s.pad_known = s.pad_known && t->pad_known && (t->pad.empty() || count * t->pad.size() <= kMaxPadRanges);
      if (!s.pad_known) s.pad.clear();
      for (size_t k = 0; s.pad_known && !t->pad.empty() && k < count; ++k)
        for (auto [b, e] : t->pad) add_pad(s, at + k * t->size + b, at + k * t->size + e);
      s.size = at + t->size * count;
      s.align = std::max(s.align, t->align);
    }
    return true;
  };
  for (const std::string& w : body) {
    if (w == "*" || w == ":" || w == "(" || w == "{" || w == "__attribute__" || w == "#" || is_unknown(w)) return std::nullopt;
    if (w == ";") {
      if (!add_member()) return std::nullopt;
      member.clear();
    } else {
      member.push_back(w);
    }
  }
  if (!member.empty() || s.size == 0) return std::nullopt;
  const size_t end = (s.size + s.align - 1) / s.align * s.align;
  if (s.pad_known) add_pad(s, s.size, end);
  s.size = end;
  return s;
}

std::optional<Layout> layout_of(const std::string& type, const Decls& d, int depth) {
  if (depth > 16) return std::nullopt;
  if (auto t = scalar_dtype_of(type)) return Layout{size(*t), size(*t), {}, true};
  DType e{};
  uint8_t lanes = 0;
  if (vector_type(type, e, lanes)) {
    Layout v{size(e) * lanes, size(e) * lanes, {}, true};
    if (type.back() == '3') add_pad(v, size(e) * 3, size(e) * 4);  // a 3-vector takes 4 lanes (vector_type counts 4)
    return v;
  }
  if (auto it = d.structs.find(type); it != d.structs.end()) {
    if (!it->second) return std::nullopt;
    return struct_layout(*it->second, d, depth);
  }
  if (auto it = d.aliases.find(type); it != d.aliases.end() && !it->second.empty() && it->second != type && it->second != "struct")
    return layout_of(it->second, d, depth + 1);
  return std::nullopt;
}

// The body after a kernel's parameter list (from `at`, past attributes): [its "{", its "}").
std::pair<size_t, size_t> body_of(const std::vector<std::string>& t, size_t at) {
  while (at < t.size() && t[at] == "__attribute__") at = skip_attribute(t, at);
  if (at >= t.size() || t[at] != "{") return {0, 0};
  int depth = 0;
  for (size_t e = at; e < t.size(); ++e) {
    if (t[e] == "{") ++depth;
    else if (t[e] == "}" && --depth == 0) return {at, e};
  }
  return {0, 0};
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

// The kernels in the preprocessed program `t`; `bodies` (when given) gets each kernel's body as the
// token range [its "{", its "}"), or (0, 0) for a declaration without one.
SignatureRead read_tokens(const std::vector<std::string>& t, const Decls& decls, std::vector<std::pair<size_t, size_t>>* bodies = nullptr) {
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
    if (is_unknown(t[j])) return fail("?", "its name comes from " + unknown_what(t[j]));
    KernelSignature sig;
    sig.name = t[j];
    sig.reqd_work_group_size = reqd_size(t, attrs, j);
    for (const KernelSignature& k : r.kernels)
      if (k.name == sig.name) return fail(sig.name, "it is defined twice");
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
    if (bodies) bodies->push_back(body_of(t, j + 1));
    i = j;
  }
  return r;
}

// KernelParam::inferred_access of `sig`'s __global/__constant pointers from its body in the reader's
// own reading `own` (cleared, with a note saying why, when `no_inference` is set or the kernel has
// no body there), and ENCORE_DEBUG=1's line for the kernel.
void infer_params(KernelSignature& sig, const SignatureRead& own, const std::vector<std::pair<size_t, size_t>>& bodies,
                  const std::vector<std::string>& tokens, const std::string& no_inference, std::vector<std::string>& notes) {
  bool any = false;
  for (KernelParam& p : sig.params) {
    p.inferred_access.reset();
    p.inferred_store_only = false;
    any = any || (p.is_pointer && (p.space == AddressSpace::global || p.space == AddressSpace::constant));
  }
  if (!any) return;
  std::string why = no_inference;
  if (why.empty() && !env::infer_access()) why = "ENCORE_INFER_ACCESS=0";
  size_t k = 0;
  while (why.empty() && k < own.kernels.size() && own.kernels[k].name != sig.name) ++k;
  if (why.empty() && (k == own.kernels.size() || bodies[k].second == 0)) why = "the reader found no body for it";
  if (!why.empty()) {
    notes.push_back("kernel " + sig.name + ": pointer access not inferred (" + why + "): pointers without const count as inout");
    return;
  }
  const std::vector<ParamAccess> acc = infer_access(tokens, bodies[k].first, bodies[k].second, own.kernels[k].params);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    KernelParam& p = sig.params[i];
    if (p.is_pointer && (p.space == AddressSpace::global || p.space == AddressSpace::constant)) {
      p.inferred_access = acc[i].access;
      p.inferred_store_only = acc[i].store_only;
    }
  }
  notes.push_back("kernel " + sig.name + ": pointer access from the source: " + describe_access(own.kernels[k].params, acc));
}

}  // namespace

std::vector<std::string> resolve_pointees(std::vector<KernelSignature>& sigs, const std::string& source, std::span<const std::string> headers,
                                          const std::string& options, const IncludeMap* includes) {
  std::vector<std::string> notes;
  std::optional<Decls> decls;  // only programs with pointer or non-scalar parameters pay for the scan
  // what access inference reads: the program as the reader sees it, with each kernel's body
  Preprocessed pp;
  SignatureRead own;
  std::vector<std::pair<size_t, size_t>> bodies;
  std::string no_inference = "its program was not read";
  auto scanned = [&]() -> const Decls& {
    if (decls) return *decls;
    decls.emplace();  // nothing the program declares resolves unless the reader saw the program as the driver did
    pp = preprocess(source, headers, includes, options);
    if (!pp.undecidable.empty()) {
      no_inference = "the reader cannot follow the program's preprocessing";
      return *decls;
    }
    Decls d = scan_decls(pp.tokens);
    own = read_tokens(pp.tokens, d, &bodies);
    bool agree = true;
    for (const KernelSignature& sig : sigs)
      for (const KernelSignature& k : own.kernels)
        if (k.name == sig.name) {
          agree = agree && k.params.size() == sig.params.size();
          for (size_t i = 0; agree && i < k.params.size(); ++i) agree = k.params[i].type_name == sig.params[i].type_name;
        }
    if (agree) decls = std::move(d);
    // a body read on an assumption may not be the body the driver compiled
    no_inference = !agree ? "the reader's parameter lists differ from the driver's"
                   : !own.ok() ? own.unreadable
                   : !pp.assumed.empty() ? "the reader's view of the program rests on an assumption (" + pp.assumed[0] + ")"
                                         : "";
    return *decls;
  };
  for (KernelSignature& sig : sigs) {
    sig.padding.clear();
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
        else if (auto l = layout_of(p.type_name, scanned(), 0)) {
          p.value_bytes = l->size;
          sig.padding.resize(sig.params.size());
          sig.padding[static_cast<size_t>(&p - sig.params.data())] = std::move(l->pad);
        }
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
    if (std::any_of(sig.params.begin(), sig.params.end(), [](const KernelParam& p) { return p.is_pointer && p.space != AddressSpace::local; }))
      scanned();
    infer_params(sig, own, bodies, pp.tokens, no_inference, notes);
  }
  return notes;
}

SignatureRead read_signatures(const std::string& source, std::span<const std::string> headers, const std::string& options,
                              const IncludeMap* includes) {
  const Preprocessed pp = preprocess(source, headers, includes, options);
  if (!pp.undecidable.empty()) {
    SignatureRead r;
    r.unreadable = "the reader cannot follow the program's preprocessing: " + pp.undecidable;
    return r;
  }
  Decls decls = scan_decls(pp.tokens);
  SignatureRead r = read_tokens(pp.tokens, decls);
  if (!r.ok())  // what an undecided group holds may be what was missing
    for (const std::string& t : pp.tokens)
      if (is_unknown(t) && r.unreadable.find(unknown_what(t)) == std::string::npos) {
        r.unreadable += " (note: the reader skipped " + unknown_what(t) + ")";
        decls.lenient = true;
        r.unchecked = read_tokens(pp.tokens, decls).kernels;
        break;
      }
  if (r.ok() && !pp.assumed.empty()) {
    std::string why = pp.assumed[0];
    if (pp.assumed.size() > 1) why += " (and " + std::to_string(pp.assumed.size() - 1) + " more)";
    for (KernelSignature& k : r.kernels) k.confirm = why;
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
