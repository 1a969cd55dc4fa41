// Size::parse: the text form of launch sizes (what Size::str writes), for workload files and the
// C API: integers, variable names, + - * / (floor), parentheses and min/max/ceil_div/floor_div calls.
#include <cctype>
#include <string>

#include "encore/error.hpp"
#include "encore/variable.hpp"
#include "core/size_ops.hpp"

namespace encore {

namespace {

class Parser {
 public:
  Parser(std::string_view t, const std::vector<Variable>& vars) : t_(t), vars_(vars) {}

  Size all() {
    Size s = sum();
    skip();
    if (p_ != t_.size()) fail("an operator or the end");
    return s;
  }

 private:
  std::string_view t_;
  const std::vector<Variable>& vars_;
  size_t p_ = 0;
  int nest_ = 0;

  [[noreturn]] void fail(const std::string& expected) const {
    std::string found = p_ < t_.size() ? "'" + std::string(1, t_[p_]) + "'" : "the end";
    throw ArgumentError("launch size \"" + std::string(t_) + "\": expected " + expected + " at position " + std::to_string(p_) +
                        ", found " + found);
  }
  void skip() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool eat(char c) {
    skip();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("'") + c + "'");
  }

  Size sum() {
    Size s = product();
    for (;;) {
      if (eat('+')) s = s + product();
      else if (eat('-')) s = s - product();
      else return s;
    }
  }
  Size product() {
    Size s = factor();
    for (;;) {
      if (eat('*')) s = s * factor();
      else if (eat('/')) s = s / factor();
      else return s;
    }
  }
  Size factor() {
    if (++nest_ > 2 * detail::kSizeMaxDepth) fail("less nesting");
    Size s = factor_inner();
    --nest_;
    return s;
  }
  Size factor_inner() {
    skip();
    if (eat('-')) {
      skip();
      if (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) return Size(number(true));  // INT64_MIN is a literal
      return -factor();
    }
    if (eat('(')) {
      Size s = sum();
      expect(')');
      return s;
    }
    if (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) return Size(number(false));
    if (p_ < t_.size() && (std::isalpha(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) {
      const size_t at = p_;
      while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) ++p_;
      const std::string_view id = t_.substr(at, p_ - at);
      skip();
      if (p_ < t_.size() && t_[p_] == '(') {
        Size::Op op = id == "min" ? Size::Op::min : id == "max" ? Size::Op::max : id == "ceil_div" ? Size::Op::ceil_div
                      : id == "floor_div"                      ? Size::Op::floor_div
                                                               : Size::Op::leaf;
        if (op == Size::Op::leaf) {
          p_ = at;
          fail("min, max, ceil_div or floor_div before '('");
        }
        ++p_;
        Size a = sum();
        expect(',');
        Size b = sum();
        expect(')');
        return Size::make(op, a, b);
      }
      const Variable* found = nullptr;
      for (const Variable& v : vars_)
        if (v.name() == id) {
          if (found && !(*found == v)) {
            p_ = at;
            fail("a name that one variable has (two variables are named \"" + std::string(id) + "\")");
          }
          found = &v;
        }
      if (!found) {
        p_ = at;
        std::string names;
        for (const Variable& v : vars_) names += (names.empty() ? "" : ", ") + v.name();
        fail("a variable (one of: " + (names.empty() ? std::string("none given") : names) + "), got \"" + std::string(id) + "\"");
      }
      return Size(*found);
    }
    fail("a number, a variable, '(' or '-'");
  }
  int64_t number(bool negative) {
    const size_t at = p_;
    uint64_t v = 0;
    while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) {
      const uint64_t digit = static_cast<uint64_t>(t_[p_] - '0');
      if (v > (UINT64_MAX - digit) / 10) v = UINT64_MAX;
      else v = v * 10 + digit;
      ++p_;
    }
    const uint64_t limit = negative ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX);
    if (v > limit) {
      p_ = at;
      fail("an integer that fits int64");
    }
    return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  }
};

}  // namespace

Size Size::parse(std::string_view text, const std::vector<Variable>& vars) { return Parser(text, vars).all(); }

}  // namespace encore
