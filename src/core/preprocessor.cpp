// See preprocessor.hpp. Follows C11 6.10 for what it implements; integer expressions in #if are
// evaluated in 64 bits (intmax_t) as clang does, and whatever would be undefined behaviour or a
// clang extension there (signed overflow, a too large shift, a decimal literal that only fits
// unsigned, binary literals) is left undecided rather than given clang's answer.
#include "core/preprocessor.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <set>

namespace encore::detail {

namespace {

struct Tok {
  std::string s;
  int line = 0;
  bool bol = false;  // first token of a line: a "#" here starts a directive
  bool gap = false;  // white space before it: "#define F (x)" is object-like, "#define F(x)" is not
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(const std::string& w) { return !w.empty() && ident_start(w[0]); }

// Tokens of a text with comments removed and backslash-newlines spliced (C phases 1-3).
std::vector<Tok> lex(const std::string& in) {
  std::string s;
  std::vector<size_t> splices;  // offsets in s where a line was spliced: they still count as lines
  s.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\\') {
      size_t j = i + 1;
      if (j < in.size() && in[j] == '\r') ++j;
      if (j < in.size() && in[j] == '\n') {
        splices.push_back(s.size());
        i = j;
        continue;
      }
    }
    if (in[i] != '\r') s += in[i];
  }
  static const char* const punct3[] = {"...", "<<=", ">>="};
  static const char* const punct2[] = {"##", "&&", "||", "<<", ">>", "<=", ">=", "==", "!=", "->", "++", "--",
                                       "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="};
  std::vector<Tok> t;
  int line = 1;
  size_t sp = 0;
  bool bol = true, gap = false;
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const char c = s[i];
    if (c == '\n') {
      ++line, ++i, bol = true, gap = true;
    } else if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
      ++i, gap = true;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      const size_t e = s.find("*/", i + 2);
      const size_t end = e == std::string::npos ? n : e + 2;
      line += static_cast<int>(std::count(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(end), '\n'));
      i = end, gap = true;  // a comment is one space: a directive continues over a multi-line comment
    } else {
      size_t j = i + 1;
      if (ident_start(c)) {
        while (j < n && ident_char(s[j])) ++j;
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && j < n && std::isdigit(static_cast<unsigned char>(s[j])))) {
        while (j < n && (ident_char(s[j]) || s[j] == '.' || ((s[j] == '+' || s[j] == '-') && std::strchr("eEpP", s[j - 1])))) ++j;
      } else if (c == '"' || c == '\'') {
        while (j < n && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
        j = std::min(j + 1, n);
      } else {
        for (const char* p : punct3)
          if (s.compare(i, 3, p) == 0) j = i + 3;
        if (j == i + 1)
          for (const char* p : punct2)
            if (s.compare(i, 2, p) == 0) j = i + 2;
      }
      while (sp < splices.size() && splices[sp] <= i) ++line, ++sp;
      t.push_back({s.substr(i, j - i), line, bol, gap});
      bol = gap = false;
      i = j;
    }
  }
  return t;
}

// Names an OpenCL driver may define before the program's first line: reserved names, its limits,
// constants and extensions, vendor names, and its built-in functions (lower case: PoCL's headers
// define hundreds as macros). The program cannot tell whether they are defined, and neither can the
// reader: a condition on one is undecided.
bool driver_may_define(const std::string& n) {
  if (n[0] == '_' || std::none_of(n.begin(), n.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); })) return true;
  static const char* const prefixes[] = {"ALIGN", "AMD", "APPLE", "ARM", "ATOMIC", "CHAR", "CL", "CLANG", "CLK", "CPU", "DBL",
                                         "EMBEDDED", "ENDIAN", "FLT", "FP", "FULL", "GPU", "HALF", "HUGE", "IMAGE", "IMG",
                                         "INFINITY", "INT", "INTEL", "INTPTR", "INTTYPE", "LLVM", "LONG", "M", "MALI", "MAX",
                                         "MAXFLOAT", "NAN", "NULL", "NV", "NVIDIA", "OPENCL", "POCL", "PTRDIFF", "QCOM",
                                         "SCHAR", "SHRT", "SIZE", "SPIR", "UCHAR", "UINT", "UINTPTR", "ULONG", "USHRT"};
  for (const char* p : prefixes) {
    const size_t k = std::strlen(p);
    if (n.compare(0, k, p) == 0 && (n.size() == k || n[k] == '_')) return true;
  }
  return false;
}

