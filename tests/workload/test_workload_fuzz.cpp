// A seeded mutation fuzzer for workload files: random byte-level and JSON-level mutations of the
// bundled workloads must parse (and then validate on the NULL device) or fail with a clean
// WorkloadError / encore::Error (the exit-2 path) — never crash, hang or throw anything else.
// Bounded in count and time so it fits CI under ASan.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "encore/workload.hpp"
#include "workload/json_tree.hpp"

namespace wl = encore::workload;
using wl::detail::JNode;

namespace {

std::string serialize(const JNode& n) {
  auto str = [](const std::string& s) {
    std::string r = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') r += '\\', r += c;
      else if (c == '\n') r += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20) r += "\\u0020";
      else r += c;
    }
    return r + "\"";
  };
  switch (n.kind) {
    case JNode::Kind::null: return "null";
    case JNode::Kind::boolean: return n.b ? "true" : "false";
    case JNode::Kind::number: return n.str;
    case JNode::Kind::string: return str(n.str);
    case JNode::Kind::array: {
      std::string r = "[";
      for (size_t i = 0; i < n.elems.size(); ++i) r += (i ? "," : "") + serialize(n.elems[i]);
      return r + "]";
    }
    case JNode::Kind::object: {
      std::string r = "{";
      for (size_t i = 0; i < n.members.size(); ++i) r += (i ? "," : "") + str(n.members[i].first) + ":" + serialize(n.members[i].second);
      return r + "}";
    }
  }
  return "";
}

struct Mutator {
  std::mt19937_64 rng;
  explicit Mutator(uint64_t seed) : rng(seed) {}
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0; }

  JNode random_value() {
    static const char* texts[] = {"0", "-1", "1", "64", "3.5", "1e999", "-0", "18446744073709551616", "4294967297", "1e-320", "65536", "128"};
    static const char* strings[] = {"", "f16", "i64", "u8", "zeros", "input", "state", "const", "temp", "output", "in", "out",
                                    "p.addk", "k.scale_add", "x", "s", "t", "n", "lr", "../x", "heat.diffuse"};
    JNode n;
    switch (pick(6)) {
      case 0: break;  // null
      case 1: n.kind = JNode::Kind::boolean; n.b = pick(2); break;
      case 2: {
        std::string t = texts[pick(std::size(texts))];
        try {
          n = wl::detail::parse_json(t);
        } catch (const encore::WorkloadError&) {
        }
        break;
      }
      case 3: n.kind = JNode::Kind::string; n.str = strings[pick(std::size(strings))]; break;
      case 4: n.kind = JNode::Kind::array; if (pick(2)) n.elems.push_back(random_value()); break;
      default: n.kind = JNode::Kind::object;
    }
    return n;
  }

  // A random node of the tree (pre-order, uniform over a sample walk).
  JNode* random_node(JNode& root) {
    JNode* cur = &root;
    for (int depth = 0; depth < 8; ++depth) {
      size_t kids = cur->kind == JNode::Kind::object ? cur->members.size() : cur->kind == JNode::Kind::array ? cur->elems.size() : 0;
      if (!kids || pick(3) == 0) break;
      size_t k = pick(kids);
      cur = cur->kind == JNode::Kind::object ? &cur->members[k].second : &cur->elems[k];
    }
    return cur;
  }

  std::string structural(const std::string& text) {
    JNode root = wl::detail::parse_json(text);
    int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      JNode* n = random_node(root);
      switch (pick(6)) {
        case 0: *n = random_value(); break;
        case 1:
          if (n->kind == JNode::Kind::object && !n->members.empty()) n->members.erase(n->members.begin() + static_cast<long>(pick(n->members.size())));
          else if (n->kind == JNode::Kind::array && !n->elems.empty()) n->elems.erase(n->elems.begin() + static_cast<long>(pick(n->elems.size())));
          break;
        case 2:  // duplicate a member (a duplicate key) or an element
          if (n->kind == JNode::Kind::object && !n->members.empty()) n->members.push_back(n->members[pick(n->members.size())]);
          else if (n->kind == JNode::Kind::array && !n->elems.empty()) n->elems.push_back(n->elems[pick(n->elems.size())]);
          break;
        case 3:  // rename a key
          if (n->kind == JNode::Kind::object && !n->members.empty()) n->members[pick(n->members.size())].first += "x";
          break;
        case 4:
          if (n->kind == JNode::Kind::object) n->members.emplace_back("extra", random_value());
          else if (n->kind == JNode::Kind::array) n->elems.push_back(random_value());
          break;
        default:
          if (n->kind == JNode::Kind::number) {
            std::string t = std::to_string(static_cast<long long>(pick(1 << 20)) - 1000);
            *n = wl::detail::parse_json(t);
          }
      }
    }
    return serialize(root);
  }

  std::string bytes(std::string s) {
    static const std::string alphabet = "{}[]\":,0123456789-.eE \t\nnultrf\\x\x01\xff";
    int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = pick(s.size());
      switch (pick(4)) {
        case 0: s[at] = alphabet[pick(alphabet.size())]; break;
        case 1: s.erase(at, 1 + pick(8)); break;
        case 2: s.insert(at, s.substr(pick(s.size()), 1 + pick(16))); break;
        default: s.insert(at, std::string(1, alphabet[pick(alphabet.size())]));
      }
    }
    return s;
  }
};

std::vector<std::pair<std::filesystem::path, std::string>> corpus() {
  std::vector<std::pair<std::filesystem::path, std::string>> out;
  for (const char* dir : {"/workload/data", "/../bench/workloads"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(ENCORE_TEST_DATA) + dir))
      if (e.path().extension() == ".json") {
        std::ifstream f(e.path());
        std::stringstream ss;
        ss << f.rdbuf();
        out.emplace_back(e.path().parent_path(), ss.str());
      }
  return out;
}

}  // namespace

TEST(WorkloadFuzz, MutationsFailCleanly) {
  auto files = corpus();
  ASSERT_GE(files.size(), 4u);
  encore::Device null = encore::Device::open("NULL");
  Mutator m(0x5eed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  int runs = 0, valid = 0;
  for (; runs < 10000 && std::chrono::steady_clock::now() < deadline; ++runs) {
    const auto& [dir, text] = files[m.pick(files.size())];
    std::string doc;
    try {
      doc = m.pick(2) ? m.structural(text) : m.bytes(text);
    } catch (const encore::WorkloadError&) {
      continue;  // an invalid corpus file cannot be mutated structurally
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      wl::Workload w = wl::parse(doc, dir);
      wl::validate(w, null);
      ++valid;
    } catch (const encore::WorkloadError& e) {
      EXPECT_NE(std::string(e.what()), "") << doc;
    } catch (const encore::Error& e) {
      // a device-level error from validation is also the clean exit-2 path
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-encore exception " << e.what() << " for:\n" << doc;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)) << "slow input:\n" << doc;
  }
  RecordProperty("mutations", runs);
  RecordProperty("valid", valid);
  EXPECT_GT(runs, 100);
}
