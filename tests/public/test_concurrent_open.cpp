// Opening and listing devices from many threads at once in a process where OpenCL was never touched
// (issue 28 item 6): PoCL's first enumeration is not thread-safe, and encore enumerated outside its
// registry lock, so a bad device name, ENCORE_DEVICE=GPU with open(), or Device::list() on several
// threads at once crashed inside the driver. CI runs ConcurrentOpen.* under ThreadSanitizer.
//
// The scenario needs a fresh process: by the time a test body runs, GoogleTest has enumerated the
// devices (parameterised suites list them). So the test starts this same binary again with
// CONCURRENT_OPEN_CHILD=<mode> set, and this file's static initialiser runs the scenario before
// main (nothing in the test binary touches OpenCL during static initialisation) and exits with its
// result, never reaching GoogleTest.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"

extern char** environ;

namespace {

constexpr int kThreads = 16;

// What one child thread does; "" when it went as expected, else what went wrong.
std::string one_call(const std::string& mode, int t, size_t* listed) {
  auto expect_unknown_name = [](const char* name) -> std::string {
    try {
      if (name) encore::Device::open(name);
      else encore::Device::open();
      return std::string("opening \"") + (name ? name : "") + "\" succeeded";
    } catch (const encore::DeviceError& e) {
      return std::strstr(e.what(), "unknown device name") ? "" : std::string("unexpected message: ") + e.what();
    }
  };
  std::string m = mode;
  if (m == "mixed") {
    static const char* kinds[] = {"bad-name", "env-gpu", "list"};
    m = kinds[t % 3];
  }
  try {
    if (m == "bad-name") return expect_unknown_name("no-such-device");
    if (m == "env-gpu") return expect_unknown_name(nullptr);  // ENCORE_DEVICE=GPU in the child's environment
    if (m == "list") {
      *listed = encore::Device::list().size();
      return "";
    }
    if (m == "open") {
      encore::Device d = encore::Device::open();
      return d ? "" : "Device::open() gave a null device";
    }
  } catch (const encore::DeviceError& e) {
    if (m == "open" && std::strstr(e.what(), "no OpenCL platform or device found")) return "";  // a machine without OpenCL
    return std::string("unexpected exception: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception: ") + e.what();
  }
  return "unknown mode " + mode;
}

// The child: kThreads threads released at once on the same call. Exits 0 when every call went as
// expected (and all lists agree), 1 otherwise.
[[noreturn]] void run_child(const std::string& mode) {
  std::atomic<int> ready{0}, done{0};
  std::atomic<bool> go{false};
  std::vector<std::string> errors(kThreads);
  std::vector<size_t> listed(kThreads, SIZE_MAX);
  for (int t = 0; t < kThreads; ++t)
    std::thread([&, t] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      errors[t] = one_call(mode, t, &listed[t]);
      ++done;
      // never returns: a thread started before main that exits trips AddressSanitizer's own
      // teardown of its signal stack ("unable to unmap"); _exit below ends them all
      for (;;) pause();
    }).detach();
  while (ready.load() != kThreads) std::this_thread::yield();
  go = true;
  while (done.load() != kThreads) std::this_thread::yield();
  int failed = 0;
  size_t count = SIZE_MAX;
  for (int t = 0; t < kThreads; ++t) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "thread %d: %s\n", t, errors[t].c_str());
      ++failed;
    }
    if (listed[t] == SIZE_MAX) continue;
    if (count != SIZE_MAX && listed[t] != count) {
      std::fprintf(stderr, "thread %d listed %zu devices, another %zu\n", t, listed[t], count);
      ++failed;
    }
    count = listed[t];
  }
  std::fflush(stderr);
  _exit(failed ? 1 : 0);  // no static destructors, no GoogleTest: this process only ran the scenario
}

const bool child_ran = [] {
  if (const char* mode = std::getenv("CONCURRENT_OPEN_CHILD")) run_child(mode);
  return false;
}();

// Runs this binary again as a child in `mode` (with `extra` added to its environment); returns its
// wait status.
int spawn_child(const std::string& mode, const std::vector<std::string>& extra) {
  std::vector<std::string> env_text{"CONCURRENT_OPEN_CHILD=" + mode};
  env_text.insert(env_text.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (std::string& s : env_text) envp.push_back(s.data());
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "CONCURRENT_OPEN_CHILD=", 22) != 0 && std::strncmp(*e, "ENCORE_DEVICE=", 14) != 0) envp.push_back(*e);
  envp.push_back(nullptr);
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

std::string describe(int status) {
  if (status == -1) return "could not be started";
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  return "ended with status " + std::to_string(status);
}

}  // namespace

// Each way into enumeration, from 16 threads at once in a fresh process, several times (the race
// inside PoCL does not show every time).
TEST(ConcurrentOpen, FirstOpensAndListsFromManyThreads) {
  ASSERT_FALSE(child_ran);
  struct Case {
    const char* mode;
    std::vector<std::string> env;
  };
  const Case cases[] = {
      {"bad-name", {}}, {"env-gpu", {"ENCORE_DEVICE=GPU"}}, {"list", {}}, {"mixed", {"ENCORE_DEVICE=GPU"}}, {"open", {}},
  };
  for (int round = 0; round < 3; ++round)
    for (const Case& c : cases) {
      SCOPED_TRACE(c.mode);
      const int status = spawn_child(c.mode, c.env);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": the child " << describe(status);
    }
}
