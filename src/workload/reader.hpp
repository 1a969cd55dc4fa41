#pragma once
// Typed, path-aware access to a JNode: every failure is a WorkloadError naming the JSON path, and an
// object reader rejects the keys nobody asked for (a typo must not pass silently).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "encore/workload.hpp"
#include "workload/json_tree.hpp"

namespace encore::workload::detail {

[[noreturn]] void fail(const std::string& path, const std::string& msg);

class Obj {
 public:
  Obj(const JNode& n, std::string path);
  const JNode* opt(std::string_view key);  // nullptr when absent
  const JNode& req(std::string_view key);
  bool has(std::string_view key) const;
  // Throws on the first key not taken by opt/req; `allowed` lists them for the message.
  void done(std::string_view allowed);
  std::string at(std::string_view key) const { return child(path_, key); }
  const std::string& path() const { return path_; }
  const JNode& node() const { return n_; }

 private:
  const JNode& n_;
  std::string path_;
  std::vector<bool> taken_;
};

const std::string& as_string(const JNode& n, const std::string& path);
const std::vector<JNode>& as_array(const JNode& n, const std::string& path);
Number as_number(const JNode& n, const std::string& path);
double as_double(const JNode& n, const std::string& path);
// An integer (1e3 and 2.0 count) within [lo, hi].
int64_t as_int(const JNode& n, const std::string& path, int64_t lo, int64_t hi);
uint64_t as_uint(const JNode& n, const std::string& path, uint64_t hi);
// Any integer, taken mod 2^64 exactly (from the source text, so 2^70 + 5 gives 5).
uint64_t as_int_mod64(const JNode& n, const std::string& path);
// `s` as a JSON string (core/json_text.hpp): file names and keys in messages, and the saver's strings.
std::string quote(std::string_view s);

}  // namespace encore::workload::detail
