// Concurrent replay within one device. A hand-written loop issues its kernels one after another on
// an in-order queue; a unit knows every item's bytes, so independent items may run at once. The
// plan gives each replayed item the earlier items it depends on over byte ranges (a read after a
// write, a write after a read or a write, of overlapping bytes: temps the planner placed at the
// same arena bytes included, through the same Region answer as the order between devices). The
// bind deals the items to the device's lanes (in-order queues; lane 0 is its own queue): an item
// goes on the lane of the dependency it continues, a fresh chain on the least loaded lane. Order on
// one lane is the queue's; an item waits through events only for items of other lanes it depends on
// and is not already after (the latest one per lane: a lane runs in order). Around the items:
//   - a marker on lane 0 before them: the first item of every other lane waits for it, so the work
//     queued before the run (eager work, an earlier replay) completes first;
//   - after them, a marker on every other lane and a barrier on lane 0 waiting for those: the work
//     queued after the run waits for its end (run_unit's end marker on lane 0, after the barrier, is
//     the replay's completion, which the in-flight bound waits for).
// Only a step with independent work gets this (UnitStats::chains >= 2); a step of one chain keeps
// the plain in-order loop and its cost exactly. Events: one per item that an item of another lane
// waits for; every array is made at bind, and so is which lanes a replay flushes before which item
// (an event waited for on another queue must have been submitted).
#include <algorithm>
#include <cstdio>
#include <queue>
#include <span>

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

// The dependency rule of both the replay order and the arena's lives, over the replayed items in
// step order: an item depends on the last earlier writer of every key its accesses may share bytes
// with, and a write also on the readers since. Every conflicting earlier item is then ordered before
// it, directly or through that key's writers (each depends on the one before). key(entry): the key
// an access updates; sharing(entry): the keys it may share bytes with, its own included.
// dep(r, j): replayed position r depends on the earlier position j (a pair may come twice).
template <class Key, class Sharing, class Dep>
void walk_deps(const Plan& p, const std::vector<uint32_t>& replayed, uint32_t keys, Key key, Sharing sharing, Dep dep) {
  std::vector<int64_t> last_writer(keys, -1);
  std::vector<std::vector<uint32_t>> readers(keys);
  for (uint32_t r = 0; r < replayed.size(); ++r) {
    const std::span<const ItemAccess> acc = p.access[replayed[r]];
    for (const ItemAccess& a : acc)
      for (uint32_t f : sharing(a.entry)) {
        if (last_writer[f] >= 0) dep(r, static_cast<uint32_t>(last_writer[f]));
        if (writes(a.access))
          for (uint32_t j : readers[f]) dep(r, j);
      }
    for (const ItemAccess& a : acc) {
      const uint32_t k = key(a.entry);
      if (writes(a.access)) {
        last_writer[k] = r;
        readers[k].clear();
      } else if (reads(a.access)) {
        readers[k].push_back(r);
      }
    }
  }
}

std::vector<uint32_t> replayed_items(const Plan& p) {
  std::vector<uint32_t> replayed;
  for (uint32_t i = 0; i < p.items.size(); ++i)
    if (!p.one_time[i]) replayed.push_back(i);
  return replayed;
}

}  // namespace

