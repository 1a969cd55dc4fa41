// The in-flight bound (in_flight.hpp): its sizing, and each replay's turn.
#include "unit/in_flight.hpp"

#include <algorithm>

namespace encore::detail {

void InFlight::size(const UnitOptions& o, uint64_t items_replayed, bool host_reads, size_t devices) {
  depth_ = 0;
  every_ = 1;
  if (o.max_in_flight > 0) {
    const uint64_t per = std::max<uint64_t>(items_replayed, 1);
    const uint64_t for_items = std::min<uint64_t>((o.min_items_in_flight + per - 1) / per, 256);
    depth_ = static_cast<uint32_t>(std::max<uint64_t>(o.max_in_flight, for_items));
    // two groups at least, so that waiting for the oldest leaves the others queued; a depth raised
    // for a short step, two groups exactly: half the depth (min_items_in_flight / 2 items and more)
    // stays queued after a wait, and the waits come half as often as with four (a one-kernel
    // stencil on PoCL, raw OpenCL, 64 in flight: 4 groups of 16 cost 1.16x an unbounded loop, 2 of
    // 32 1.07x: each wait is a sleep and a wake-up that takes a core from the device's workers)
    const bool raised = for_items > o.max_in_flight;
    const uint32_t groups = raised ? 2 : std::max<uint32_t>(o.max_in_flight, 2);
    for (uint32_t k = host_reads ? 0 : depth_ / groups; k > 1; --k)
      if (depth_ % k == 0) {
        every_ = k;
        break;
      }
    // 7 for a 10-kernel step, 13 for 5 kernels: up to the next multiple of the groups, still at
    // least min_items_in_flight items
    const uint32_t up = (depth_ + groups - 1) / groups * groups;
    if (!host_reads && raised && every_ == 1 && up <= 256 && up / groups > 1) {
      depth_ = up;
      every_ = up / groups;
    }
  }
  ends_.clear();
  ends_.resize(static_cast<size_t>(depth_ / every_) * devices);
  waits_seen_.assign(devices, 0);
  group_ = ran_ = 0;
}

InFlight::Turn InFlight::begin(const std::vector<std::shared_ptr<DeviceImpl>>& devices) {
  if (ends_.empty()) return {};
  const size_t nd = devices.size();
  if ((group_ | ran_) != 0) {
    bool waited = true;  // every device's whole queue, since the last replay queued its work
    for (size_t d = 0; d < nd && waited; ++d) waited = devices[d]->queue_waits_done.load() > waits_seen_[d];
    if (waited) group_ = ran_ = 0;
  }
  OwnedEvent* slot = &ends_[group_ * nd];
  if (ran_ == 0)
    for (size_t d = 0; d < nd; ++d) slot[d].wait_reset();
  return {group_ * every_ + ran_, ran_ + 1 == every_ ? slot : nullptr};
}

void InFlight::end(const Turn& t, OwnedEvent* done, const std::vector<std::shared_ptr<DeviceImpl>>& devices) {
  const size_t nd = devices.size();
  if (t.ends) {
    if (done)
      for (size_t d = 0; d < nd; ++d) t.ends[d] = done[d].share();
    group_ = (group_ + 1) % (depth_ / every_);
    ran_ = 0;
  } else if (!ends_.empty()) {
    ++ran_;
  }
  // read after this replay's last enqueue: a queue wait that takes a later ticket covers it
  for (size_t d = 0; d < nd; ++d) waits_seen_[d] = devices[d]->queue_waits_begun.load();
}

void InFlight::wait() noexcept {
  for (OwnedEvent& e : ends_) try {
      e.wait_reset();
    } catch (...) {
    }
  ran_ = 0;  // the next replay starts a group (its staging copies are free)
}

void InFlight::settle(const std::vector<std::shared_ptr<DeviceImpl>>& devices) {
  if (depth_ != 0) return wait();
  for (auto& d : devices) d->finish();
}

}  // namespace encore::detail