// #if arithmetic: a value of intmax_t or uintmax_t. `bad` is set for what the reader does not
// decide; `live` is false in an operand that is not evaluated (0 && 1/0 is fine).
struct Val {
  uint64_t v = 0;
  bool u = false;
};

struct Expr {
  const std::vector<std::string>& t;
  size_t i = 0;
  bool bad = false;

  const std::string& peek() const {
    static const std::string end;
    return i < t.size() ? t[i] : end;
  }
  Val fail(bool live, bool u = false) {
    bad = bad || live;
    return {0, u};
  }
  static int prec(const std::string& op) {
    static const std::pair<const char*, int> table[] = {{"*", 10}, {"/", 10}, {"%", 10}, {"+", 9},  {"-", 9},  {"<<", 8}, {">>", 8},
                                                        {"<", 7},  {"<=", 7}, {">", 7},  {">=", 7}, {"==", 6}, {"!=", 6}, {"&", 5},
                                                        {"^", 4},  {"|", 3},  {"&&", 2}, {"||", 1}};
    for (auto& [o, p] : table)
      if (op == o) return p;
    return 0;
  }
  Val cond(bool live) {
    Val c = binary(1, live);
    if (peek() != "?") return c;
    ++i;
    const bool take = c.v != 0;
    Val a = cond(live && take);
    if (peek() != ":") return fail(true);
    ++i;
    Val b = cond(live && !take);
    Val r = take ? a : b;
    r.u = a.u || b.u;
    return r;
  }
  Val binary(int min, bool live) {
    Val a = unary(live);
    for (;;) {
      const int p = prec(peek());
      if (p == 0 || p < min) return a;
      const std::string op = t[i++];
      const bool rhs_live = live && !(op == "&&" && a.v == 0) && !(op == "||" && a.v != 0);
      a = apply(op, a, binary(p + 1, rhs_live), live);
    }
  }
  Val apply(const std::string& op, Val a, Val b, bool live) {
    if (op == "&&") return {a.v && b.v, false};
    if (op == "||") return {a.v || b.v, false};
    const bool u = a.u || b.u;
    const int64_t x = static_cast<int64_t>(a.v), y = static_cast<int64_t>(b.v);
    int64_t r = 0;
    if (op == "<<" || op == ">>") {  // the type of the left operand; the count must be in range
      if (b.u ? b.v >= 64 : (y < 0 || y >= 64)) return fail(live, a.u);
      if (op == ">>") return {a.u ? a.v >> b.v : static_cast<uint64_t>(x >> b.v), a.u};
      if (a.u) return {a.v << b.v, true};
      if (x < 0 || (b.v > 0 && (x >> (63 - b.v)) != 0)) return fail(live);
      return {static_cast<uint64_t>(x << b.v), false};
    }
    if (op == "*") {
      if (u) return {a.v * b.v, true};
      if (__builtin_mul_overflow(x, y, &r)) return fail(live);
      return {static_cast<uint64_t>(r), false};
    }
    if (op == "+" || op == "-") {
      if (u) return {op == "+" ? a.v + b.v : a.v - b.v, true};
      if (op == "+" ? __builtin_add_overflow(x, y, &r) : __builtin_sub_overflow(x, y, &r)) return fail(live);
      return {static_cast<uint64_t>(r), false};
    }
    if (op == "/" || op == "%") {
      if (b.v == 0 || (!u && x == INT64_MIN && y == -1)) return fail(live, u);
      if (u) return {op == "/" ? a.v / b.v : a.v % b.v, true};
      return {static_cast<uint64_t>(op == "/" ? x / y : x % y), false};
    }
    if (op == "&") return {a.v & b.v, u};
    if (op == "^") return {a.v ^ b.v, u};
    if (op == "|") return {a.v | b.v, u};
    bool lt = u ? a.v < b.v : x < y, eq = a.v == b.v;
    if (op == "==") return {eq, false};
    if (op == "!=") return {!eq, false};
    if (op == "<") return {lt, false};
    if (op == ">=") return {!lt, false};
    if (op == ">") return {!lt && !eq, false};
    return {lt || eq, false};  // "<="
  }
  Val unary(bool live) {
    const std::string w = peek();
    if (w.empty()) return fail(true);
    ++i;
    if (w == "+") return unary(live);
    if (w == "-") {
      Val v = unary(live);
      if (!v.u && v.v == static_cast<uint64_t>(INT64_MIN)) return fail(live);
      return {0 - v.v, v.u};
    }
    if (w == "~") {
      Val v = unary(live);
      return {~v.v, v.u};
    }
    if (w == "!") return {unary(live).v == 0, false};
    if (w == "(") {
      Val v = cond(live);
      if (peek() != ")") return fail(true);
      ++i;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(w[0]))) return number(w);
    if (w[0] == '\'') return character(w);
    return fail(true);
  }
  Val number(const std::string& w) {
    size_t k = w.size();
    while (k > 0 && std::strchr("uUlL", w[k - 1])) --k;
    std::string suffix = w.substr(k);
    if (suffix.find("lL") != std::string::npos || suffix.find("Ll") != std::string::npos) return fail(true);
    for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const char* const ok[] = {"", "u", "l", "ul", "lu", "ll", "ull", "llu"};
    if (std::none_of(std::begin(ok), std::end(ok), [&](const char* s) { return suffix == s; })) return fail(true);
    std::string digits = w.substr(0, k);
    unsigned base = 10;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) base = 16, digits = digits.substr(2);
    else if (digits.size() > 1 && digits[0] == '0') base = 8, digits = digits.substr(1);
    uint64_t v = 0;
    for (char c : digits) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10 : 99;
      if (d >= static_cast<int>(base) || __builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(d), &v))
        return fail(true);
    }
    const bool u = suffix.find('u') != std::string::npos;
    if (!u && v > static_cast<uint64_t>(INT64_MAX)) {
      if (base == 10) return fail(true);  // clang: "interpreting as unsigned", with a warning
      return {v, true};
    }
    return {v, u};
  }
  Val character(const std::string& w) {
    if (w.size() == 3 && w[1] != '\\' && w[1] != '\'' && !(w[1] & 0x80)) return {static_cast<uint64_t>(w[1]), false};
    static const char escapes[] = "n\nt\tr\r0\0\\\\''\"\"a\ab\bf\fv\v??";
    if (w.size() == 4 && w[1] == '\\' && w[3] == '\'')
      for (size_t e = 0; e + 1 < sizeof escapes; e += 2)
        if (escapes[e] == w[2]) return {static_cast<uint64_t>(escapes[e + 1]), false};
    return fail(true);
  }
};

