#pragma once
// Shared helpers for the foundation tests: device parameterisation, unique kernel sources,
// temporary cache directories, ArgumentError message checks.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.hpp"

namespace encore_test {

// The one guard for "no OpenCL device": tests that need one skip without it, unless
// ENCORE_REQUIRE_CL=1 (CI sets it), where a missing or broken driver fails every such test.
inline bool have_cl() {
  static const bool has = !encore::Device::list().empty();
  static const bool required = [] {
    const char* v = std::getenv("ENCORE_REQUIRE_CL");
    return v && *v && std::string(v) != "0";
  }();
  if (!has && required) ADD_FAILURE() << "ENCORE_REQUIRE_CL is set but no OpenCL device was found (is the ICD/PoCL installed?)";
  return has;
}

// Collects encore's log messages (encore/log.hpp) while alive.
class LogCapture {
 public:
  LogCapture() {
    encore::set_log_sink([this](encore::LogLevel l, std::string_view m) {
      static const char* names[] = {"error", "warning", "info", "debug"};
      std::lock_guard<std::mutex> lock(mu_);
      text_ += std::string(names[static_cast<int>(l)]) + ": " + std::string(m) + "\n";
    });
  }
  ~LogCapture() { encore::set_log_sink({}); }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::string text_;
};

// "CL:0", "CL:1", ... for every OpenCL device present.
inline std::vector<std::string> cl_device_ids() {
  std::vector<std::string> ids;
  for (const encore::DeviceInfo& d : encore::Device::list()) ids.push_back(d.id);
  return ids;
}

// OpenCL devices, or the single placeholder "none" (tests skip on it) when there is no OpenCL:
// a parameterised suite then still has one instance, and it skips cleanly.
inline std::vector<std::string> cl_params() {
  auto ids = cl_device_ids();
  if (ids.empty() && std::getenv("ENCORE_REQUIRE_CL")) ids.push_back("required");  // fails in SetUp
  if (ids.empty()) ids.push_back("none");
  return ids;
}

// OpenCL devices plus NULL: for behaviour that does not depend on kernels really running.
inline std::vector<std::string> all_params() {
  auto ids = cl_device_ids();
  ids.push_back("NULL");
  return ids;
}

inline std::string param_name(const ::testing::TestParamInfo<std::string>& i) {
  std::string s = i.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// A token unique to this process and call: put it in a comment to force a cache miss.
inline std::string unique_token() {
  static const uint64_t seed = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  static std::atomic<uint64_t> n{0};
  return std::to_string(seed) + "_" + std::to_string(n++);
}

// The message of the ArgumentError that f() throws, "" when it throws none (other exceptions
// pass through): expect_has(argument_error([&] { dev.launch(k, {4}, {}, wrong); }), {"x", "f32"}).
template <class F> std::string argument_error(F&& f) {
  try {
    f();
  } catch (const encore::ArgumentError& e) {
    return e.what();
  }
  return "";
}

// Every one of `words` appears in `text`.
inline void expect_has(const std::string& text, const std::vector<std::string>& words) {
  for (const std::string& w : words) EXPECT_NE(text.find(w), std::string::npos) << "'" << w << "' missing from: " << text;
}

// Fixture over a device id; skips when the id is the "none" placeholder.
class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "none") GTEST_SKIP() << "no OpenCL device on this machine";
    if (GetParam() == "required") {
      have_cl();  // records the failure
      GTEST_SKIP();
    }
    dev = encore::Device::open(GetParam());
  }
  bool is_cl() const { return !dev.is_null(); }
  encore::Device dev;
};

// Sets ENCORE_CACHE to a fresh temporary directory for the scope, restores it after.
class ScopedCacheDir {
 public:
  ScopedCacheDir() {
    if (const char* old = std::getenv("ENCORE_CACHE")) {
      had_old_ = true;
      old_ = old;
    }
    path_ = std::filesystem::temp_directory_path() / ("encore-test-cache-" + unique_token());
    std::filesystem::create_directories(path_);
    setenv("ENCORE_CACHE", path_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (had_old_) setenv("ENCORE_CACHE", old_.c_str(), 1);
    else unsetenv("ENCORE_CACHE");
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
  bool had_old_ = false;
  std::string old_;
};

}  // namespace encore_test