ItemDeps plan_deps(const Plan& p) {
  ItemDeps d;
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  d.on.resize(n);
  const std::vector<uint32_t> replayed = replayed_items(p);
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

  // by entry: an entry updates itself and may share bytes with those `shares` lists
  const uint32_t nr = static_cast<uint32_t>(replayed.size());
  std::vector<std::vector<uint32_t>> deps(nr);  // in replayed positions
  walk_deps(
      p, replayed, ne, [](uint32_t e) { return e; }, [&](uint32_t e) -> const std::vector<uint32_t>& { return shares[e]; },
      [&](uint32_t r, uint32_t j) { deps[r].push_back(j); });
  for (uint32_t r = 0; r < nr; ++r) {
    std::vector<uint32_t>& on = deps[r];
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

// Temps of independent chains kept apart in the arena. The planner reuses a temp's bytes for any
// temp whose life starts after its last use in step order; between two chains that is a false
// dependency (the second chain's writer waits for the first chain's readers), and with every temp
// planned a step of independent chains would replay as one. So, for a unit that replays
// concurrently, a temp's life lasts up to the last replayed item (in step order) that does not
// descend from all its last users in the step's own dependencies (those of buffers and temps, no
// arena yet): a temp that reuses its bytes then starts at an item that runs after them anyway.
// Memory only: plan_deps still orders every pair of items that share arena bytes.
void extend_concurrent_lives(const Plan& p, const std::vector<uint32_t>& group_of_entry, std::vector<TempUse>& uses) {
  constexpr size_t kMostPlanned = 4096;  // the ancestor sets are n^2 bits
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  if (n < 2 || n > kMostPlanned || p.flow || uses.empty()) return;
  uint32_t groups = 0;
  for (uint32_t g : group_of_entry) groups = std::max(groups, g + 1);
  // by storage (group): a temp's own bytes, no arena yet
  const std::vector<uint32_t> replayed = replayed_items(p);  // one-time items order nothing
  const uint32_t nr = static_cast<uint32_t>(replayed.size());
  std::vector<uint32_t> pos(n, UINT32_MAX);
  for (uint32_t r = 0; r < nr; ++r) pos[replayed[r]] = r;
  const size_t words = (nr + 63) / 64;
  std::vector<uint64_t> anc(static_cast<size_t>(nr) * words, 0);  // per position: its ancestors and itself
  auto is_anc = [&](uint32_t j, uint32_t r) { return anc[static_cast<size_t>(r) * words + j / 64] >> (j % 64) & 1; };
  for (uint32_t r = 0; r < nr; ++r) anc[static_cast<size_t>(r) * words + r / 64] |= uint64_t{1} << (r % 64);
  walk_deps(
      p, replayed, groups, [&](uint32_t e) { return group_of_entry[e]; },
      [&](uint32_t e) { return std::span<const uint32_t>(&group_of_entry[e], 1); },
      [&](uint32_t r, uint32_t j) {  // (j < r: its set is complete)
        if (is_anc(j, r)) return;
        uint64_t* a = &anc[static_cast<size_t>(r) * words];
        const uint64_t* aj = &anc[static_cast<size_t>(j) * words];
        for (size_t w = 0; w < words; ++w) a[w] |= aj[w];
      });
  uint32_t temps = 0;
  for (const TempUse& u : uses) temps = std::max(temps, u.temp + 1);
  std::vector<std::vector<uint32_t>> users(temps);  // in replayed positions
  for (const TempUse& u : uses)
    if (pos[u.item] != UINT32_MAX) users[u.temp].push_back(pos[u.item]);
  for (uint32_t t = 0; t < temps; ++t) {
    std::vector<uint32_t>& us = users[t];
    if (us.empty()) continue;
    std::sort(us.begin(), us.end());
    us.erase(std::unique(us.begin(), us.end()), us.end());
    std::vector<uint32_t> last_users;  // the users no other user descends from
    for (uint32_t u : us)
      if (std::none_of(us.begin(), us.end(), [&](uint32_t v) { return v != u && is_anc(u, v); })) last_users.push_back(u);
    for (uint32_t j = nr; j-- > us.back() + 1;) {
      if (std::all_of(last_users.begin(), last_users.end(), [&](uint32_t u) { return is_anc(u, j); })) continue;
      uses.push_back({replayed[j], t});  // j may run beside the temp's users: the temp lives to j
      break;
    }
  }
}

namespace {

constexpr uint32_t kStart = UINT32_MAX;  // in ConcurrentOrder::waits: the marker before the items

// The test switch concurrent_reorder: the order items run in is the lanes' order (each lane's
// items in turn, and every event wait) that strays farthest from the step's: of the items ready,
// the latest in the step first. A wait the lanes miss shows as a wrong result here.
std::vector<uint32_t> reordered(const ConcurrentOrder& c, uint32_t n) {
  std::vector<uint32_t> missing(n, 0);
  std::vector<std::vector<uint32_t>> after(n);
  std::vector<int64_t> tail(c.lanes, -1);
  for (uint32_t i = 0; i < n; ++i) {
    if (tail[c.lane[i]] >= 0) ++missing[i], after[tail[c.lane[i]]].push_back(i);
    tail[c.lane[i]] = i;
    for (uint32_t k = 0; k < c.wait_n[i]; ++k)
      if (const uint32_t j = c.waits[c.wait_at[i] + k]; j != kStart) ++missing[i], after[j].push_back(i);
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

// Each item's lane: the lane of the latest dependency no item continued yet (the item continues
// that chain there, in queue order, with no event), else the least loaded lane (a fresh chain, or a
// branch of a fork). `on` is in bound indices.
std::vector<uint32_t> deal_lanes(const std::vector<std::vector<uint32_t>>& on, uint32_t lanes) {
  const uint32_t n = static_cast<uint32_t>(on.size());
  std::vector<uint32_t> lane(n), load(lanes, 0);
  std::vector<uint8_t> continued(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    int64_t pick = -1;
    for (auto it = on[i].rbegin(); it != on[i].rend() && pick < 0; ++it)
      if (!continued[*it]) pick = *it;
    if (pick >= 0) {
      continued[pick] = 1;
      lane[i] = lane[pick];
    } else {
      lane[i] = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    }
    ++load[lane[i]];
  }
  return lane;
}

// The event waits of each item (c.lane set): per other lane, its latest dependency there that the
// item's lane is not already after. What a lane is after grows with each wait by what the item
// waited for was after (`known`: per item, per lane, the latest position its completion implies;
// -1 on lane 0 is the start marker, -2 nothing).
void lane_waits(ConcurrentOrder& c, const std::vector<std::vector<uint32_t>>& on) {
  const uint32_t n = static_cast<uint32_t>(on.size()), L = c.lanes;
  std::vector<int64_t> seen(static_cast<size_t>(L) * L, -2), known(static_cast<size_t>(n) * L), latest(L);
  seen[0] = -1;  // lane 0's items follow the start marker on their own queue
  c.wait_at.resize(n);
  c.wait_n.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t a = c.lane[i];
    int64_t* mine = &seen[static_cast<size_t>(a) * L];
    std::fill(latest.begin(), latest.end(), -2);
    for (uint32_t j : on[i])
      if (c.lane[j] != a && static_cast<int64_t>(j) > mine[c.lane[j]]) latest[c.lane[j]] = std::max<int64_t>(latest[c.lane[j]], j);
    c.wait_at[i] = static_cast<uint32_t>(c.waits.size());
    for (uint32_t b = 0; b < L; ++b) {
      if (latest[b] < 0 || latest[b] <= mine[b]) continue;  // (an earlier wait of this loop may imply it)
      const uint32_t j = static_cast<uint32_t>(latest[b]);
      c.waits.push_back(j);
      const int64_t* kj = &known[static_cast<size_t>(j) * L];
      for (uint32_t l = 0; l < L; ++l) mine[l] = std::max(mine[l], kj[l]);
    }
    if (mine[0] < -1) {  // the lane's first item, after nothing of lane 0 yet
      c.waits.push_back(kStart);
      mine[0] = -1;
    }
    c.wait_n[i] = static_cast<uint32_t>(c.waits.size()) - c.wait_at[i];
    mine[a] = i;
    std::copy(mine, mine + L, &known[static_cast<size_t>(i) * L]);
  }
}

// Which lanes to flush before each item: a lane whose waited-for events were enqueued since its
// last flush. (Lane markers flush their own lane.)
void lane_flushes(ConcurrentOrder& c) {
  const uint32_t n = static_cast<uint32_t>(c.lane.size());
  std::vector<uint8_t> dirty(c.lanes, 0);
  c.flush_before.assign(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t k = 0; k < c.wait_n[i]; ++k)
      if (const uint32_t j = c.waits[c.wait_at[i] + k]; j != kStart && dirty[c.lane[j]]) {
        c.flush_before[i] |= static_cast<uint8_t>(1u << c.lane[j]);
        dirty[c.lane[j]] = 0;
      }
    if (c.signals[i]) dirty[c.lane[i]] = 1;
  }
}

}  // namespace

void bind_concurrent(UnitImpl& u, Binding& b) {
  const Plan& p = u.plan;
  ConcurrentOrder& c = b.conc;
  c = ConcurrentOrder{};
  const bool forced = ENCORE_TESTING_IS(force_concurrent);
  if (!p.opt.concurrent && !forced) return tell(u, "in order (UnitOptions::concurrent is off)");
  if (!p.deps.eligible) return tell(u, p.deps.why);
  if (b.n_replay < 2) return tell(u, "in order (one chain)");
  if (p.stats.chains < 2 && !forced) return tell(u, "in order (one chain)");
  for (uint32_t i = 0; i < b.n_replay; ++i)
    if (!b.items[i].replay_after) return tell(u, "in order (an item that only an in-order queue replays: an upload or a native call)");

  // lanes: as many as the step has chains, at most one per compute unit (2..8); forced (the
  // property tests): 3, so that chains share lanes and forks cross them
  DeviceImpl& dev = *p.devices[0];
  const uint32_t per_device = std::clamp<uint32_t>(dev.info.compute_units, 2, 8);
  const uint32_t want = forced ? 3 : static_cast<uint32_t>(std::min<size_t>(p.stats.chains, per_device));
  const uint32_t lanes = std::min(want, dev.open_lanes(want));
  if (lanes < 2) return tell(u, "in order (the device has no second queue)");

  const uint32_t n = b.n_replay;
  std::vector<uint32_t> bound_of(p.items.size(), UINT32_MAX);
  for (uint32_t i = 0; i < n; ++i) bound_of[b.items[i].item] = i;
  std::vector<std::vector<uint32_t>> on(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j : p.deps.on[b.items[i].item]) on[i].push_back(bound_of[j]);
  c.lanes = lanes;
  c.lane = deal_lanes(on, lanes);
  std::vector<uint8_t> used(lanes, 0);
  for (uint32_t l : c.lane) used[l] = 1;
  c.used.clear();
  for (uint32_t l = 1; l < lanes; ++l)
    if (used[l]) c.used.push_back(l);
  if (c.used.empty()) return tell(u, "in order (one chain)");
  lane_waits(c, on);
  if (ENCORE_TESTING_IS(drop_dependency))  // the last item with an event wait loses its first
    for (uint32_t i = n; i-- > 0;) {
      auto first = std::find_if(c.waits.begin() + c.wait_at[i], c.waits.begin() + c.wait_at[i] + c.wait_n[i], [](uint32_t j) { return j != kStart; });
      if (first == c.waits.begin() + c.wait_at[i] + c.wait_n[i]) continue;
      c.waits.erase(first);
      --c.wait_n[i];
      for (uint32_t k = i + 1; k < n; ++k) --c.wait_at[k];
      break;
    }
  c.signals.assign(n, 0);
  size_t most = 1;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t k = 0; k < c.wait_n[i]; ++k)
      if (const uint32_t j = c.waits[c.wait_at[i] + k]; j != kStart) c.signals[j] = 1;
    most = std::max<size_t>(most, c.wait_n[i]);
  }
  lane_flushes(c);
  c.ev.assign(n, nullptr);
  c.gather.assign(most, nullptr);
  c.lane_end.assign(c.used.size(), nullptr);
  if (ENCORE_TESTING_IS(concurrent_reorder)) {
    c.order = reordered(c, n);
  } else {
    c.order.resize(n);
    for (uint32_t i = 0; i < n; ++i) c.order[i] = i;
  }
  c.on = true;
  ENCORE_TESTING_DO(++testing::concurrent_binds);
  char how[96];
  std::snprintf(how, sizeof how, "concurrent, on %zu lanes (in-order queues)", c.used.size() + 1);
  tell(u, how);
}

