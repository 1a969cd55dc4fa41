// Order between devices on replay. Each device runs its items in step order on its one in-order
// queue, so only copies between two devices of one context (run on the destination's queue while
// the source's queue goes on) need ordering, and each gets exactly its dependencies:
//   - it starts after the last item on the source device that wrote the bytes it reads (a marker
//     after that item; a marker at the start of the replay when no item of this replay wrote them);
//   - the first later item on the source device that overwrites those bytes starts after it;
//     when no item does, a barrier at the end of the replay does, so work after the replay (the
//     next replay, eager work) never overwrites bytes the copy has still to read.
// Every other item runs as soon as its own queue reaches it: independent work on two devices
// overlaps. Every write to a buffer happens on its own device's queue (kernels and native calls
// take only buffers of their device; copies run on the destination's queue), which is what makes
// "the items on the source device" the complete set of writers. Copies between contexts go
// through host memory with blocking calls (or are a memmove between NULL devices) and need nothing here.
// Split-phase native calls (collectives) are placed here too: a finish item where their results are
// first needed, so the replay loop stays one plain pass over its items.
#include <algorithm>

#include "core/native_call.hpp"
#include "exec/kind.hpp"
#include "unit/regions.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

const std::shared_ptr<DeviceImpl>& queue_of(const ExecItem& it) { return kind_of(it).queue(it); }

namespace {

// Per item: the regions it touches, and whether it writes each.
struct Touch {
  Region region;
  bool write;
};
using Touches = std::vector<std::vector<Touch>>;

// Split-phase native items (collectives) become two items of the replay: the begin at the item's
// place, and a finish placed before the first later item that touches any of its buffers (one-time
// items included, so a re-run of them waits too), or at the end. Finishes keep the order of the
// begins: a finish placed later than the next one's moves up to it.
void plan_split(const Plan& p, const Touches& touches, CrossSync& s) {
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  s.split.assign(n, 0);
  s.finish_before.resize(n + 1);
  std::vector<uint32_t> splits, place;
  for (uint32_t i = 0; i < n; ++i) {
    s.split[i] = p.items[i].native && p.items[i].native->split();
    if (!s.split[i]) continue;
    s.any_split = true;
    uint32_t at = n;
    for (uint32_t j = i + 1; j < n && at == n; ++j)
      for (const Touch& a : touches[i])
        for (const Touch& b : touches[j]) at = at == n && conflict(p, a.region, b.region) ? j : at;
    splits.push_back(i);
    place.push_back(at);
  }
  for (size_t k = splits.size(); k-- > 1;) place[k - 1] = std::min(place[k - 1], place[k]);
  for (size_t k = 0; k < splits.size(); ++k) s.finish_before[place[k]].push_back(splits[k]);
}

// The entry a cross-device item reads (its operand on another device than its queue) and its device.
uint32_t read_entry(const Plan& p, uint32_t i) {
  const DeviceImpl* q = queue_of(p.items[i]).get();
  for (const ItemAccess& a : p.access[i])
    if (p.entries[a.entry].captured.impl()->dev.get() != q) return a.entry;
  return p.access[i].front().entry;
}
const DeviceImpl* read_device(const Plan& p, uint32_t i) { return p.entries[read_entry(p, i)].captured.impl()->dev.get(); }

}  // namespace

CrossSync plan_sync(const Plan& p) {
  CrossSync s;
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  s.signal.assign(n, -1);
  s.waits.resize(n);
  s.peer.assign(n, 0);
  s.end.resize(p.devices.size());
  // the regions are read only by split-phase items and copies between devices: a step without
  // either (most) makes none (a vector per item was a tenth of a large capture's allocations)
  Touches touches;
  const bool need = std::any_of(p.items.begin(), p.items.end(), [](const ExecItem& it) { return it.native && it.native->split(); }) ||
                    std::any_of(p.steps.begin(), p.steps.end(), [](const PlanStep& st) { return st.cross_device; });
  if (need) {
    touches.resize(n);
    for (uint32_t i = 0; i < n; ++i)
      for (const ItemAccess& a : p.access[i]) touches[i].push_back({region_of(p.entries[a.entry]), has(a.access, Access::out)});
  }
  plan_split(p, touches, s);
  bool any = false;
  for (uint32_t i = 0; i < n; ++i) {
    // an item reading another device's bytes (a copy between devices) whose variant is the peer
    // copy, asynchronous to the other queue (the copy's bind picks the same: copy_item.cpp)
    if (!p.steps[i].cross_device) continue;
    const DeviceImpl* from = read_device(p, i);
    if (from && copy_path(*queue_of(p.items[i]), *from) == CopyPath::peer) s.peer[i] = any = true;
  }
  if (!any) return s;

  auto device_index = [&](const DeviceImpl* d) {
    return static_cast<uint32_t>(std::find_if(p.devices.begin(), p.devices.end(), [&](auto& x) { return x.get() == d; }) - p.devices.begin());
  };
  auto new_slot = [&](uint32_t device) {
    s.slot_device.push_back(device);
    return s.slots++;
  };
  auto signal = [&](uint32_t i) {
    if (s.signal[i] < 0) s.signal[i] = static_cast<int32_t>(new_slot(device_index(queue_of(p.items[i]).get())));
    return static_cast<uint32_t>(s.signal[i]);
  };
  std::vector<int32_t> start_slot(p.devices.size(), -1);
  auto writes_into = [&](uint32_t j, const Region& r) {
    return std::any_of(touches[j].begin(), touches[j].end(), [&](const Touch& t) { return t.write && conflict(p, t.region, r); });
  };
  for (uint32_t c = 0; c < n; ++c) {
    if (!s.peer[c]) continue;
    const Region read = region_of(p.entries[read_entry(p, c)]);
    const DeviceImpl* from = read_device(p, c);
    // the writers before it on the source queue, back to the last one every replay runs (one-time
    // items run only when rebuilt; a marker after one that did not run is skipped)
    bool covered = false;
    for (uint32_t j = c; j-- > 0;)
      if (queue_of(p.items[j]).get() == from && writes_into(j, read)) {
        s.waits[c].push_back(signal(j));
        if (!p.one_time[j]) {
          covered = true;
          break;
        }
      }
    if (!covered) {
      uint32_t d = device_index(from);
      if (start_slot[d] < 0) {
        start_slot[d] = static_cast<int32_t>(new_slot(d));
        s.start.push_back({d, static_cast<uint32_t>(start_slot[d])});
      }
      s.waits[c].push_back(static_cast<uint32_t>(start_slot[d]));
    }
    // the overwriters after it on the source queue, up to the first one every replay runs
    covered = false;
    for (uint32_t j = c + 1; j < n && !covered; ++j)
      if (queue_of(p.items[j]).get() == from && writes_into(j, read)) {
        s.waits[j].push_back(signal(c));
        covered = !p.one_time[j];
      }
    if (!covered) s.end[device_index(from)].push_back(signal(c));
  }
  for (auto& w : s.waits) {
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
  }
  return s;
}

}  // namespace encore::detail
