#pragma once
// The in-flight bound of one unit (UnitOptions::max_in_flight, min_items_in_flight): how many of its
// replays may be queued on its devices and not yet complete, and the waits that keep it so.
//   InFlight f;  f.size(opt, items_replayed, host_reads, devices.size());
//   InFlight::Turn t = f.begin(devices);  // before a replay enqueues anything: waits if it must
//   ...enqueue the replay, its completion events into t.ends when given...
//   f.end(t, done, devices);
//
// The words: the bound is `depth` replays. Consecutive replays form `groups` of group_size(); only a
// group's last replay takes events (per device, the one that completes it there), and only a
// group's first replay waits, for the events of the group depth / group_size() groups back. So at
// most `depth` replays are in flight, at least depth - group_size() stay queued after a wait, and
// the replays in between cost no event and no wait (an event and a wait per replay cost a
// launch-bound loop ~7% on PoCL). A replay's `place` in [0, depth) names the staging copy its host
// uploads use: that copy's last user is in the group its group's first replay waited for.
//
// Sizing: depth is max_in_flight, raised for a short step so that min_items_in_flight items stay
// queued (at most 256 replays: a wait for a replay only a few launches back lets the device run dry
// while the host wakes up). Groups of k, k the largest divisor of the depth that leaves at least
// max(max_in_flight, 2) groups, or for a raised depth exactly 2 (half of it stays queued after a
// wait, and each wait is a sleep and a wake-up on the host); a raised depth with no such divisor
// goes up to the next multiple of that many groups. A step whose items leave host memory to the device (KindOps::host_reads: an
// upload from a host input, a native call) is never grouped: each replay takes its events, so
// staging copies are reused, and the unit freed, only after the replays that read them completed.
//
// A wait for each device's whole queue (DeviceImpl::queue_waits_done: Device::synchronize, a
// blocking read) since the last replay leaves nothing in flight: the next replay starts a group at
// place 0, so a loop that waits every call takes no event at all.
#include <cstdint>
#include <memory>
#include <vector>

#include "encore/execution_unit.hpp"
#include "core/owned_event.hpp"

namespace encore::detail {

class InFlight {
 public:
  void size(const UnitOptions& o, uint64_t items_replayed, bool host_reads, size_t devices);
  uint32_t depth() const noexcept { return depth_; }  // 0: unbounded (no events, host uploads block)
  uint32_t group_size() const noexcept { return every_; }

  // One replay's turn, from begin to end.
  struct Turn {
    uint32_t place = 0;          // its staging copy, in [0, depth)
    OwnedEvent* ends = nullptr;  // [device]: it ends its group, and its completion events go here
  };
  // Waits, when this replay starts a group, for the group `groups` back.
  Turn begin(const std::vector<std::shared_ptr<DeviceImpl>>& devices);
  // After the replay enqueued its whole step; `done` ([device], given): the caller's completion
  // events, shared with the group's when this replay ends it. Not called for a replay that failed:
  // its place is used again.
  void end(const Turn& t, OwnedEvent* done, const std::vector<std::shared_ptr<DeviceImpl>>& devices);
  // Waits for every replay in flight that took events: the unit's own work, never a whole queue.
  // The current group's replays took none and need none: a unit groups only when its replays leave
  // no host memory to the device, and the device memory they use is reused only by work queued
  // after them on the same in-order queue. (A failed replay was reported when it was enqueued or
  // waited for.)
  void wait() noexcept;
  // Before the unit's memory goes: wait(), or, unbounded (no events kept), each device's queue.
  void settle(const std::vector<std::shared_ptr<DeviceImpl>>& devices);

  // For the tests: the current group's index among the groups, how many of its replays ran, the
  // events kept ([group][device]).
  uint32_t group() const noexcept { return group_; }
  uint32_t ran_in_group() const noexcept { return ran_; }
  const std::vector<OwnedEvent>& events() const noexcept { return ends_; }

 private:
  std::vector<OwnedEvent> ends_;
  uint32_t depth_ = 0, every_ = 1;
  uint32_t group_ = 0, ran_ = 0;
  // per device: its queue_waits_begun after the last replay's enqueues (a whole-queue wait that
  // took a later ticket covers that replay)
  std::vector<uint64_t> waits_seen_;
};

}  // namespace encore::detail