// (run_unit ends the replay with a marker on lane 0, after the barrier at the end of this run)
void run_concurrent(UnitImpl& u, Binding& b) {
  ConcurrentOrder& c = b.conc;
  DeviceImpl& dev = *u.plan.devices[0];
  if (ENCORE_TESTING_IS(concurrent_reorder)) {
    // deterministic: the reordered items one after another on the in-order queue (any order the
    // lanes allow must give the step's results)
    for (uint32_t i : c.order) b.items[i].replay(b, b.items[i]);
    return;
  }
  struct Release {  // this replay's events, also when an enqueue throws (run_unit then finishes the queues)
    DeviceImpl& dev;
    ConcurrentOrder& c;
    ~Release() {
      for (NativeEvent*& e : c.ev)
        if (e) dev.release_event(std::exchange(e, nullptr));
      for (NativeEvent*& e : c.lane_end)
        if (e) dev.release_event(std::exchange(e, nullptr));
    }
  } release{dev, c};
  OwnedEvent start(&dev, dev.enqueue_marker());  // after the work queued before the run (flushed)
  try {
    for (uint32_t i : c.order) {
      BoundItem& x = b.items[i];
      for (uint32_t f = c.flush_before[i], l = 0; f; f >>= 1, ++l)
        if (f & 1) dev.flush_lane(l);
      const uint32_t n = c.wait_n[i];
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t j = c.waits[c.wait_at[i] + k];
        c.gather[k] = j == kStart ? start.get() : c.ev[j];
      }
      x.replay_after(x, c.lane[i], c.gather.data(), n, c.signals[i] ? &c.ev[i] : nullptr);
    }
    for (size_t k = 0; k < c.used.size(); ++k) c.lane_end[k] = dev.marker_after(c.used[k], nullptr, 0);  // flushed
  } catch (...) {
    // what was enqueued runs to its end before the error leaves the run (run_unit then finishes
    // lane 0, which knows nothing of the other lanes)
    for (uint32_t l : c.used) try {
        OwnedEvent(&dev, dev.marker_after(l, nullptr, 0)).wait();
      } catch (...) {
      }
    throw;
  }
  dev.enqueue_barrier(c.lane_end.data(), static_cast<uint32_t>(c.lane_end.size()));  // lane 0's later work waits for every lane
}

}  // namespace encore::detail
