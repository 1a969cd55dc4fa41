// Host spans as TinyJit inputs (issue 19 item 6): a std::span<const T> argument is a host input,
// and a copyin from it inside the step replays from the span passed to that call, not from the
// bytes seen at capture. Its size is part of the call's signature. A copyin from anything else
// stays frozen at capture. Also the explicit form (Capture::add_host_input, bind_host_input).
// Eager == replay on NULL (copies and uploads move real bytes there) and OpenCL. Public headers only.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

// y = (host bytes, uploaded) + x: the upload and the copy are visible on NULL too (its kernels
// compute nothing, on both paths alike).
auto host_step(Env& e) {
  return [&e](const Buffer& x, std::span<const float> h) {
    Buffer t = e.dev.alloc<float>(h.size());
    t.copyin(h);
    Buffer y = e.dev.alloc<float>(h.size());
    e.dev.copy(y, t);
    e.dev.launch(e.accum, {h.size()}, {}, y, x);
    return y;
  };
}

// Rewrites v in place (its bytes stay where they are: a span of it stays valid).
void fill_seq(std::vector<float>& v, float start, float step = 1.f) {
  const std::vector<float> s = seq(v.size(), start, step);
  std::copy(s.begin(), s.end(), v.begin());
}

// A new buffer on e's device with v copied in (in a step: a copyin item).
template <class T> Buffer uploaded(Env& e, std::span<const T> v) {
  Buffer b = e.dev.alloc<T>(v.size());
  b.copyin(v);
  return b;
}

JitOptions opts() {
  JitOptions o;
  o.verify = 0;
  return o;
}

class HostInputs : public OnDevices {};

}  // namespace

TEST_P(HostInputs, ReplayUploadsEachCallsSpan) {
  Env& e = env();
  auto f = host_step(e);
  TinyJit jit(f, opts());
  constexpr size_t n = 64;
  Buffer x = make(e.dev, seq(n, 1.f, 0.5f));
  std::vector<float> h(n);  // one vector, rewritten in place: the same address every call
  for (int call = 0; call < 12; ++call) {
    fill_seq(h, 100.f * static_cast<float>(call), 1.f);
    std::vector<float> want = get(f(x, std::span<const float>(h)));
    std::vector<float> got = get(jit(x, std::span<const float>(h)));
    EXPECT_EQ(got, want) << "call " << call;
  }
  EXPECT_EQ(jit.calls(), 12u);
  const encore::ExecutionUnit& u = jit.unit();
  ASSERT_TRUE(u);
  EXPECT_EQ(u.num_host_inputs(), 1u);
  EXPECT_EQ(u.stats().items_pruned, 0u) << "the upload from the host input was pruned as one-time";
}

TEST_P(HostInputs, ANewSpanEveryCall) {
  Env& e = env();
  auto f = host_step(e);
  TinyJit jit(f, opts());
  constexpr size_t n = 32;
  Buffer x = make(e.dev, seq(n, -3.f, 0.25f));
  for (int call = 0; call < 8; ++call) {
    std::vector<float> h = seq(n, 7.f * static_cast<float>(call), -1.f);  // another address each call
    std::vector<float> want = get(f(x, std::span<const float>(h)));
    EXPECT_EQ(get(jit(x, std::span<const float>(h))), want) << "call " << call;
  }
}

// The run copies the span while it enqueues: the caller may overwrite it right after the call,
// before the device has run the replay, with every replay of the in-flight window in the queue.
TEST_P(HostInputs, SpanMayChangeOnceTheCallReturns) {
  Env& e = env();
  auto f = host_step(e);
  for (uint32_t in_flight : {3u, 0u}) {  // 0: unbounded, the blocking upload
    JitOptions o = opts();
    o.unit.max_in_flight = in_flight;
    TinyJit jit(f, o);
    constexpr size_t n = 256;
    Buffer x = make(e.dev, seq(n, 0.f, 1.f));
    std::vector<float> h(n);
    std::vector<Buffer> outs;
    std::vector<std::vector<float>> want;
    for (int call = 0; call < 10; ++call) {
      fill_seq(h, 1000.f * static_cast<float>(call), 2.f);
      want.push_back(get(f(x, std::span<const float>(h))));
      Buffer y = jit(x, std::span<const float>(h));
      Buffer keep = e.dev.alloc<float>(n);
      e.dev.copy(keep, y);  // queued after the replay: read once all calls are queued
      outs.push_back(keep);
      std::fill(h.begin(), h.end(), -1.f);  // scribble over the span before the device ran
    }
    for (size_t i = 0; i < outs.size(); ++i) EXPECT_EQ(get(outs[i]), want[i]) << "max_in_flight " << in_flight << ", call " << i;
  }
}

