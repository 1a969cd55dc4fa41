// Split-phase native calls (the collectives' form) as a begin item and a finish item placed by the
// plan: on replay the begin runs at the call's place, items that do not touch its buffers run before
// its finish, the finish runs just before the first item that does (or at the end), finishes keep
// the order of the begins, and a replay that fails part way cancels what it began. On NULL, with
// native calls that log what runs.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "core/native_call.hpp"

using encore::Buffer;
using encore::TinyJit;

namespace {

struct Log {
  std::vector<std::string> lines;
  bool fail = false;  // the next "boom" call throws
};

struct Logged final : encore::NativeCall {
  Logged(const encore::Device& d, std::shared_ptr<Log> l, std::string n, bool s) : log(std::move(l)), name(std::move(n)), is_split(s) {
    dev = d.shared_impl();
  }
  void run(encore::detail::DeviceImpl&, encore::detail::NativeMem* const*, size_t) const override {
    if (name == "boom" && log->fail) throw std::runtime_error("boom");
    log->lines.push_back("run " + name);
  }
  bool split() const override { return is_split; }
  void begin(encore::detail::DeviceImpl&, encore::detail::NativeMem* const*, size_t) const override { log->lines.push_back("begin " + name); }
  void finish(encore::detail::DeviceImpl&, encore::detail::NativeMem* const*, size_t) const override { log->lines.push_back("finish " + name); }
  void cancel(encore::detail::DeviceImpl&) const noexcept override { log->lines.push_back("cancel " + name); }
  std::shared_ptr<Log> log;
  std::string name;
  bool is_split;
};

struct Fixture {
  encore::Device dev = encore::Device::open("NULL");
  std::shared_ptr<Log> log = std::make_shared<Log>();
  Buffer a = dev.alloc<float>(64), b = dev.alloc<float>(64), c = dev.alloc<float>(64);
  void call(const std::string& name, bool split, const Buffer& buf) {
    encore::detail::run_native(dev, std::make_shared<Logged>(dev, log, name, split), {encore::inout(buf)}, name);
  }
  // the log of one replay (calls 0 and 1 run eagerly: split calls run whole there)
  template <class J> std::vector<std::string> replay(J& jit, const Buffer& x) {
    jit(x);
    jit(x);
    log->lines.clear();
    jit(x);
    return log->lines;
  }
};

using Lines = std::vector<std::string>;

}  // namespace

TEST(SplitItems, IndependentWorkRunsBeforeTheFinishAndTheReaderAfter) {
  Fixture f;
  TinyJit jit([&](const Buffer& x) {
    f.call("S", true, f.a);      // split: begins here
    f.call("other", false, f.b); // does not touch a: runs before S finishes
    f.call("reader", false, f.a);
    return x;
  });
  EXPECT_EQ(f.replay(jit, f.c), (Lines{"begin S", "run other", "finish S", "run reader"}));
}

TEST(SplitItems, FinishesKeepTheOrderOfTheBegins) {
  Fixture f;
  TinyJit jit([&](const Buffer& x) {
    f.call("S1", true, f.a);
    f.call("S2", true, f.b);
    f.call("readb", false, f.b);  // needs S2 only, but S1 began first and finishes first
    f.call("readc", false, f.c);
    return x;
  });
  EXPECT_EQ(f.replay(jit, f.c), (Lines{"begin S1", "begin S2", "finish S1", "finish S2", "run readb", "run readc"}));
}

TEST(SplitItems, WithNoLaterUseItFinishesAtTheEnd) {
  Fixture f;
  TinyJit jit([&](const Buffer& x) {
    f.call("S", true, f.a);
    f.call("other", false, f.b);
    return x;
  });
  EXPECT_EQ(f.replay(jit, f.c), (Lines{"begin S", "run other", "finish S"}));
}

TEST(SplitItems, AFailedReplayCancelsWhatItBeganAndTheNextReplayRunsWhole) {
  Fixture f;
  TinyJit jit([&](const Buffer& x) {
    f.call("S", true, f.a);
    f.call("boom", false, f.b);
    f.call("reader", false, f.a);
    return x;
  });
  jit(f.c);
  jit(f.c);
  f.log->lines.clear();
  f.log->fail = true;
  EXPECT_THROW(jit(f.c), std::runtime_error);
  EXPECT_EQ(f.log->lines, (Lines{"begin S", "cancel S"}));
  f.log->fail = false;
  f.log->lines.clear();
  jit(f.c);
  EXPECT_EQ(f.log->lines, (Lines{"begin S", "run boom", "finish S", "run reader"}));
}