enum class Decision { no, yes, unknown };
enum class State { active, inactive, unknown };

struct Macro {
  enum Kind { object, function, opaque, unknown } kind = object;
  std::vector<std::string> body;  // a function-like macro's too (what its calls may name: Pp::reach)
  bool pastes = false;            // a function-like macro whose body pastes tokens with ##
};

// Expansion work past this many tokens is a program the reader does not read: a macro that expands
// into itself (painted blue, so once) is cheap, but chains of doubling macros are exponential.
constexpr size_t kBudget = size_t(1) << 20;

std::string marker(const std::string& what) { return std::string(1, kUnknown) + what; }

// The #include spelled by a directive's tokens after "include": "\"x.h\"" or "<x.h>"; empty when
// a macro computes it.
std::string include_spelling(const std::vector<Tok>& args) {
  if (args.size() == 1 && args[0].s.size() > 1 && args[0].s[0] == '"' && args[0].s.back() == '"') return args[0].s;
  if (args.empty() || args[0].s != "<") return {};
  std::string spelled;
  for (size_t i = 1; i < args.size() && args[i].s != ">"; ++i) spelled += (args[i].gap ? " " : "") + args[i].s;
  return "<" + spelled + ">";
}

class Pp {
 public:
  Pp(std::span<const std::string> headers, const IncludeMap* includes) : headers_(headers), includes_(includes) {}

