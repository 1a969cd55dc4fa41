// Concurrent replay within one device. A hand-written loop issues its kernels one after another on
// an in-order queue; a unit knows every item's bytes, so independent items may run at once. The
// plan gives each replayed item the earlier items it depends on over byte ranges (a read after a
// write, a write after a read or a write, of overlapping bytes: temps the planner placed at the
// same arena bytes included, through the same Region answer as the order between devices), and a
// replay enqueues the items on the device's out-of-order queue, each with those items' events as
// its wait list. The in-order queue stays the device's order for everything else:
//   - a marker on it before the items: the items without dependencies wait for it, so the work
//     queued before the run (eager work, an earlier replay) completes first;
//   - a marker on the out-of-order queue after the items (after all of them) and a barrier on the
//     in-order queue waiting for it: the work queued after the run waits for its end, and that
//     marker is the replay's completion (the in-flight bound waits for it).
// Only a step with independent work gets this (UnitStats::chains >= 2); a step of one chain keeps
// the plain in-order loop and its cost exactly. Events: one per item that a later item waits for,
// the driver's; the arrays holding them are made at bind.
#include <algorithm>
#include <cstdio>
#include <queue>

#include "encore/log.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"
#include "unit/regions.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

namespace {

// Above these the analysis is not worth its plan-time cost (the reachability sets are n^2 bits):
// such steps replay in order.
constexpr size_t kMostItems = 8192, kMostEntries = 4096;

bool reads(Access a) { return a == Access::none || has(a, Access::in); }
bool writes(Access a) { return a == Access::none || has(a, Access::out); }

}  // namespace

ItemDeps plan_deps(const Plan& p) {
  ItemDeps d;
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  d.on.resize(n);
  std::vector<uint32_t> replayed;
  for (uint32_t i = 0; i < n; ++i)
    if (!p.one_time[i]) replayed.push_back(i);
  if (p.flow) d.why = "in order (a step that decides: host items, branches or loops)";
  else if (p.devices.size() != 1) d.why = "in order (a step over several devices)";
  else if (p.sync.any_split) d.why = "in order (split-phase native calls)";
  else if (replayed.size() > kMostItems) d.why = "in order (over 8192 replayed items: not analysed)";
  else if (p.entries.size() > kMostEntries) d.why = "in order (over 4096 buffers: not analysed)";
  else d.eligible = true;
  if (!d.eligible) return d;

  // entries that may share bytes on replay (each with itself)
  const uint32_t ne = static_cast<uint32_t>(p.entries.size());
  std::vector<Region> region(ne);
  for (uint32_t e = 0; e < ne; ++e) region[e] = region_of(p.entries[e]);
  std::vector<std::vector<uint32_t>> shares(ne);
  for (uint32_t e = 0; e < ne; ++e) {
    shares[e].push_back(e);
    for (uint32_t f = e + 1; f < ne; ++f)
      if (conflict(p, region[e], region[f])) shares[e].push_back(f), shares[f].push_back(e);
  }

  // Per entry, the last replayed item that wrote it and the items that read it since. An item
  // waits for the last writer of every entry sharing bytes with what it touches, and a write also
  // for the readers since: every conflicting earlier item is then ordered before it, directly or
  // through the writers of that entry (each waits for the one before).
  const uint32_t nr = static_cast<uint32_t>(replayed.size());
  std::vector<int64_t> last_writer(ne, -1);
  std::vector<std::vector<uint32_t>> readers(ne);
  std::vector<std::vector<uint32_t>> deps(nr);  // in replayed positions
  for (uint32_t r = 0; r < nr; ++r) {
    std::vector<uint32_t>& on = deps[r];
    for (const ItemAccess& a : p.access[replayed[r]])
      for (uint32_t f : shares[a.entry]) {
        if (last_writer[f] >= 0) on.push_back(static_cast<uint32_t>(last_writer[f]));
        if (writes(a.access)) on.insert(on.end(), readers[f].begin(), readers[f].end());
      }
    for (const ItemAccess& a : p.access[replayed[r]]) {
      if (writes(a.access)) {
        last_writer[a.entry] = r;
        readers[a.entry].clear();
      } else if (reads(a.access)) {
        readers[a.entry].push_back(r);
      }
    }
    std::sort(on.begin(), on.end());
    on.erase(std::unique(on.begin(), on.end()), on.end());
    on.erase(std::remove(on.begin(), on.end(), r), on.end());
  }

  // Transitive reduction: a dependency another one already implies is dropped (shorter wait lists,
  // and every edge left matters: the mutation test drops one). Latest first: an ancestor has a
  // smaller position than its descendants.
  const size_t words = (nr + 63) / 64;
  std::vector<uint64_t> reach(static_cast<size_t>(nr) * words, 0);
  std::vector<uint32_t> len(nr, 1);
  for (uint32_t r = 0; r < nr; ++r) {
    uint64_t* acc = &reach[static_cast<size_t>(r) * words];
    std::vector<uint32_t> kept;
    for (auto it = deps[r].rbegin(); it != deps[r].rend(); ++it) {
      const uint32_t j = *it;
      len[r] = std::max(len[r], len[j] + 1);
      if (acc[j / 64] >> (j % 64) & 1) continue;
      kept.push_back(j);
      const uint64_t* rj = &reach[static_cast<size_t>(j) * words];
      for (size_t w = 0; w < words; ++w) acc[w] |= rj[w];
      acc[j / 64] |= uint64_t{1} << (j % 64);
    }
    std::sort(kept.begin(), kept.end());
    for (uint32_t j : kept) d.on[replayed[r]].push_back(replayed[j]);
    d.longest = std::max(d.longest, len[r]);
  }
  return d;
}

