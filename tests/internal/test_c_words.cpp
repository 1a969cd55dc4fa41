// The C API's vocabulary (src/capi/c_words.hpp, issue 26 item 6) and ENCORE_LOG's parsing (item 7).
// Every C++ phrase of the table still occurs in the library's sources (a message edited without its
// row would reach C callers in C++ again), every rewrite leaves no C++ spelling, and a message with
// no C++ phrase passes unchanged. tests/capi/test_c_words.c triggers the errors through the C API.
#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "capi/c_words.hpp"
#include "core/env.hpp"

namespace {

namespace fs = std::filesystem;

// Adjacent string literals joined, as the compiler joins them: "... host span "\n  "argument ..."
// reads "... host span argument ...".
std::string joined(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') {
      size_t j = i + 1;
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i + 1 && j < s.size() && s[j] == '"') {
        i = j;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string library_sources() {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(ENCORE_TEST_DATA) / ".." / "src")) {
    const fs::path& p = e.path();
    if (!e.is_regular_file() || p.filename() == "c_words.cpp" || (p.extension() != ".cpp" && p.extension() != ".hpp")) continue;
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    all += joined(s.str());
  }
  return all;
}

const char* kCxxSpellings[] = {"::", ".bind(", "std::span", "std::", "DType::", "buf.as("};

}  // namespace

TEST(CWords, EveryPhraseStillOccursInTheSources) {
  const std::string src = library_sources();
  ASSERT_GT(src.size(), 100000u);
  for (const encore::capi::CPhrase& p : encore::capi::c_phrases()) {
    std::string cxx(p.cxx);
    const size_t t = cxx.find("{t}");
    // the literal parts around a dtype: the source builds the message around the name
    const std::string head = cxx.substr(0, t), tail = t == std::string::npos ? "" : cxx.substr(t + 3);
    EXPECT_NE(src.find(head), std::string::npos) << "no message in src/ says \"" << head << "\" any more: update c_words.cpp";
    if (tail.size() > 1) {
      EXPECT_NE(src.find(tail), std::string::npos) << "no message in src/ says \"" << tail << "\"";
    }
  }
}

TEST(CWords, RewritesLeaveNoCxxSpelling) {
  for (const encore::capi::CPhrase& p : encore::capi::c_phrases()) {
    std::string cxx(p.cxx);
    if (size_t t = cxx.find("{t}"); t != std::string::npos) cxx.replace(t, 3, "f16");
    const std::string c = encore::capi::in_c_words("x: " + cxx + " y");
    for (const char* bad : kCxxSpellings) EXPECT_EQ(c.find(bad), std::string::npos) << p.cxx << " -> " << c;
    EXPECT_EQ(c.find("{t}"), std::string::npos) << c;
  }
}

TEST(CWords, Examples) {
  using encore::capi::in_c_words;
  EXPECT_EQ(in_c_words("reinterpret these bytes on purpose with buf.as(DType::bf16)"),
            "reinterpret these bytes on purpose with encore_buffer_as(buf, ENCORE_BF16, &view)");
  EXPECT_EQ(in_c_words("Capture::end: no device work"), "no device work");
  EXPECT_EQ(in_c_words("a DType:: alone, DType::u8 twice: DType::u8"), "a DType:: alone, ENCORE_U8 twice: ENCORE_U8");
  EXPECT_EQ(in_c_words("nothing to do here"), "nothing to do here");
  EXPECT_EQ(in_c_words(""), "");
}

TEST(LogSetting, Parse) {
  using encore::detail::env::parse_log;
  EXPECT_EQ(parse_log("", 0).level, 1);  // warnings by default
  EXPECT_FALSE(parse_log("", 0).set);
  EXPECT_EQ(parse_log("", 1).level, 2);  // ENCORE_DEBUG=1 raises the default
  EXPECT_EQ(parse_log("", 2).level, 3);
  EXPECT_EQ(parse_log("off", 2).level, -1);  // an explicit level wins
  EXPECT_TRUE(parse_log("off", 0).set);
  EXPECT_EQ(parse_log("error", 0).level, 0);
  EXPECT_EQ(parse_log("warn", 2).level, 1);
  EXPECT_EQ(parse_log("info", 0).level, 2);
  EXPECT_EQ(parse_log("debug", 0).level, 3);
  EXPECT_FALSE(parse_log("loud", 0).valid);
  EXPECT_EQ(parse_log("loud", 0).level, 1);
  EXPECT_FALSE(parse_log("loud", 0).set);
}