  Preprocessed out;

  bool failed() const { return !out.undecidable.empty(); }
  void give_up(const std::string& why) {
    if (out.undecidable.empty()) out.undecidable = why;
  }

  // -D and -U, in order, as the driver passes them to its preprocessor.
  void options(const std::string& opts) {
    for (const BuildOption& o : preprocessor_options(opts)) {
      if (o.flag == 'I') continue;
      const std::string& arg = o.value;
      if (arg.find_first_of("\"'\\") != std::string::npos) return give_up("the build option " + o.word + " holds quotes or a backslash");
      if (o.flag == 'U') {
        macros_.erase(arg);
        undefined_.insert(arg);
        continue;
      }
      const size_t eq = arg.find('=');
      define(lex(eq == std::string::npos ? arg + " 1" : arg.substr(0, eq) + " " + arg.substr(eq + 1)), "-D" + arg);
    }
  }

  void file(size_t index, const std::string& text, const std::string& name) {
    if (++depth_ > 200) return give_up("#include nests more than 200 deep");
    const std::vector<Tok> t = lex(text);
    std::vector<Frame> stack;
    std::vector<Tok> run;  // active code since the last directive, expanded at the next one
    for (size_t i = 0; i < t.size() && !failed();) {
      const State st = stack.empty() ? State::active : stack.back().state;
      if (t[i].s == "#" && t[i].bol) {
        size_t e = i + 1;
        while (e < t.size() && !t[e].bol) ++e;
        flush(run);
        directive(std::vector<Tok>(t.begin() + static_cast<long>(i) + 1, t.begin() + static_cast<long>(e)), t[i].line, index, name, stack);
        i = e;
        continue;
      }
      commit_guard();
      if (st == State::active) run.push_back(t[i]);
      else if (st == State::unknown) {
        const std::string where = "#" + stack.back().what + " at line " + std::to_string(stack.back().line) + " of " + name;
        if (t[i].s == "__kernel" || t[i].s == "kernel") give_up("a kernel at line " + std::to_string(t[i].line) + " is under " + where + ", which the reader cannot decide");
        if (!stack.back().marked) {
          out.tokens.push_back(marker(where + ", which the reader cannot decide"));
          out.assumed.push_back("code under " + where + " was not read");
          stack.back().marked = true;
        }
      }
      ++i;
    }
    flush(run);
    if (!stack.empty() && !failed())
      give_up("#" + stack.back().what + " at line " + std::to_string(stack.back().line) + " of " + name + " has no #endif");
    --depth_;
  }

 private:
  struct Frame {
    State parent = State::active, state = State::active;
    bool done = false;          // a branch was taken: the rest are not
    bool unknown_seen = false;  // a condition was undecided: this and the rest are unknown
    bool else_seen = false, marked = false;
    int line = 0;
    std::string what;  // the directive, for messages
  };

  std::span<const std::string> headers_;
  const IncludeMap* includes_;
  std::map<std::string, Macro> macros_;
  size_t reached_ = 0;  // tokens reach() looked at
  std::set<std::string> undefined_;  // #undef'd or -U'd, and not defined since: known to be undefined
  size_t produced_ = 0;
  int depth_ = 0;
  // `#ifndef X` with X taken as undefined: an include guard or a default when `#define X` follows
  // at once (the program defines X itself), else an assumption for the driver to confirm
  std::string guard_, guard_why_;

  void commit_guard() {
    if (!guard_.empty()) out.assumed.push_back(guard_why_);
    guard_.clear();
  }

  Decision defined(const std::string& n, const std::string& where) {
    if (auto it = macros_.find(n); it != macros_.end()) return it->second.kind == Macro::unknown ? Decision::unknown : Decision::yes;
    if (undefined_.count(n)) return Decision::no;
    if (driver_may_define(n)) return Decision::unknown;
    out.assumed.push_back(where + " takes " + n + " as undefined");
    return Decision::no;
  }

