// A TinyJit's units by input signature: finding the call's, dropping the least recently used, the
// warnings about signatures that never replay, and the jit's lock.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "encore/jit.hpp"
#include "core/device_impl.hpp"
#include "trace/trace.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

namespace {

// One part of a call's signature: an input buffer, a Variable passed, a host span or a key.
struct SigPart {
  enum Kind : uint8_t { buffer, view, variable, host_span, key };
  const void* what = nullptr;  // buffers: the device; Variables: the variable
  uint64_t count = 0;          // buffers: elements; host spans: elements; Variables: 1 for a float one; keys: the value
  uint8_t elem = 0;            // buffers: the dtype; host spans: bytes per element
  Kind kind = buffer;
  bool operator==(const SigPart&) const = default;
};

SigPart part_of(const Buffer& b) {
  const BufferImpl* i = b.impl();
  return i ? SigPart{i->dev.get(), i->count, static_cast<uint8_t>(i->dtype), i->base ? SigPart::view : SigPart::buffer} : SigPart{};
}
SigPart part_of(const BoundVar& v) { return SigPart{v.var.state(), v.var.is_float() ? 1u : 0u, 0, SigPart::variable}; }
SigPart part_of(const HostSpan& h) { return SigPart{nullptr, h.count, h.elem, SigPart::host_span}; }
SigPart part_of(int64_t key) { return SigPart{nullptr, static_cast<uint64_t>(key), 0, SigPart::key}; }

size_t parts(const CallArgs& a) { return a.buffers.size() + a.vars.size() + a.hosts.size() + a.keys.size(); }

// `a`'s signature into `out` (reused: no allocation once it has grown).
void signature_of(const CallArgs& a, std::vector<SigPart>& out) {
  out.clear();
  out.reserve(parts(a));
  for (const Buffer& b : a.buffers) out.push_back(part_of(b));
  for (const BoundVar& v : a.vars) out.push_back(part_of(v));
  for (const HostSpan& h : a.hosts) out.push_back(part_of(h));
  for (int64_t k : a.keys) out.push_back(part_of(k));
}

// Whether `a`'s signature is `sig`, without writing one (the common call: the last call's).
bool has_signature(const CallArgs& a, const std::vector<SigPart>& sig) {
  if (sig.size() != parts(a)) return false;
  const SigPart* p = sig.data();
  for (const Buffer& b : a.buffers)
    if (!(*p++ == part_of(b))) return false;
  for (const BoundVar& v : a.vars)
    if (!(*p++ == part_of(v))) return false;
  for (const HostSpan& h : a.hosts)
    if (!(*p++ == part_of(h))) return false;
  for (int64_t k : a.keys)
    if (!(*p++ == part_of(k))) return false;
  return true;
}

std::string describe(const std::vector<SigPart>& sig) {
  std::string s;
  for (const SigPart& p : sig) {
    if (!s.empty()) s += ", ";
    switch (p.kind) {
      case SigPart::variable: s += std::string(p.count ? "float " : "") + "variable"; break;
      case SigPart::host_span: s += "host span[" + std::to_string(p.count) + " x " + std::to_string(p.elem) + " bytes]"; break;
      case SigPart::key: s += "key " + std::to_string(static_cast<int64_t>(p.count)); break;
      case SigPart::buffer:
      case SigPart::view:
        if (!p.what) s += "null buffer";
        else s += std::string(name(static_cast<DType>(p.elem))) + "[" + std::to_string(p.count) + "]" + (p.kind == SigPart::view ? " view" : "") +
                  " on " + static_cast<const DeviceImpl*>(p.what)->info.id;
        break;
    }
  }
  return s.empty() ? "no inputs" : s;
}

// One input signature's unit.
struct Slot {
  Slot(const JitOptions& o, std::shared_ptr<ArenaPool> pool) : core(o, std::move(pool)) {}
  JitCore core;
  std::vector<SigPart> sig;
  uint64_t last_used = 0;
};

}  // namespace

// A jit's lock: the thread holding it is known, so a step calling its own jit is an error, not a
// deadlock.
struct JitUnits::Lock {
  std::mutex mu;
  std::atomic<std::thread::id> holder{};
};

