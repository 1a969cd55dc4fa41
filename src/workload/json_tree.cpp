// The strict JSON reader: Boost.JSON's basic_parser with our own handler (see json_tree.hpp).
// This is the one translation unit that compiles Boost.JSON (header-only).
#include "workload/json_tree.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/src.hpp>
#include <unordered_set>

#include "encore/workload.hpp"

namespace encore::workload::detail {

namespace json = boost::json;

const char* kind_name(JNode::Kind k) {
  switch (k) {
    case JNode::Kind::null: return "null";
    case JNode::Kind::boolean: return "a boolean";
    case JNode::Kind::number: return "a number";
    case JNode::Kind::string: return "a string";
    case JNode::Kind::array: return "an array";
    case JNode::Kind::object: return "an object";
  }
  return "?";
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

namespace {

struct Frame {
  JNode node;
  std::string key;                      // pending key (objects)
  std::unordered_set<std::string> seen;  // keys so far (objects)
};

struct Handler {
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  std::vector<Frame> stack;
  JNode root;
  bool have_root = false;
  std::string text;        // string, key or number being assembled
  bool duplicate = false;  // a duplicate key stopped the parse; dup_path names it
  std::string dup_path;

  // The path of the value being parsed inside the first `frames` open containers.
  std::string path(size_t frames) const {
    std::string p;
    for (size_t k = 0; k < frames && k < stack.size(); ++k) {
      const Frame& f = stack[k];
      p = f.node.kind == JNode::Kind::object ? child(p, f.key) : index(p, f.node.elems.size());
    }
    return p;
  }
  void put(JNode&& n) {
    if (stack.empty()) {
      root = std::move(n);
      have_root = true;
      return;
    }
    Frame& f = stack.back();
    if (f.node.kind == JNode::Kind::object) f.node.members.emplace_back(std::move(f.key), std::move(n));
    else f.node.elems.push_back(std::move(n));
  }
  bool number(JNode::Num k, int64_t i, uint64_t u, double d, json::string_view s) {
    JNode n;
    n.kind = JNode::Kind::number;
    n.num = k;
    n.i = i;
    n.u = u;
    n.d = d;
    n.str = std::move(text);
    n.str.append(s.data(), s.size());
    text.clear();
    put(std::move(n));
    return true;
  }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) {
    stack.emplace_back();
    stack.back().node.kind = JNode::Kind::array;
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) {
    JNode n = std::move(stack.back().node);
    stack.pop_back();
    put(std::move(n));
    return true;
  }
  bool on_object_begin(json::error_code&) {
    stack.emplace_back();
    stack.back().node.kind = JNode::Kind::object;
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code& ec) { return on_array_end(n, ec); }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    text.append(s.data(), s.size());
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    JNode n;
    n.kind = JNode::Kind::string;
    n.str = std::move(text);
    n.str.append(s.data(), s.size());
    text.clear();
    put(std::move(n));
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    text.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    text.append(s.data(), s.size());
    Frame& f = stack.back();
    if (!f.seen.insert(text).second) {
      duplicate = true;
      dup_path = child(path(stack.size() - 1), text);
      ec = json::error::syntax;  // stops the parser; dup_key says why
      return false;
    }
    f.key = std::move(text);
    text.clear();
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    text.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, json::string_view s, json::error_code&) {
    return number(JNode::Num::i64, i, static_cast<uint64_t>(i), static_cast<double>(i), s);
  }
  bool on_uint64(uint64_t u, json::string_view s, json::error_code&) {
    return number(JNode::Num::u64, 0, u, static_cast<double>(u), s);
  }
  bool on_double(double d, json::string_view s, json::error_code&) { return number(JNode::Num::f64, 0, 0, d, s); }
  bool on_bool(bool b, json::error_code&) {
    JNode n;
    n.kind = JNode::Kind::boolean;
    n.b = b;
    put(std::move(n));
    return true;
  }
  bool on_null(json::error_code&) {
    put(JNode{});
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

JNode parse_json(std::string_view text) {
  json::parse_options opt;
  opt.max_depth = 64;
  json::basic_parser<Handler> p(opt);
  json::error_code ec;
  size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (!ec && n < text.size()) ec = json::error::extra_data;
  if (ec || !p.done()) {
    Handler& h = p.handler();
    std::string where = h.path(h.stack.size());
    size_t line = 1, col = 1;
    for (size_t k = 0; k < n && k < text.size(); ++k) {
      if (text[k] == '\n') ++line, col = 1;
      else ++col;
    }
    std::string pos = "line " + std::to_string(line) + ", column " + std::to_string(col);
    if (h.duplicate) throw WorkloadError(h.dup_path, "duplicate key (" + pos + ")");
    if (!ec) ec = json::error::incomplete;
    throw WorkloadError(where, "invalid JSON at " + pos + ": " + ec.message());
  }
  return std::move(p.handler().root);
}

}  // namespace encore::workload::detail