  void define(const std::vector<Tok>& d, const std::string& where) {
    if (d.empty() || !is_ident(d[0].s) || d[0].s == "defined") return give_up(where + ": #define of \"" + (d.empty() ? "" : d[0].s) + "\"");
    Macro m;
    if (d.size() > 1 && d[1].s == "(" && !d[1].gap) {
      m.kind = Macro::function;
      size_t close = 2;
      while (close < d.size() && d[close].s != ")") ++close;
      for (size_t i = close + 1; i < d.size(); ++i) m.body.push_back(d[i].s);
      m.pastes = std::find(m.body.begin(), m.body.end(), "##") != m.body.end();
    } else {
      for (size_t i = 1; i < d.size(); ++i) m.body.push_back(d[i].s);
      if (std::find(m.body.begin(), m.body.end(), "##") != m.body.end()) m.kind = Macro::opaque;
    }
    macros_[d[0].s] = std::move(m);
    undefined_.erase(d[0].s);
  }

  void directive(const std::vector<Tok>& d, int line, size_t index, const std::string& file, std::vector<Frame>& stack) {
    const std::string name = d.empty() ? "" : d[0].s;
    const std::string where = "#" + name + " at line " + std::to_string(line) + " of " + file;
    const std::vector<Tok> args(d.begin() + (d.empty() ? 0 : 1), d.end());
    if (!guard_.empty() && !(name == "define" && !args.empty() && args[0].s == guard_)) commit_guard();
    guard_.clear();
    const State st = stack.empty() ? State::active : stack.back().state;
    if (name == "if" || name == "ifdef" || name == "ifndef") {
      Frame f{st, st, true, false, false, false, line, name};
      if (st == State::active) {
        Decision r = name == "if" ? evaluate(args, where) : Decision::unknown;
        if (name != "if") {
          if (args.size() != 1 || !is_ident(args[0].s)) return give_up(where + " does not name one macro");
          const bool assumed = !macros_.count(args[0].s) && !undefined_.count(args[0].s) && !driver_may_define(args[0].s);
          r = defined(args[0].s, where);
          if (name == "ifndef" && r != Decision::unknown) r = r == Decision::yes ? Decision::no : Decision::yes;
          if (name == "ifndef" && assumed) {  // defined() noted it: keep it only if no #define X follows
            out.assumed.pop_back();
            guard_ = args[0].s;
            guard_why_ = where + " takes " + guard_ + " as undefined";
          }
        }
        f.state = r == Decision::yes ? State::active : r == Decision::no ? State::inactive : State::unknown;
        f.done = r == Decision::yes;
        f.unknown_seen = r == Decision::unknown;
      }
      stack.push_back(f);
    } else if (name == "elif" || name == "else") {
      if (stack.empty()) return give_up(where + " has no #if");
      Frame& f = stack.back();
      if (f.else_seen) return give_up(where + " follows #else");
      f.marked = false;
      f.what = name;
      f.line = line;
      if (f.parent != State::active) f.state = f.parent;
      else if (f.unknown_seen) f.state = State::unknown;
      else if (f.done) f.state = State::inactive;
      else {
        const Decision r = name == "else" ? Decision::yes : evaluate(args, where);
        f.state = r == Decision::yes ? State::active : r == Decision::no ? State::inactive : State::unknown;
        f.done = r == Decision::yes;
        f.unknown_seen = r == Decision::unknown;
      }
      f.else_seen = name == "else";
    } else if (name == "endif") {
      if (stack.empty()) return give_up(where + " has no #if");
      stack.pop_back();
    } else if (name == "elifdef" || name == "elifndef") {
      give_up(where + ": the reader does not know #" + name);
    } else if (st == State::inactive) {
    } else if (st == State::unknown) {  // whatever it does is unknown from here on
      if ((name == "define" || name == "undef") && !args.empty()) {
        macros_[args[0].s].kind = Macro::unknown;
        undefined_.erase(args[0].s);
        out.assumed.push_back(where + " is under an #if the reader cannot decide");
      } else if (name == "include") {
        give_up(where + " is under an #if the reader cannot decide");
      }
    } else if (name == "define") {
      define(args, where);
    } else if (name == "undef") {
      if (args.size() != 1 || !is_ident(args[0].s)) return give_up(where + " does not name one macro");
      macros_.erase(args[0].s);
      undefined_.insert(args[0].s);
    } else if (name == "include") {
      include(args, index, where);
    } else if (!(name.empty() || name == "pragma" || name == "error" || name == "warning" || name == "line" || name == "ident")) {
      give_up(where + ": the reader does not know this directive");
    }
  }

