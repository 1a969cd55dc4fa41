#pragma once
// The one JSON string escaper: the trace (src/trace/profile.cpp) and the workload files
// (src/workload/) both write JSON. Header-only, because the workload library sees encore's public
// API only and links none of libencore's hidden symbols.
//   out += json_quoted(name);  // "\"kernel \\\"add\\\"\""
#include <string>
#include <string_view>

namespace encore::detail {

// `s` as the inside of a JSON string: '"' and '\' escaped, newline, tab and carriage return as
// \n \t \r (kernel sources stay readable), any other control byte as \u00XX.
inline void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
}

// `s` as a JSON string, quotes included.
inline std::string json_quoted(std::string_view s) {
  std::string r = "\"";
  append_json_escaped(r, s);
  return r + '"';
}

}  // namespace encore::detail