struct JitUnits::State {
  JitOptions opt;
  std::shared_ptr<ArenaPool> pool = std::make_shared<ArenaPool>();  // the units' shared arenas
  Lock lock;
  std::vector<std::unique_ptr<Slot>> slots;
  Slot* last = nullptr;
  std::vector<SigPart> sig, probe;  // the new call's signature; find's and drop's (capacity reused)
  uint64_t calls = 0, tick = 0;
  // the call numbers (1-based) of the last max_units + 1 new signatures, and the replay count at each
  std::vector<uint64_t> capture_calls, capture_replays;
  size_t capture_next = 0;
  uint32_t new_streak = 0;  // calls in a row that brought a new signature
  bool warned_never = false, warned_thrash = false, warned_drop = false;  // each cause warns once

  explicit State(const JitOptions& o) : opt(o), capture_calls(o.max_units + 1, 0), capture_replays(o.max_units + 1, 0) {}

  Slot& touch(Slot& s) {
    s.last_used = tick;
    last = &s;
    return s;
  }
  // The slot that serves `sig`, or null (a new signature). max_units 1 keeps the one slot: its unit
  // refuses other inputs with a JitError naming what differs.
  Slot* find(const std::vector<SigPart>& want) const {
    if (opt.max_units <= 1) return slots.empty() ? nullptr : slots[0].get();
    for (const auto& s : slots)
      if (s->sig == want) return s.get();
    return nullptr;
  }
  Slot& add(uint64_t replays);
  bool warn_signatures(uint64_t replays);
  void drop_least_recent(bool warned_now);
};

// A new signature: noted for the warnings, past max_units the least recently used dropped.
Slot& JitUnits::State::add(uint64_t replays) {
  ++new_streak;
  capture_calls[capture_next] = calls;
  capture_replays[capture_next] = replays;
  capture_next = (capture_next + 1) % capture_calls.size();
  const bool warned_now = warn_signatures(replays);  // before the drop, whose note it then covers
  if (!slots.empty() && slots.size() >= opt.max_units) drop_least_recent(warned_now);
  slots.push_back(std::make_unique<Slot>(opt, pool));
  slots.back()->sig = sig;
  return touch(*slots.back());
}

void JitUnits::State::drop_least_recent(bool warned_now) {
  auto lru = std::min_element(slots.begin(), slots.end(), [](const auto& x, const auto& y) { return x->last_used < y->last_used; });
  const uint64_t had = (*lru)->core.calls();
  const bool warn = had >= 2 && !warned_drop && !warned_now;  // a captured unit, dropped for the first time
  warned_drop = warned_drop || warn;
  log(warn ? LogLevel::warning : LogLevel::info,
      "TinyJit: " + std::to_string(slots.size()) + " units held (max_units): dropped the least recently used, for " + describe((*lru)->sig) +
          (had >= 2 ? " (captured, " + std::to_string(had) + " calls: a call with that signature warms up and captures again)"
                    : std::string(" (never captured)")) +
          (warn ? "; raise max_units if it comes back. Later drops by this jit are logged at info level" : ""));
  if (last == lru->get()) last = nullptr;
  slots.erase(lru);
}

// At a new signature: warns once per jit when the last calls all brought new signatures (nothing
// replays), or when more new signatures than max_units came within 100 calls (units are dropped
// and captured again). Returns whether it warned now.
bool JitUnits::State::warn_signatures(uint64_t replays) {
  if (opt.max_units <= 1 || warned_thrash) return false;
  const uint64_t call = calls;  // this call, counted from 1
  const uint32_t streak_limit = std::min<uint32_t>(opt.max_units + 1, 16);
  if (!warned_never && new_streak >= streak_limit) {
    warned_never = warned_thrash = warned_drop = true;  // the same cause: said once
    log(LogLevel::warning, "TinyJit: the last " + std::to_string(new_streak) + " calls each brought an input signature not seen before (now " +
                               describe(sig) + "), so none of them replayed: each ran eagerly as a warm-up. An input "
                               "size that changes every call belongs in a Variable (a size in a Variable never captures again)");
    return true;
  }
  const uint64_t oldest = capture_calls[capture_next];
  if (oldest && call - oldest < 100) {
    warned_thrash = warned_drop = true;
    const uint64_t replayed = replays - capture_replays[capture_next];
    log(LogLevel::warning, "TinyJit: " + std::to_string(capture_calls.size()) + " new input signatures within " + std::to_string(call - oldest + 1) +
                               " calls, more than max_units (" + std::to_string(opt.max_units) + "): units are dropped, then warmed up and captured "
                               "again (" + std::to_string(replayed) + " of those calls replayed). An input size that changes belongs in a "
                               "Variable (a size in a Variable never captures again); or raise max_units");
    return true;
  }
  return false;
}

