// Access of pointer parameters from a kernel's body (see access_infer.hpp): each use of a parameter's
// name is matched against the few forms that only read; any other form makes it inout.
#include "core/access_infer.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/preprocessor.hpp"

namespace encore::detail {

namespace {

bool is_ident(const std::string& w) { return !w.empty() && (std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_'); }
bool is_number(const std::string& w) { return !w.empty() && (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '.'); }
bool one_of(const std::string& w, std::initializer_list<const char*> set) {
  return std::any_of(set.begin(), set.end(), [&](const char* s) { return w == s; });
}
bool is_assign(const std::string& w) { return one_of(w, {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}); }
bool is_incdec(const std::string& w) { return w == "++" || w == "--"; }
bool is_keyword(const std::string& w) { return one_of(w, {"return", "case", "sizeof", "else", "do", "goto"}); }

// Whether w is one of `families` followed by digits (none allowed but for `bare`, which needs them):
// vload4, vload_half, vload_half4 of {vload_half, vload}.
bool numbered(const std::string& w, std::initializer_list<const char*> families, const char* bare) {
  for (const char* p : families)
    if (w.rfind(p, 0) == 0) {
      const std::string rest = w.substr(std::strlen(p));
      return std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
             (!rest.empty() || std::strcmp(p, bare) != 0);
    }
  return false;
}
// vloadN, vload_halfN, vloadaN_half: built-ins that only read through their pointer (last) argument.
bool is_vload(const std::string& w) { return numbered(w, {"vload_half", "vloada_half", "vload"}, "vload"); }
// vstoreN, vstore_halfN, vstorea_halfN (with a rounding mode: _rte, _rtz, _rtp, _rtn): built-ins
// that only store whole elements through their pointer (last) argument.
bool is_vstore(const std::string& w) {
  std::string s = w;
  for (const char* r : {"_rte", "_rtz", "_rtp", "_rtn"})
    if (s.size() > 4 && s.compare(s.size() - 4, 4, r) == 0) s.resize(s.size() - 4);
  return numbered(s, {"vstore_half", "vstorea_half", "vstore"}, "vstore");
}

// The tokens t[from, to) as written, for messages.
std::string text(const std::vector<std::string>& t, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to && i < t.size(); ++i) s += (s.empty() ? "" : " ") + t[i];
  return s;
}

// Whether the bare pointer at k is the whole pointer argument of a built-in `is_fn` names whose
// pointer is its argument number `want` (from 0) and its last: vload4(i, p), vload4(0, p + off)
// (1), vstore4(v, i, p + off) (2). That argument must be plain offset arithmetic (no assignment,
// increment or call that could keep the pointer).
bool pointer_arg(const std::vector<std::string>& t, size_t begin, size_t end, size_t k, bool (*is_fn)(const std::string&), size_t want) {
  size_t open = k, comma = 0;
  int depth = 0;
  while (open > begin) {
    --open;
    if (t[open] == ")") ++depth;
    else if (t[open] == "(" && depth-- == 0) break;
    else if (t[open] == "," && depth == 0 && comma == 0) comma = open;
  }
  if (open <= begin || t[open] != "(" || !is_fn(t[open - 1]) || comma == 0) return false;
  size_t commas = 0;
  depth = 0;
  for (size_t i = open + 1; i < k; ++i) {
    if (t[i] == "(") ++depth;
    else if (t[i] == ")") --depth;
    else if (t[i] == "," && depth == 0) ++commas;
  }
  if (commas != want) return false;  // vloadN(offset, pointer), vstoreN(data, offset, pointer)
  depth = 0;
  for (size_t i = comma + 1; i < end; ++i) {
    const std::string& w = t[i];
    if (w == "(") ++depth;
    else if (w == ")" && depth-- == 0) return true;
    else if (w == "," && depth == 0) return false;
    else if (!(is_ident(w) || is_number(w) || one_of(w, {"+", "-", "*", "/", "%", "<<", ">>", "[", "]", "(", ")", "."}))) return false;
    else if (is_ident(w) && i + 1 < end && t[i + 1] == "(") return false;  // a call inside the offset
  }
  return false;
}

// Why the body as a whole cannot be followed (every parameter inout), or empty. A call of a
// function-like macro whose reach is known (unknown_reach) does not make the whole body unclear:
// classify() looks at it for the names it may reach and the statement it stands in.
std::string unclear_body(const std::vector<std::string>& t, size_t begin, size_t end, const std::vector<KernelParam>& params) {
  std::vector<std::string> names;
  for (size_t i = begin; i < end; ++i) {
    const std::string& w = t[i];
    if (is_unknown(w) && !unknown_reach(w, names)) return "the body uses " + unknown_what(w);
    if (w == "asm" || w == "__asm" || w == "__asm__") return "the body holds inline assembly";
    // a cast to a pointer type of something other than a parameter (whose own use then counts):
    // (T*)x, where x may be an address computed from anything
    // ((T*)p[0] casts an element, which may hold an address)
    if (w == "*" && i + 2 < end && t[i + 1] == ")") {
      const std::string& next = t[i + 2];
      const bool pointer = std::any_of(params.begin(), params.end(), [&](const KernelParam& p) { return p.is_pointer && p.name == next; }) &&
                           !(i + 3 < end && one_of(t[i + 3], {"[", ".", "->"}));
      if (!pointer && (is_ident(next) || is_number(next) || next == "(" || next == "&" || next == "*"))
        return "the body converts a value to a pointer: " + text(t, i, i + 4);
    }
  }
  return {};
}

bool bounds_statement(const std::string& w) { return w == ";" || w == "{" || w == "}"; }

// A macro call in the statement around t[k] (between the nearest ; { or } on each side), or null:
// its expansion lands in that statement and may turn the use into a store (p[0] SET(1)).
const std::string* macro_near(const std::vector<std::string>& t, size_t begin, size_t end, size_t k) {
  for (size_t i = k; i > begin && !bounds_statement(t[i - 1]);)
    if (is_unknown(t[--i])) return &t[i];
  for (size_t i = k + 1; i < end && !bounds_statement(t[i]); ++i)
    if (is_unknown(t[i])) return &t[i];
  return nullptr;
}

// A function-like macro's call in the body that may name `n` (its reach holds it), or null: `n` is
// then used in a way the reader does not see.
const std::string* macro_naming(const std::vector<std::string>& t, size_t begin, size_t end, const std::string& n) {
  std::vector<std::string> names;
  for (size_t k = begin; k < end; ++k)
    if (is_unknown(t[k]) && unknown_reach(t[k], names) && std::find(names.begin(), names.end(), n) != names.end()) return &t[k];
  return nullptr;
}

// The "]" that closes the subscript opening at t[j] (a "["), or end when it is unbalanced.
size_t close_subscript(const std::vector<std::string>& t, size_t j, size_t end) {
  for (int depth = 0; j < end; ++j) {
    if (t[j] == "[") ++depth;
    else if (t[j] == "]" && --depth == 0) return j;
  }
  return end;
}

// The access of the parameter named `n`: why it is inout, or empty with `used` telling in from none.
std::string classify(const std::vector<std::string>& t, size_t begin, size_t end, const std::string& n, bool& used) {
  if (const std::string* m = macro_naming(t, begin, end, n)) {
    used = true;
    return "named by a call of " + unknown_what(*m);
  }
  for (size_t k = begin + 1; k < end; ++k) {
    if (t[k] != n) continue;
    const std::string& prev = t[k - 1];
    if (prev == "." || prev == "->") continue;  // a member of that name, not the parameter
    used = true;
    if (const std::string* m = macro_near(t, begin, end, k)) return "in one statement with a call of " + unknown_what(*m);
    // the postfix chain: [ ... ], .member, ->member
    size_t j = k + 1;
    for (;;) {
      if (j < end && t[j] == "[") {
        j = close_subscript(t, j, end);
        if (j >= end) return "an unbalanced subscript: " + text(t, k, k + 4);
        ++j;
      } else if (j + 1 < end && (t[j] == "." || t[j] == "->") && is_ident(t[j + 1])) {
        j += 2;
      } else {
        break;
      }
    }
    const bool element = j > k + 1;
    const std::string use = text(t, k, std::min(j + 1, end));
    if (j >= end) return "a use the reader cannot follow: " + use;
    size_t s = k;  // where the expression starts: at the * of *p
    if (!element) {
      if (prev == "*") {
        const std::string& before = t[k - 2];
        const bool unary = k >= begin + 2 && (one_of(before, {"(", "[", ",", "{", "}", ";", "?", ":", "+", "-", "*", "/", "%", "<", ">", "<=", ">=",
                                                            "==", "!=", "&&", "||", "!", "~", "|", "^", "<<", ">>", "return"}) ||
                                              is_assign(before));
        if (!unary) return "declared or converted as a pointer: " + text(t, k - 2, k + 1);
        s = k - 1;
      } else if (!pointer_arg(t, begin, end, k, is_vload, 1)) {
        return "used as a pointer (passed, assigned, converted or offset): " + use;
      }
    }
    if (is_assign(t[j]) || is_incdec(t[j])) return "stored through: " + text(t, s, std::min(j + 1, end));
    if (t[j] == ")") {  // (p[i]) = x, (*p)++, (p[i]).x = y
      size_t a = j;
      while (a < end && t[a] == ")") ++a;
      if (a < end && (is_assign(t[a]) || is_incdec(t[a]) || one_of(t[a], {".", "->", "["})))
        return "stored through: " + text(t, k, std::min(a + 1, end));
    }
    size_t q = s - 1;
    while (q > begin && t[q] == "(") --q;
    if (is_incdec(t[q])) return "stored through: " + text(t, q, j);
    if (t[q] == "&") {
      const std::string& b = t[q - 1];
      const bool binary = (is_ident(b) && !is_keyword(b)) || is_number(b) || b == "]";
      if (!binary || q + 1 < s) return "its address is taken: " + text(t, q, j);
    }
  }
  return {};
}

// Whether every use of the parameter named `n` stores whole elements, with a plain assignment (n[i] =
// v, one subscript) or as a vstoreN's pointer (vstore4(v, i, n + off)), and no use reads through it:
// what it held before the kernel cannot matter to anything the kernel computes. (x = n[i] = v stores
// too; n[i] += v, ++n[i], &n[i], n[i][j], a member store, a macro that may name it or shares its
// statement: not these forms.) Asked only of a body the reader can follow (unclear_body empty), so
// every macro call's reach is known.
bool only_stored(const std::vector<std::string>& t, size_t begin, size_t end, const std::string& n) {
  if (macro_naming(t, begin, end, n)) return false;
  bool any = false;
  for (size_t k = begin + 1; k < end; ++k) {
    if (t[k] != n) continue;
    const std::string& prev = t[k - 1];
    if (prev == "." || prev == "->") continue;  // a member of that name
    if (macro_near(t, begin, end, k) || one_of(prev, {"&", "*", "++", "--", "sizeof"})) return false;
    if (k + 1 < end && t[k + 1] == "[") {  // p[i] = v
      const size_t j = close_subscript(t, k + 1, end);
      if (j + 1 >= end || t[j + 1] != "=") return false;
    } else if (!pointer_arg(t, begin, end, k, is_vstore, 2)) {  // vstore4(v, i, p + off)
      return false;
    }
    any = true;
  }
  return any;
}

}  // namespace

std::vector<ParamAccess> infer_access(const std::vector<std::string>& t, size_t begin, size_t end, const std::vector<KernelParam>& params) {
  std::vector<ParamAccess> r(params.size());
  const std::string unclear = unclear_body(t, begin, end, params);
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& p = params[i];
    if (!p.is_pointer || !(p.space == AddressSpace::global || p.space == AddressSpace::constant)) continue;
    if (!unclear.empty()) {
      r[i].why = unclear;
      continue;
    }
    bool used = false;
    r[i].why = classify(t, begin, end, p.name, used);
    if (r[i].why.empty()) r[i].access = used ? Access::in : Access::none;
    else r[i].store_only = only_stored(t, begin, end, p.name);
  }
  return r;
}

std::string describe_access(const std::vector<KernelParam>& params, const std::vector<ParamAccess>& acc) {
  std::string s;
  for (size_t i = 0; i < params.size() && i < acc.size(); ++i) {
    const KernelParam& p = params[i];
    if (!p.is_pointer || !(p.space == AddressSpace::global || p.space == AddressSpace::constant)) continue;
    s += (s.empty() ? "" : ", ") + p.name + " " + name(acc[i].access);
    if (acc[i].access == Access::none) s += " (never referenced)";
    else if (acc[i].access == Access::inout) s += " (" + acc[i].why + (acc[i].store_only ? "; only stored into: encore::out holds" : "") + ")";
  }
  return s;
}

}  // namespace encore::detail
