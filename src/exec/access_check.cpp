// The access check at capture (see access_check.hpp).
#include "exec/access_check.hpp"

#include <algorithm>
#include <cstdio>

#include "core/buffer_impl.hpp"
#include "core/owned_event.hpp"
#include "core/program_impl.hpp"
#include "core/recorder.hpp"
#include "encore/error.hpp"
#include "exec/eager.hpp"
#include "testing.hpp"

namespace encore::detail {

namespace {

// A read claim the check tries: in or none on data the source does not declare read-only (a
// pointer to const or __constant data is the compiler's promise, not encore's guess).
bool read_claim(const KernelParam& p, Access a) { return p.is_pointer && !p.read_only() && (a == Access::in || a == Access::none); }
bool writes(Access a) { return has(a, Access::out); }
// An out claim the check tries: one the source does not prove (a parameter the body only stores
// into, p[i] = v, or never names, cannot have its old bytes read).
bool out_claim(const KernelParam& p, Access a) {
  return a == Access::out && !(p.inferred_store_only || p.inferred_access == Access::none);
}

bool overlap(const Buffer& x, const Buffer& y) {
  BufferImpl &a = *x.impl(), &b = *y.impl();
  return a.root() == b.root() && a.offset < b.offset + b.nbytes && b.offset < a.offset + a.nbytes;
}

// Reads that do not wait. The check's commands go into the device's one in-order queue without a
// wait between them (the reads before a launch, the launch, the reads after it), and the host waits
// once, for the last: on PoCL each wait is most of what the check costs. Each read is waited for
// before its bytes are compared, and also when something throws first, before the vector it writes
// into is freed.
struct PendingReads {
  std::vector<OwnedEvent> reads;
  void read(const Buffer& b, std::vector<unsigned char>& into) {
    BufferImpl& bi = *b.impl();
    bi.ensure_allocated();
    into.resize(bi.nbytes);
    if (into.empty()) return;
    DeviceImpl* d = bi.dev.get();
    if (reads.size() == reads.capacity()) reads.reserve(2 * reads.size() + 4);  // nothing throws between the enqueue and its owner
    reads.emplace_back(d, d->read_async(bi.root()->mem.load(std::memory_order_acquire), bi.offset, into.data(), into.size()));
  }
  void wait() {
    for (OwnedEvent& e : reads) e.wait_reset();
  }
  ~PendingReads() {
    for (OwnedEvent& e : reads) try {
        e.wait_reset();
      } catch (...) {  // the first error is the one reported
      }
  }
};

// Writes that do not wait read their host bytes when the queue reaches them: where something throws
// before a wait, the queue is drained before those bytes are freed.
struct Drain {
  DeviceImpl* dev = nullptr;
  bool waited = false;  // a wait after the writes has returned
  ~Drain() {
    if (dev && !waited) try {
        dev->finish();
      } catch (...) {  // the first error is the one reported
      }
  }
};

// A buffer of `bytes` on `like`'s device outside any capture (no capture id, no allocation count:
// call 0 and call 1 still pair their allocations), holding `data` once the queue has run the write
// (it does not wait: `data` stays alive until then, see Drain).
Buffer scratch(const Buffer& like, const std::vector<unsigned char>& data) {
  auto s = std::make_shared<BufferImpl>();
  BufferImpl& l = *like.impl();
  s->dev = l.dev;
  s->dtype = l.dtype;
  s->count = l.count;
  s->nbytes = l.nbytes;
  s->ensure_allocated();
  if (!data.empty()) s->dev->write(s->mem.load(std::memory_order_acquire), 0, data.data(), data.size(), false);
  return Buffer(std::move(s));
}

std::string hex(unsigned char c) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", c);
  return s;
}

// "12 of its 4096 bytes, the first at byte 8 (0x00 -> 0x3f)".
std::string changed(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  size_t n = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && n++ == 0) first = i;
  return std::to_string(n) + " of its " + std::to_string(a.size()) + " bytes, the first at byte " + std::to_string(first) + " (" +
         hex(a[first]) + " -> " + hex(b[first]) + ")";
}

std::string where(const Kernel& k, size_t i) {
  const KernelParam& p = k.params()[i];
  return "kernel " + k.name() + " argument " + std::to_string(i) + " (" + p.type_name + " " + p.name + ")";
}