// A copyin from part of the span, into part of a buffer: the same bytes of that call's span.
TEST_P(HostInputs, SubspanIntoAnOffset) {
  Env& e = env();
  constexpr size_t n = 48;
  auto f = [&e](const Buffer& x, std::span<const float> h) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.copy(y, x);
    y.copyin(h.subspan(8, 16), 20);  // y[20..36) = h[8..24)
    return y;
  };
  TinyJit jit(f, opts());
  Buffer x = make(e.dev, seq(n, 5.f, 1.f));
  for (int call = 0; call < 6; ++call) {
    std::vector<float> h = seq(n, -50.f * static_cast<float>(call), 3.f);
    std::vector<float> want = get(f(x, std::span<const float>(h)));
    EXPECT_EQ(get(jit(x, std::span<const float>(h))), want) << "call " << call;
    EXPECT_EQ(want[20], h[8]);
  }
}

// Two spans of other element types, and integer indices.
TEST_P(HostInputs, SeveralSpans) {
  Env& e = env();
  auto f = [&e](std::span<const int> a, std::span<const double> b) { return std::pair{uploaded(e, a), uploaded(e, b)}; };
  TinyJit jit(f, opts());
  for (int call = 0; call < 6; ++call) {
    std::vector<int> a(10);
    std::vector<double> b(3);
    for (int i = 0; i < 10; ++i) a[static_cast<size_t>(i)] = call * 100 + i;
    for (int i = 0; i < 3; ++i) b[static_cast<size_t>(i)] = call + 0.5 * i;
    auto [ya, yb] = jit(std::span<const int>(a), std::span<const double>(b));
    EXPECT_EQ(ya.copyout<int>(), a) << "call " << call;
    EXPECT_EQ(yb.copyout<double>(), b) << "call " << call;
  }
  EXPECT_EQ(jit.unit().num_host_inputs(), 2u);
}

// Another size is another signature (its own capture); with max_units 1 it is a JitError naming
// the host input and both sizes, and the jit stays usable.
TEST_P(HostInputs, SpanOfAnotherSize) {
  Env& e = env();
  auto f = host_step(e);
  {
    TinyJit jit(f, opts());
    Buffer x64 = make(e.dev, seq(64, 0.f)), x60 = make(e.dev, seq(60, 0.f));
    std::vector<float> h64 = seq(64, 1.f), h60 = seq(60, 2.f);
    for (int call = 0; call < 6; ++call) {
      EXPECT_EQ(get(jit(x64, std::span<const float>(h64))), get(f(x64, std::span<const float>(h64))));
      EXPECT_EQ(get(jit(x60, std::span<const float>(h60))), get(f(x60, std::span<const float>(h60))));
    }
    auto units = jit.units();
    ASSERT_EQ(units.size(), 2u);
    EXPECT_NE(units[0].signature.find("host span[60 x 4 bytes]"), std::string::npos) << units[0].signature;
  }
  {
    JitOptions o = opts();
    o.max_units = 1;
    TinyJit jit(f, o);
    Buffer x = make(e.dev, seq(64, 0.f));
    std::vector<float> h = seq(64, 1.f), shorter = seq(60, 1.f);
    for (int call = 0; call < 3; ++call) jit(x, std::span<const float>(h));
    // only the span differs: the buffer still matches
    expect_jit_error([&] { jit(x, std::span<const float>(shorter)); }, {"host input 0", "captured 256 bytes", "given 240 bytes"});
    h = seq(64, 9.f);
    EXPECT_EQ(get(jit(x, std::span<const float>(h))), get(f(x, std::span<const float>(h))));
  }
}

// A copyin whose source is NOT a host input is frozen at capture (documented in jit.hpp): here a
// closure vector changed after the capture. Replay keeps uploading the capture's bytes.
TEST_P(HostInputs, CopyinFromElsewhereStaysFrozen) {
  Env& e = env();
  std::vector<float> closure = seq(16, 1.f);
  auto f = [&e, &closure](std::span<const float> h) {
    return std::pair{uploaded(e, h), uploaded(e, std::span<const float>(closure))};  // braces: uploaded in this order
  };
  TinyJit jit(f, opts());
  std::vector<float> h = seq(16, 0.f);
  for (int call = 0; call < 2; ++call) jit(std::span<const float>(h));
  closure = seq(16, 500.f);
  h = seq(16, 300.f);
  auto [a, b] = jit(std::span<const float>(h));
  EXPECT_EQ(get(a), h);                  // from the host input: this call's bytes
  EXPECT_EQ(get(b), seq(16, 1.f));       // from elsewhere: the capture's bytes
  EXPECT_NE(jit.unit().items()[1].describe().find("upload 64 bytes ->"), std::string::npos) << jit.unit().items()[1].describe();
  EXPECT_NE(jit.unit().items()[0].describe().find("from host input 0"), std::string::npos) << jit.unit().items()[0].describe();
}