  void include(const std::vector<Tok>& args, size_t index, const std::string& where) {
    const std::string spelled = include_spelling(args);
    if (spelled.empty()) return give_up(where + " is computed by a macro");
    auto it = includes_ ? includes_->find({index, spelled}) : IncludeMap::const_iterator{};
    if (!includes_ || it == includes_->end() || it->second >= headers_.size())
      return give_up(where + ": the reader was not given the text of " + spelled);
    file(it->second + 1, headers_[it->second], spelled);
  }

  // Expands macro `m` into `out`; `hide` holds the macros being expanded, which are not expanded
  // again inside themselves (C11 6.10.3.4).
  void expand(const Macro& m, std::vector<std::string>& dst, std::vector<const std::string*>& hide) {
    if (hide.size() > 256) return give_up("macros nest more than 256 deep");
    for (size_t i = 0; i < m.body.size() && !failed(); ++i) {
      const std::string& w = m.body[i];
      if (++produced_ > kBudget) return give_up("its macros expand into more than " + std::to_string(kBudget) + " tokens");
      auto it = is_ident(w) ? macros_.find(w) : macros_.end();
      if (it == macros_.end() || std::any_of(hide.begin(), hide.end(), [&](const std::string* h) { return *h == w; })) {
        dst.push_back(w);
      } else if (it->second.kind == Macro::object) {
        hide.push_back(&it->first);
        expand(it->second, dst, hide);
        hide.pop_back();
      } else {
        const size_t from = i;
        if (it->second.kind == Macro::function) i = skip_call(m.body, i);
        dst.push_back(call_marker(it->first, it->second, m.body, from, i));
      }
    }
  }

  // Every identifier the expansion of a function-like macro's call toks[from, to] may name: its
  // arguments and its body, and what the macros among them expand to, transitively. False when
  // that cannot be known: a ## among them may paste any name, an undecided or opaque macro may
  // stand for anything; so is past kBudget tokens looked at for all calls (a program of many calls
  // of large macros).
  bool reach(const std::vector<std::string>& toks, size_t from, size_t to, std::vector<std::string>& names, std::set<std::string>& seen) {
    for (size_t i = from; i <= to && i < toks.size(); ++i) {
      const std::string& w = toks[i];
      if (w == "##" || ++reached_ > kBudget) return false;
      if (!is_ident(w) || !seen.insert(w).second) continue;
      names.push_back(w);
      auto it = macros_.find(w);
      if (it == macros_.end()) continue;
      const Macro& m = it->second;
      if (m.kind == Macro::opaque || m.kind == Macro::unknown || m.pastes) return false;
      if (!m.body.empty() && !reach(m.body, 0, m.body.size() - 1, names, seen)) return false;
    }
    return true;
  }

  // The marker standing for the call toks[from, to] of macro `m` (its name alone when to == from),
  // with the names it may reach after kReach when they are known (unknown_reach).
  std::string call_marker(const std::string& name, const Macro& m, const std::vector<std::string>& toks, size_t from, size_t to) {
    std::string s = what(name, m);
    std::vector<std::string> names;
    std::set<std::string> seen;
    if (m.kind != Macro::function || !reach(toks, from, to, names, seen)) return s;
    s += kReach;
    for (const std::string& n : names) s += n + " ";
    return s;
  }

