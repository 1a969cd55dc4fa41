#pragma once
// What the workload harness tests share: encore-bench's main run in this process with its output
// captured, the test data folder, fresh temporary folders, whole files, one-spot edits of a
// workload's text, and the check that a workload is refused with a WorkloadError at a JSON path.
//   BenchRun r = bench({"check", kData + "small.json", "--device", "NULL"});
//   EXPECT_EQ(r.rc, 0) << r.err;
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "encore/workload.hpp"
#include "workload/cli.hpp"

namespace encore_test {

// The bundled test workloads (tests/workload/data), with a trailing slash.
inline const std::string kData = std::string(ENCORE_TEST_DATA) + "/workload/data/";

struct BenchRun {
  int rc;
  std::string out, err;  // what it printed to stdout and to stderr
};

// Runs `encore-bench <args...>` through bench_main; `adjust` edits the run options it builds.
inline BenchRun bench(std::vector<std::string> args, const std::function<void(encore::workload::RunOptions&)>& adjust = {}) {
  args.insert(args.begin(), "encore-bench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = encore::workload::bench_main(static_cast<int>(argv.size()), argv.data(), adjust);
  std::string out = testing::internal::GetCapturedStdout();
  return {rc, out, testing::internal::GetCapturedStderr()};
}

// The exit code of bench(args); `printed` gets stdout followed by stderr (for failure messages).
inline int bench(std::vector<std::string> args, std::string* printed) {
  BenchRun r = bench(std::move(args));
  *printed = r.out + r.err;
  return r.rc;
}

// An empty folder of its own under the test temp dir, named after `prefix`, `tag` and this process
// (and a counter, so one tag can be asked for twice). Removed when the process exits, whether or not
// the test that asked for it got to remove it (a failed assertion returns early).
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& tag) {
  static struct Made {
    std::mutex mu;
    std::vector<std::filesystem::path> dirs;
    const pid_t owner = ::getpid();  // a forked child that exits leaves its parent's folders alone
    ~Made() {
      std::error_code ec;
      if (::getpid() == owner)
        for (const std::filesystem::path& d : dirs) std::filesystem::remove_all(d, ec);
    }
  } made;
  static std::atomic<int> n{0};
  std::filesystem::path p = std::filesystem::path(testing::TempDir()) /
                            (prefix + "_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.push_back(p);
  return p;
}

inline std::vector<unsigned char> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// `text` with its first `from` replaced by `to`; a `from` that is not there is a test failure (the
// edit the test meant did not happen).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Runs `f` (which parses, and maybe validates, a workload) and expects a WorkloadError whose path
// is `path` and whose message contains `msg`. Returns the message ("" when nothing was thrown).
template <class F> std::string expect_workload_error(F&& f, const std::string& path, const std::string& msg) {
  try {
    f();
    ADD_FAILURE() << "no WorkloadError; expected one at " << path << ": " << msg;
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

}  // namespace encore_test
