#pragma once
// The part of the C preprocessor the kernel reader needs to see the program the compiler sees:
// #define/#undef (object-like macros expanded, painted-blue rule, a budget on what expansion makes),
// #if/#ifdef/#ifndef/#elif/#else/#endif over integer constant expressions, #include of the files
// the program cache found, -D/-U options. It never guesses: a condition it cannot decide (a name
// the driver may predefine, a function-like macro in #if) leaves its whole group *unknown*: no
// branch is read, a marker token stands where its code was, and what it #defines or #undefs is
// unknown afterwards; the signature reader refuses any parameter, typedef or struct a marker
// touches. What cannot be followed at all (an #include it was not given, an unterminated #if, the
// expansion budget) makes the whole program undecidable.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace encore::detail {

// The #include directives of a program, resolved: (file, spelling) -> index into the headers.
// File 0 is the source, file i + 1 is headers[i]; spelling is "\"name\"" or "<name>".
using IncludeMap = std::map<std::pair<size_t, std::string>, size_t>;

// A token that stands for something the preprocessor could not follow; the text after the first
// byte says what ("function-like macro F", "#if at line 3").
inline constexpr char kUnknown = '\x01';
inline bool is_unknown(const std::string& tok) { return !tok.empty() && tok[0] == kUnknown; }
// A marker for a call of a function-like macro carries, after kReach, every identifier its expansion
// may name (its arguments, its body, what the macros among them expand to), space-separated; none
// when a ## or a macro the reader cannot follow is among them (the call may name anything).
inline constexpr char kReach = '\x02';
// What a marker stands for, for messages ("the function-like macro F").
inline std::string unknown_what(const std::string& tok) {
  const size_t reach = tok.find(kReach);
  return tok.substr(1, reach == std::string::npos ? std::string::npos : reach - 1);
}
// The names marker `tok` may reach: false when it may reach any name.
bool unknown_reach(const std::string& tok, std::vector<std::string>& names);

struct Preprocessed {
  std::vector<std::string> tokens;  // the program after preprocessing, markers included
  std::string undecidable;          // non-empty: nothing can be read (why)
  // Decisions the reader took on an assumption the driver should confirm (a name taken as
  // undefined that the program never defines, a group left unknown): empty when none.
  std::vector<std::string> assumed;
};

Preprocessed preprocess(const std::string& source, std::span<const std::string> headers, const IncludeMap* includes,
                        const std::string& options);

// One #include directive of a file: the name between the quotes or the angle brackets;
// `computed` when a macro names the file (`name` is then the directive's text).
struct IncludeDirective {
  std::string name;
  bool quoted = false, computed = false;
  int line = 0;
};
// The #include directives of one file that preprocessing may reach, read by the preprocessor's
// lexer (the program cache's scan, src/core/program_cache.cpp): none inside a comment, none in a
// group that no macro can make live (`#if 0`, the `#else` of `#if 1`: conditions without names,
// evaluated as #if evaluates them). Every other group counts, so the files found are a superset
// of those the compiler reads.
std::vector<IncludeDirective> include_directives(const std::string& text);

// One preprocessor option of a build-option string, as the driver reads it: `flag` 'D', 'U' or
// 'I', `value` what follows it in the same word or, when the word is the flag alone, the next word
// ("-DN=4", "-D N=4", "-Iinc", "-I inc"); `word` the word the value came from (for messages).
// The one reader of -D, -U and -I: the preprocessor's macros and the program cache's include
// search read the same options the same way.
struct BuildOption {
  char flag;
  std::string value, word;
};
std::vector<BuildOption> preprocessor_options(const std::string& options);

}  // namespace encore::detail