JitUnits::JitUnits(const JitOptions& o) : s_(std::make_unique<State>(o)) {}
JitUnits::~JitUnits() = default;
JitUnits::JitUnits(JitUnits&&) noexcept = default;
JitUnits& JitUnits::operator=(JitUnits&&) noexcept = default;

const JitOptions& JitUnits::options() const { return s_->opt; }

JitCore& JitUnits::select(CallArgs& args) {
  State& s = *s_;
  ++s.tick;
  ++s.calls;  // counted here, so a call that throws counts too (the warnings' "within N calls")
  Slot* slot = nullptr;
  // the last call's slot again (or the one slot of max_units 1): found without building a signature
  if (s.last && (s.opt.max_units <= 1 || has_signature(args, s.last->sig))) {
    slot = s.last;
  } else {
    signature_of(args, s.sig);
    slot = s.find(s.sig);
  }
  if (slot) {
    s.new_streak = 0;
    s.touch(*slot);
  } else {
    slot = &s.add(replays_);
  }
  // handed over, not copied (no reference count touched per buffer); `args` takes the slot's last
  // arguments, let go now, and both keep their capacity
  slot->core.args().swap(args);
  args.clear();
  return slot->core;
}

const JitCore* JitUnits::find(const CallArgs& args) const {
  signature_of(args, s_->probe);
  const Slot* slot = s_->find(s_->probe);
  return slot ? &slot->core : nullptr;
}

bool JitUnits::drop(const CallArgs& args) {
  State& s = *s_;
  signature_of(args, s.probe);
  auto it = std::find_if(s.slots.begin(), s.slots.end(), [&](const auto& x) { return x->sig == s.probe; });
  if (it == s.slots.end()) return false;
  if (s.last == it->get()) s.last = nullptr;
  s.slots.erase(it);
  return true;
}

void JitUnits::reset() {
  s_->slots.clear();
  s_->last = nullptr;
  s_->calls = 0;
}

const JitCore* JitUnits::last() const { return s_->last ? &s_->last->core : nullptr; }

std::vector<JitUnitEntry> JitUnits::entries() const {
  std::vector<const Slot*> order;
  for (const auto& s : s_->slots) order.push_back(s.get());
  std::sort(order.begin(), order.end(), [](const Slot* x, const Slot* y) { return x->last_used > y->last_used; });
  std::vector<JitUnitEntry> out;
  for (const Slot* s : order) out.push_back({describe(s->sig), s->core.calls(), &s->core.unit()});
  return out;
}

JitUnits::Guard::Guard(const JitUnits& u, const char* op) : l_(u.s_->lock) {
  Lock& l = l_;
  // only this thread stores its own id, so a relaxed load that sees it is this thread's own store
  if (l.holder.load(std::memory_order_relaxed) == std::this_thread::get_id())
    throw JitError(std::string("TinyJit ") + op +
                   " from inside its own step (the step calls the jit that is running it): the step runs under the jit's lock, "
                   "and a call would deadlock. Call it after the jit's call returns, or use another TinyJit");
  l.mu.lock();
  l.holder.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

JitUnits::Guard::~Guard() {
  l_.holder.store(std::thread::id(), std::memory_order_relaxed);
  l_.mu.unlock();
}

}  // namespace encore::detail