// A copy of the span made on the host is not the span: its bytes change between call 0 and call 1,
// and the capture check says so and names the fix.
TEST_P(HostInputs, CopyOfTheSpanIsCaughtAtCapture) {
  Env& e = env();
  auto f = [&e](std::span<const float> h) {
    std::vector<float> local(h.begin(), h.end());
    Buffer a = e.dev.alloc<float>(h.size());
    a.copyin(local);
    return a;
  };
  TinyJit jit(f, opts());
  std::vector<float> h = seq(8, 0.f);
  jit(std::span<const float>(h));
  h = seq(8, 1.f);
  expect_jit_error([&] { jit(std::span<const float>(h)); }, {"uploaded host data", "std::span<const T>"});
  // usable after the failed check: it starts over, and the span itself works
}

// Call 0 copies in from the span, call 1 from elsewhere: the sources differ, named at capture.
TEST_P(HostInputs, SourceSwitchIsCaughtAtCapture) {
  Env& e = env();
  int call = 0;
  std::vector<float> other = seq(8, 0.f);
  auto f = [&e, &call, &other](std::span<const float> h) {
    Buffer a = e.dev.alloc<float>(h.size());
    if (call++ == 0) a.copyin(h);
    else a.copyin(other);
    return a;
  };
  TinyJit jit(f, opts());
  std::vector<float> h = seq(8, 0.f);
  jit(std::span<const float>(h));
  expect_jit_error([&] { jit(std::span<const float>(h)); }, {"copyin source", "host input 0 at byte offset 0", "bytes recorded at capture"});
}

TEST_P(HostInputs, DisabledJitRunsEagerly) {
  Env& e = env();
  auto f = host_step(e);
  JitOptions o = opts();
  o.enabled = false;
  TinyJit jit(f, o);
  Buffer x = make(e.dev, seq(16, 1.f));
  for (int call = 0; call < 4; ++call) {
    std::vector<float> h = seq(16, static_cast<float>(call));
    EXPECT_EQ(get(jit(x, std::span<const float>(h))), get(f(x, std::span<const float>(h))));
  }
  EXPECT_FALSE(jit.unit());
}

TEST_P(HostInputs, VerifyModeAgrees) {
  Env& e = env();
  auto f = host_step(e);
  JitOptions o = opts();
  o.verify = 4;
  TinyJit jit(f, o);
  Buffer x = make(e.dev, seq(32, 1.f));
  for (int call = 0; call < 8; ++call) {
    std::vector<float> h = seq(32, 10.f * static_cast<float>(call));
    EXPECT_NO_THROW(jit(x, std::span<const float>(h))) << "call " << call;
  }
}

// The explicit form: Capture::add_host_input, ExecutionUnit::bind_host_input.
TEST_P(HostInputs, ExplicitCapture) {
  Env& e = env();
  std::vector<float> h = seq(24, 1.f);
  Buffer y = e.dev.alloc<float>(24);
  encore::Capture cap;
  size_t slot = cap.add_host_input(std::span<const float>(h));
  y.copyin(h);
  encore::ExecutionUnit unit = cap.end();
  ASSERT_EQ(slot, 0u);
  ASSERT_EQ(unit.num_host_inputs(), 1u);
  h = seq(24, 40.f);
  unit();  // not bound yet: the bytes the span held at end()
  EXPECT_EQ(get(y), seq(24, 1.f));
  std::vector<float> next = seq(24, -7.f);
  unit.bind_host_input(0, std::span<const float>(next))();
  EXPECT_EQ(get(y), next);
  std::vector<float> shorter(23);
  expect_jit_error([&] { unit.bind_host_input(0, std::span<const float>(shorter)); }, {"host input 0", "captured 96 bytes", "given 92 bytes"});
  expect_jit_error([&] { unit.bind_host_input(1, std::span<const float>(next)); }, {"host input slot 1", "1 host inputs"});
  fill_seq(next, 3.f);  // in place: `next` is still bound, and its bytes are read at each run
  unit();
  EXPECT_EQ(get(y), next);
  // concatenation keeps both units' host inputs, each starting from its capture's bytes
  encore::ExecutionUnit both = unit + unit;
  EXPECT_EQ(both.num_host_inputs(), 2u);
  std::vector<float> last = seq(24, 77.f);
  both.bind_host_input(1, std::span<const float>(last))();
  EXPECT_EQ(get(y), last);
}

ON_NULL_AND_CL(HostInputs);
