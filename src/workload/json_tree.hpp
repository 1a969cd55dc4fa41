#pragma once
// A strict JSON document tree for workload files. Boost.JSON's parse() keeps the last of two equal
// keys silently; this tree is built by our own basic_parser handler, which rejects duplicates and
// remembers where it was, so every error can name its JSON path. Numbers keep their source text so
// integers outside 64 bits (seeds are taken mod 2^64) stay exact.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace encore::workload::detail {

struct JNode {
  enum class Kind : uint8_t { null, boolean, number, string, array, object };
  enum class Num : uint8_t { i64, u64, f64 };
  Kind kind = Kind::null;
  Num num = Num::i64;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string str;  // a string's value, or a number's source text
  std::vector<std::pair<std::string, JNode>> members;  // object, in file order
  std::vector<JNode> elems;                             // array
};

const char* kind_name(JNode::Kind k);

// Parses a whole document; throws WorkloadError naming the path (and line/column) of the first
// syntax error or duplicate key. Nesting deeper than 64 levels is an error (bounded recursion).
JNode parse_json(std::string_view text);

// Path helpers: "" is the top level; keys join with '.', indices as [i].
std::string child(const std::string& path, std::string_view key);
std::string index(const std::string& path, size_t i);

}  // namespace encore::workload::detail
