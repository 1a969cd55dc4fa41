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

struct Preprocessed {
  std::vector<std::string> tokens;  // the program after preprocessing, markers included
  std::string undecidable;          // non-empty: nothing can be read (why)
  // Decisions the reader took on an assumption the driver should confirm (a name taken as
  // undefined that the program never defines, a group left unknown): empty when none.
  std::vector<std::string> assumed;
};

Preprocessed preprocess(const std::string& source, std::span<const std::string> headers, const IncludeMap* includes,
                        const std::string& options);

}  // namespace encore::detail
