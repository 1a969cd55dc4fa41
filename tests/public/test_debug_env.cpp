// What the debug variables print, each in a process of its own (the level is read once per
// process; tests/meson.build): a plain DEBUG prints nothing (test "debug-alias"), and
// ENCORE_DEBUG=2 names native items and a step's decisions (test "debug-items").
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

}  // namespace

// Engines and build systems set DEBUG for their own reasons: encore reads only ENCORE_DEBUG.
TEST(DebugAlias, PlainDebugPrintsNothing) {
  if (std::getenv("ENCORE_DEBUG")) GTEST_SKIP() << "runs without ENCORE_DEBUG (meson test debug-alias sets DEBUG=2)";
  Env& e = null_env();
  Buffer x = make(e.dev, seq(16, 0.f)), y = e.dev.alloc<float>(16);
  auto work = [&] {
    e.dev.launch(e.axpb, {16}, {}, x, y, 2.f, 1.f);
    encore::Capture cap;
    cap.add_input(x);
    e.dev.launch(e.axpb, {16}, {}, x, y, 2.f, 1.f);
    cap.end()();
  };
  testing::internal::CaptureStderr();
  work();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  LogCapture logs;  // a sink sees every message encore sends: none below ENCORE_DEBUG=1
  work();
  EXPECT_EQ(logs.text(), "");
}

// ENCORE_DEBUG=2 prints one line per item run; a native item's line names it (it used to say
// "upload").
TEST(DebugItems, NativeItemsAreNamed) {
  if (!env_is("ENCORE_DEBUG", "2")) GTEST_SKIP() << "runs with ENCORE_DEBUG=2 (meson test debug-items)";
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 0.f)), y = e.dev.alloc<float>(64);
  const size_t n = x.nbytes();
  encore::Capture cap;
  cap.add_input(x);
  encore::opencl::enqueue_native(
      e.dev,
      [n](cl_command_queue q, std::span<const cl_mem> m) {
        if (clEnqueueCopyBuffer(q, m[0], m[1], 0, 0, n, 0, nullptr, nullptr) != CL_SUCCESS) throw encore::DeviceError("copy failed");
      },
      {encore::in(x), encore::out(y)}, "lib_copy");
  encore::ExecutionUnit unit = cap.end();
  LogCapture logs;
  unit();
  e.dev.synchronize();
  const std::string text = logs.text();
  EXPECT_TRUE(contains(text, "native lib_copy")) << text;
  EXPECT_FALSE(contains(text, "upload")) << text;
}

// ENCORE_DEBUG=2 also prints what each replay of a step that decides chose (encore/control.hpp).
TEST(DebugItems, DecisionsArePrinted) {
  if (!env_is("ENCORE_DEBUG", "2")) GTEST_SKIP() << "runs with ENCORE_DEBUG=2 (meson test debug-items)";
  Env& e = null_env();
  encore::Variable d{"d", 0, 1}, k{"k", 0, 3}, live{"live", 0, 16};
  Buffer x = make(e.dev, seq(16, 0.f)), y = e.dev.alloc<float>(16);
  encore::TinyJit jit([&](encore::BoundVar, encore::BoundVar) {
    e.dev.host({x}, {live}, [live](encore::HostCtx& c) { c.set(live, 5); }, "count");
    e.dev.when(d, [&] { e.dev.launch(e.axpb, {live}, {}, x, y, 2.f, 1.f); }, {}, "pick");
    e.dev.repeat(k, [&] { e.dev.launch(e.axpb, {16}, {}, x, y, 2.f, 1.f); }, "more");
  });
  jit(d.bind(0), k.bind(1));
  jit(d.bind(0), k.bind(1));
  LogCapture logs;
  jit(d.bind(1), k.bind(2));
  const std::string text = logs.text();
  EXPECT_TRUE(contains(text, "host count") && contains(text, "live = 5")) << text;
  EXPECT_TRUE(contains(text, "branch pick") && contains(text, "then (d = 1)")) << text;
  EXPECT_TRUE(contains(text, "loop more") && contains(text, "2 iterations")) << text;
}