namespace {

// The test switch concurrent_reorder: the order items run in is the dependencies' order that
// strays farthest from the step's (of the items ready, the latest in the step first).
std::vector<uint32_t> reordered(const ConcurrentOrder& c, uint32_t n) {
  std::vector<uint32_t> missing(n, 0);
  std::vector<std::vector<uint32_t>> after(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < c.wait_n[i]; ++k) {
      ++missing[i];
      after[c.waits[c.wait_at[i] + k]].push_back(i);
    }
  std::priority_queue<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (!missing[i]) ready.push(i);
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    const uint32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (uint32_t j : after[i])
      if (--missing[j] == 0) ready.push(j);
  }
  return order;
}

void tell(const UnitImpl& u, const char* how) {
  if (debug_level() < 1) return;
  char line[256];
  std::snprintf(line, sizeof line, "replay: %s (replayed items %zu, chains %zu)", how, u.plan.stats.items_replayed, u.plan.stats.chains);
  log(LogLevel::info, line);
}

}  // namespace

void bind_concurrent(UnitImpl& u, Binding& b) {
  const Plan& p = u.plan;
  ConcurrentOrder& c = b.conc;
  c = ConcurrentOrder{};
  if (!p.opt.concurrent && !ENCORE_TESTING_IS(force_concurrent)) return tell(u, "in order (UnitOptions::concurrent is off)");
  if (!p.deps.eligible) return tell(u, p.deps.why);
  if (b.n_replay < 2) return tell(u, "in order (one chain)");
  if (p.stats.chains < 2 && !ENCORE_TESTING_IS(force_concurrent)) return tell(u, "in order (one chain)");
  for (uint32_t i = 0; i < b.n_replay; ++i)
    if (!b.items[i].replay_after) return tell(u, "in order (an item that only an in-order queue replays: an upload or a native call)");
  if (!p.devices[0]->open_concurrent()) return tell(u, "in order (the device has no out-of-order queue)");

  const uint32_t n = b.n_replay;
  std::vector<uint32_t> bound_of(p.items.size(), UINT32_MAX);
  for (uint32_t i = 0; i < n; ++i) bound_of[b.items[i].item] = i;
  c.wait_at.resize(n);
  c.wait_n.resize(n);
  c.signals.assign(n, 0);
  size_t most = 1;
  int64_t drop = -1;  // the test switch drop_dependency: the last item with a dependency loses its first
  if (ENCORE_TESTING_IS(drop_dependency))
    for (uint32_t i = n; i-- > 0 && drop < 0;)
      if (!p.deps.on[b.items[i].item].empty()) drop = i;
  for (uint32_t i = 0; i < n; ++i) {
    c.wait_at[i] = static_cast<uint32_t>(c.waits.size());
    const std::vector<uint32_t>& on = p.deps.on[b.items[i].item];
    for (size_t k = drop == i ? 1 : 0; k < on.size(); ++k) {
      const uint32_t j = bound_of[on[k]];
      c.waits.push_back(j);
      c.signals[j] = 1;
    }
    c.wait_n[i] = static_cast<uint32_t>(c.waits.size()) - c.wait_at[i];
    most = std::max<size_t>(most, c.wait_n[i]);
  }
  c.ev.assign(n, nullptr);
  c.gather.assign(most, nullptr);
  if (ENCORE_TESTING_IS(concurrent_reorder)) {
    c.order = reordered(c, n);
  } else {
    c.order.resize(n);
    for (uint32_t i = 0; i < n; ++i) c.order[i] = i;
  }
  c.on = true;
  ENCORE_TESTING_DO(++testing::concurrent_binds);
  tell(u, "concurrent, on the device's out-of-order queue");
}

void run_concurrent(UnitImpl& u, Binding& b, OwnedEvent* ends) {
  ConcurrentOrder& c = b.conc;
  DeviceImpl& dev = *u.plan.devices[0];
  if (ENCORE_TESTING_IS(concurrent_reorder)) {
    // deterministic: the reordered items one after another on the in-order queue (any order the
    // dependencies allow must give the step's results)
    for (uint32_t i : c.order) b.items[i].replay(b, b.items[i]);
    return;
  }
  struct Release {  // this replay's events, also when an enqueue throws (run_unit then finishes the queues)
    DeviceImpl& dev;
    ConcurrentOrder& c;
    ~Release() {
      for (NativeEvent*& e : c.ev)
        if (e) dev.release_event(std::exchange(e, nullptr));
    }
  } release{dev, c};
  OwnedEvent start(&dev, dev.enqueue_marker());  // after the work queued before the run
  try {
    for (uint32_t i : c.order) {
      BoundItem& x = b.items[i];
      const uint32_t n = c.wait_n[i];
      NativeEvent* const* waits = start.list();
      if (n) {
        for (uint32_t k = 0; k < n; ++k) c.gather[k] = c.ev[c.waits[c.wait_at[i] + k]];
        waits = c.gather.data();
      }
      x.replay_after(x, waits, n ? n : 1, c.signals[i] ? &c.ev[i] : nullptr);
    }
  } catch (...) {
    // what was enqueued runs to its end before the error leaves the run (run_unit then finishes
    // the in-order queue, which knows nothing of these)
    try {
      OwnedEvent(&dev, dev.marker_after(nullptr, 0)).wait();
    } catch (...) {
    }
    throw;
  }
  OwnedEvent end(&dev, dev.marker_after(nullptr, 0));  // after every item (flushed)
  dev.enqueue_barrier(end.list(), 1);                  // the in-order queue's later work waits for it
  if (ends) ends[0] = std::move(end);
}

}  // namespace encore::detail