std::string claim_origin(const KernelParam& p, Access a) {
  if (a == p.default_access())
    return a == Access::none ? "none: the kernel's source never names it" : "in: inferred from the kernel's source, which shows no store through it";
  return "in: given as encore::in at the launch";
}

std::string in_failure(const Kernel& k, size_t i, Access a, const std::vector<unsigned char>& before,
                       const std::vector<unsigned char>& after) {
  return "TinyJit/Capture access check: " + where(k, i) + " has access " + claim_origin(k.params()[i], a) +
         ", but the launch at capture changed " + changed(before, after) +
         ". Replay would prune or reorder the launch on that claim: pass the argument as encore::inout(buf) (or encore::out "
         "if the kernel only writes it)";
}

// Held pending reads and snapshots: past this many bytes (or reads) a launch waits for them all.
constexpr size_t kWindowBytes = size_t{64} << 20;
constexpr size_t kWindowReads = 4096;

}  // namespace

// The in claims of a capture's launches, read before and after each launch without a wait and
// compared when the capture ends (finish_access_checks), or at a launch that finds the window full.
struct AccessChecks {
  struct Claim {
    size_t arg = 0;
    Access access = Access::in;
    std::vector<unsigned char> before, after;
  };
  struct Launch {
    Kernel kernel;  // for the message (not the arguments: their buffers go when the step lets them go)
    std::vector<Claim> claims;
    bool ran = false;  // its reads after it are queued (a launch that threw has none)
  };
  std::vector<Launch> launches;
  size_t bytes = 0;
  PendingReads reads;  // after the snapshots: waited for before they go

  // Waits for every read, then throws the first failed claim in launch order; empty after.
  void settle() {
    reads.wait();
    std::vector<Launch> done = std::move(launches);
    launches.clear();
    reads.reads.clear();
    bytes = 0;
    for (const Launch& l : done)
      if (l.ran)
        for (const Claim& c : l.claims)
          if (c.after != c.before) throw JitError(in_failure(l.kernel, c.arg, c.access, c.before, c.after));
  }
};

void finish_access_checks(Recorder& r) {
  if (r.access_checks) r.access_checks->settle();
}

bool has_access_claims(const KernelImpl& k, const std::vector<Arg>& args) {
  if (k.program->dev->is_null()) return false;  // its kernels run nothing: no claim can be tried
  const auto& params = k.sig->params;
  for (size_t i = 0; i < args.size() && i < params.size(); ++i)
    if (args[i].kind == Arg::Kind::buffer && (read_claim(params[i], args[i].access) || out_claim(params[i], args[i].access))) return true;
  return false;
}