  static std::string what(const std::string& name, const Macro& m) {
    return marker(m.kind == Macro::function ? "the function-like macro " + name
                  : m.kind == Macro::opaque ? "the macro " + name + ", which pastes tokens with ##"
                                            : "the macro " + name + ", which an #if the reader cannot decide defines or undefines");
  }

  // The index of the ")" closing a call's arguments when toks[at + 1] is "(", else `at`.
  template <class T>
  static size_t skip_call(const std::vector<T>& toks, size_t at, bool* open = nullptr) {
    auto str = [](const T& x) -> const std::string& {
      if constexpr (std::is_same_v<T, Tok>) return x.s;
      else return x;
    };
    if (at + 1 >= toks.size() || str(toks[at + 1]) != "(") return at;
    int depth = 0;
    for (size_t j = at + 1; j < toks.size(); ++j) {
      if (str(toks[j]) == "(") ++depth;
      else if (str(toks[j]) == ")" && --depth == 0) return j;
    }
    if (open) *open = true;
    return toks.size() - 1;
  }

  void flush(std::vector<Tok>& run) {
    std::vector<const std::string*> hide;
    for (size_t i = 0; i < run.size() && !failed(); ++i) {
      const std::string& w = run[i].s;
      auto it = is_ident(w) ? macros_.find(w) : macros_.end();
      if (it == macros_.end()) {
        out.tokens.push_back(w);
      } else if (it->second.kind == Macro::object) {
        hide.assign(1, &it->first);
        expand(it->second, out.tokens, hide);
      } else if (it->second.kind == Macro::function && (i + 1 >= run.size() || run[i + 1].s != "(")) {
        out.tokens.push_back(w);  // a function-like macro's name without a call is just a name
      } else {
        const size_t from = i;
        bool open = false;
        if (it->second.kind == Macro::function) i = skip_call(run, i, &open);
        std::vector<std::string> call;
        for (size_t j = from; j <= i; ++j) call.push_back(run[j].s);
        out.tokens.push_back(call_marker(it->first, it->second, call, 0, call.size() - 1));
        if (open) give_up("a call of the macro " + w + " at line " + std::to_string(run[i].line) + " goes on past a directive");
      }
    }
    run.clear();
  }

  Decision evaluate(const std::vector<Tok>& args, const std::string& where) {
    std::vector<std::string> x;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& w = args[i].s;
      if (w == "defined") {
        const bool paren = i + 1 < args.size() && args[i + 1].s == "(";
        const size_t at = i + (paren ? 2 : 1);
        if (at >= args.size() || !is_ident(args[at].s) || (paren && (at + 1 >= args.size() || args[at + 1].s != ")"))) return Decision::unknown;
        const Decision r = defined(args[at].s, where);
        if (r == Decision::unknown) return r;
        x.push_back(r == Decision::yes ? "1" : "0");
        i = at + (paren ? 1 : 0);
        continue;
      }
      auto it = is_ident(w) ? macros_.find(w) : macros_.end();
      if (it == macros_.end()) {
        x.push_back(w);
      } else if (it->second.kind != Macro::object) {
        return Decision::unknown;
      } else {
        std::vector<const std::string*> hide{&it->first};
        expand(it->second, x, hide);
        if (failed()) return Decision::unknown;
      }
    }
    for (std::string& w : x) {
      if (is_unknown(w) || w == "defined") return Decision::unknown;
      if (!is_ident(w)) continue;
      if (undefined_.count(w)) {
        w = "0";
        continue;
      }
      if (driver_may_define(w)) return Decision::unknown;
      out.assumed.push_back(where + " takes " + w + " as undefined (0)");
      w = "0";
    }
    Expr e{x};
    const Val v = e.cond(true);
    if (e.bad || e.i != x.size()) return Decision::unknown;
    return v.v ? Decision::yes : Decision::no;
  }
};

}  // namespace

