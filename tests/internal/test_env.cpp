// The environment, read in one place (src/core/env.cpp): each variable's parsing and precedence. The
// variables read once per process (ENCORE_DEBUG, ENCORE_PROFILE) are tested in processes of their
// own (tests/meson.build: debug-notes, debug-alias, debug-items).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/env.hpp"

namespace {

// Sets (or unsets) variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv& set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return *this;
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

namespace env = encore::detail::env;

}  // namespace

TEST(Env, CacheFolderPrecedence) {
  ScopedEnv e;
  e.set("ENCORE_CACHE", "/tmp/x-cache").set("XDG_CACHE_HOME", "/tmp/xdg").set("HOME", "/tmp/home");
  EXPECT_EQ(env::cache_dir(), "/tmp/x-cache");
  e.set("ENCORE_CACHE", "0");
  EXPECT_EQ(env::cache_dir(), "") << "0 switches the disk cache off";
  e.set("ENCORE_CACHE", "");
  EXPECT_EQ(env::cache_dir(), "/tmp/xdg/encore");
  e.set("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(env::cache_dir(), "/tmp/home/.cache/encore");
  e.set("HOME", nullptr);
  EXPECT_EQ(env::cache_dir(), "");
}

TEST(Env, JitVerifyDeviceAndProfiling) {
  ScopedEnv e;
  e.set("ENCORE_JIT", nullptr).set("ENCORE_VERIFY", nullptr).set("ENCORE_DEVICE", nullptr).set("ENCORE_PROFILING", nullptr);
  EXPECT_TRUE(env::jit());
  EXPECT_EQ(env::verify(), 0);
  EXPECT_EQ(env::device(), "");
  e.set("ENCORE_JIT", "0").set("ENCORE_VERIFY", "5").set("ENCORE_DEVICE", "NULL");
  EXPECT_FALSE(env::jit());
  EXPECT_EQ(env::verify(), 5);
  EXPECT_EQ(env::device(), "NULL");
  e.set("ENCORE_JIT", "1");
  EXPECT_TRUE(env::jit());
  for (const char* v : {"abc", "-3", ""}) {
    e.set("ENCORE_VERIFY", v);
    EXPECT_EQ(env::verify(), 0) << v;
  }
  if (env::profile().empty()) {  // ENCORE_PROFILE (read once) switches profiling on by itself
    EXPECT_FALSE(env::profiling());
    e.set("ENCORE_PROFILING", "0");
    EXPECT_FALSE(env::profiling());
  }
  e.set("ENCORE_PROFILING", "1");
  EXPECT_TRUE(env::profiling());
}

// The short alias is gone: a plain DEBUG (set by engines and build systems for their own
// reasons) changes nothing. meson runs this with DEBUG=2 set (test "debug-alias").
TEST(Env, PlainDebugIsNotEncoresDebug) {
  if (std::getenv("ENCORE_DEBUG")) GTEST_SKIP() << "runs without ENCORE_DEBUG";
  EXPECT_EQ(env::debug(), 0);
}