void run_checking_access(const ExecItem& it) {
  const auto& params = it.kernel.params();
  const std::vector<Arg>& args = it.args;
  const size_t n = args.size();
  std::vector<uint8_t> check_in(n, 0), buffer(n, 0);
  bool any_out = false, disjoint = true;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].kind != Arg::Kind::buffer) continue;
    buffer[i] = 1;
    any_out = any_out || out_claim(params[i], args[i].access);
    check_in[i] = read_claim(params[i], args[i].access);
    for (size_t j = 0; j < i; ++j)
      if (buffer[j] && overlap(args[i].buf, args[j].buf)) {
        disjoint = false;
        // a change to shared bytes cannot be blamed on the one that claims to leave them alone
        if (writes(args[j].access)) check_in[i] = 0;
        if (writes(args[i].access)) check_in[j] = 0;
      }
  }
  const bool check_out = any_out && disjoint;
  Recorder* rec = current_recorder();
  if (!check_out && std::find(check_in.begin(), check_in.end(), 1) == check_in.end()) {
    run_item_eager(it);  // every claim shares bytes with a written argument: nothing to try
    return;
  }
  if (!check_out && rec) {
    // in claims only: nothing to wait for until the capture ends
    if (!rec->access_checks) rec->access_checks = std::make_shared<AccessChecks>();
    AccessChecks& ac = *rec->access_checks;
    size_t window = kWindowBytes;
    ENCORE_TESTING_DO(if (size_t w = testing::access_check_window.load()) window = w;)
    if (ac.bytes >= window || ac.reads.reads.size() >= kWindowReads) {
      ENCORE_TESTING_DO(++testing::access_check_settles;)
      ac.settle();
    }
    ac.launches.emplace_back();
    AccessChecks::Launch& l = ac.launches.back();  // (its vectors' storage stays put as `launches` grows)
    l.kernel = it.kernel;
    for (size_t i = 0; i < n; ++i)
      if (check_in[i]) l.claims.push_back({i, args[i].access, {}, {}});
    for (AccessChecks::Claim& c : l.claims) {
      ac.reads.read(args[c.arg].buf, c.before);
      ac.bytes += 2 * c.before.size();
    }
    run_item_eager(it);
    for (AccessChecks::Claim& c : l.claims) ac.reads.read(args[c.arg].buf, c.after);
    l.ran = true;
    return;
  }
  // this launch waits for its reads: the claims held before it are compared first, so the first
  // wrong claim in launch order is the one reported
  if (rec && rec->access_checks) rec->access_checks->settle();
  std::vector<std::vector<unsigned char>> before(n), after(n);
  PendingReads reading;  // after the vectors: waited for before they go
  for (size_t i = 0; i < n; ++i)
    if (check_in[i] || (check_out && buffer[i])) reading.read(args[i].buf, before[i]);
  run_item_eager(it);
  for (size_t i = 0; i < n; ++i)
    if (check_in[i] || (check_out && writes(args[i].access))) reading.read(args[i].buf, after[i]);
  reading.wait();
  for (size_t i = 0; i < n; ++i) {
    if (check_in[i] && after[i] != before[i]) throw JitError(in_failure(it.kernel, i, args[i].access, before[i], after[i]));
  }
  if (!check_out) return;

  // the same launch on scratch copies of its buffers as they were, the out buffers inverted
  std::vector<Arg> trial = args;
  std::vector<std::vector<unsigned char>> inverted(n), outcome(n);
  PendingReads reading_trial;  // after the vectors, as above
  Drain drain;                 // the scratch copies' writes read `before` and `inverted`
  drain.dev = it.kernel.impl()->program->dev.get();  // (a launch's buffers are all on its device)
  for (size_t i = 0; i < n; ++i) {
    if (!buffer[i]) continue;
    if (args[i].access == Access::out) {
      inverted[i] = before[i];
      for (unsigned char& c : inverted[i]) c = static_cast<unsigned char>(~c);
      trial[i].buf = scratch(args[i].buf, inverted[i]);
    } else {
      trial[i].buf = scratch(args[i].buf, before[i]);
    }
  }
  LaunchDims ld;
  ENCORE_TESTING_DO(++testing::access_trial_runs;)
  run_kernel_eager(*it.kernel.impl(), trial, it.global, it.local, ld, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (buffer[i] && writes(args[i].access)) reading_trial.read(trial[i].buf, outcome[i]);
  reading_trial.wait();
  drain.waited = true;  // the reads queued after the writes
  std::string outs;
  for (size_t i = 0; i < n; ++i)
    if (buffer[i] && args[i].access == Access::out) outs += (outs.empty() ? "" : ", ") + std::to_string(i);
  for (size_t i = 0; i < n; ++i) {
    if (!buffer[i] || !writes(args[i].access)) continue;
    const std::vector<unsigned char>& got = outcome[i];
    bool same = true;
    size_t first = 0;
    for (size_t b = 0; b < got.size() && same; ++b) {
      // an out byte the kernel did not write keeps what it held: the inverted bytes, or the real ones
      const bool unwritten = args[i].access == Access::out && got[b] == inverted[i][b] && after[i][b] == before[i][b];
      same = got[b] == after[i][b] || unwritten;
      first = b;
    }
    if (same) continue;
    throw JitError("TinyJit/Capture access check: kernel " + it.kernel.name() + " reads a buffer given as encore::out (argument" +
                   (outs.find(',') != std::string::npos ? "s " : " ") + outs + "): run again at capture with the out bytes changed, " +
                   where(it.kernel, i) + " came out different (byte " + std::to_string(first) + ": " + hex(after[i][first]) + " in the launch, " +
                   hex(got[first]) + " in the re-run). Replay would prune or reorder the launch on that claim: pass it as "
                   "encore::inout(buf)");
  }
}

}  // namespace encore::detail