std::vector<BuildOption> preprocessor_options(const std::string& options) {
  std::vector<std::string> w;
  for (size_t i = 0; i < options.size();) {
    size_t e = i;
    while (e < options.size() && !std::isspace(static_cast<unsigned char>(options[e]))) ++e;
    if (e > i) w.push_back(options.substr(i, e - i));
    i = e + 1;
  }
  std::vector<BuildOption> out;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i].size() < 2 || w[i][0] != '-' || (w[i][1] != 'D' && w[i][1] != 'U' && w[i][1] != 'I')) continue;
    const char flag = w[i][1];
    if (w[i].size() > 2) out.push_back({flag, w[i].substr(2), w[i]});
    else if (i + 1 < w.size()) {
      ++i;
      out.push_back({flag, w[i], w[i]});
    } else if (flag != 'I') {
      out.push_back({flag, "", w[i]});  // "-D" last: an empty name, refused where it is defined
    }
  }
  return out;
}

std::vector<IncludeDirective> include_directives(const std::string& text) {
  const std::vector<Tok> t = lex(text);
  // per open #if: whether the group being read is dead (no macro can make it live), and whether
  // an earlier branch of the chain is surely taken (then the rest are dead)
  struct Group {
    bool parent_dead, dead, taken;
  };
  std::vector<Group> stack;
  // a condition without names is decided whatever the macros; any name (`defined` included) is not
  auto decided = [](const std::vector<Tok>& args) -> Decision {
    std::vector<std::string> x;
    for (const Tok& k : args) {
      if (is_ident(k.s)) return Decision::unknown;
      x.push_back(k.s);
    }
    Expr e{x};
    const Val v = e.cond(true);
    if (e.bad || e.i != x.size()) return Decision::unknown;
    return v.v ? Decision::yes : Decision::no;
  };
  std::vector<IncludeDirective> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!(t[i].s == "#" && t[i].bol)) continue;
    size_t e = i + 1;
    while (e < t.size() && !t[e].bol) ++e;
    const std::string name = i + 1 < e ? t[i + 1].s : "";
    const std::vector<Tok> args(t.begin() + static_cast<long>(std::min(i + 2, e)), t.begin() + static_cast<long>(e));
    const bool dead = !stack.empty() && stack.back().dead;
    if (name == "if" || name == "ifdef" || name == "ifndef") {
      const Decision r = name == "if" ? decided(args) : Decision::unknown;
      stack.push_back({dead, dead || r == Decision::no, r == Decision::yes});
    } else if ((name == "elif" || name == "else") && !stack.empty()) {
      Group& g = stack.back();
      const Decision r = name == "else" ? Decision::yes : decided(args);
      g.dead = g.parent_dead || g.taken || r == Decision::no;
      g.taken = g.taken || (r == Decision::yes && !g.dead);
    } else if (name == "endif" && !stack.empty()) {
      stack.pop_back();
    } else if (name == "include" && !dead) {
      IncludeDirective d;
      d.line = t[i].line;
      const std::string spelled = include_spelling(args);
      if (spelled.empty()) {
        d.computed = true;
        for (const Tok& k : args) d.name += (d.name.empty() ? "" : " ") + k.s;
      } else {
        d.quoted = spelled[0] == '"';
        d.name = spelled.substr(1, spelled.size() - 2);
      }
      out.push_back(std::move(d));
    }
    i = e - 1;
  }
  return out;
}

Preprocessed preprocess(const std::string& source, std::span<const std::string> headers, const IncludeMap* includes,
                        const std::string& options) {
  Pp pp(headers, includes);
  pp.options(options);
  if (!pp.failed()) pp.file(0, source, "the source");
  if (pp.failed()) pp.out.tokens.clear();
  return std::move(pp.out);
}

bool unknown_reach(const std::string& tok, std::vector<std::string>& names) {
  names.clear();
  const size_t at = tok.find(kReach);
  if (!is_unknown(tok) || at == std::string::npos) return false;
  for (size_t i = at + 1; i < tok.size();) {
    const size_t end = tok.find(' ', i);
    if (end == std::string::npos) break;
    if (end > i) names.push_back(tok.substr(i, end - i));
    i = end + 1;
  }
  return true;
}

}  // namespace encore::detail
