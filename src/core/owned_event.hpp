#pragma once
// OwnedEvent: the core's handle for one backend event (a NativeEvent of one device's queue, from
// enqueue_marker, launch_traced, read_async, a kind's replay_event). The backends hand events out
// raw; the core holds each one through this handle, so it is released exactly once, also where a
// wait or an enqueue throws.
//   OwnedEvent ev(&dev, dev.enqueue_marker());
//   ev.wait_reset();  // waits, then releases (also when the wait throws)
// A plain pointer pair, move-only, allocating nothing: arrays of them sit on the replay path. A null
// event (none taken, or the NULL device, where work completes when its call returns) is complete.
#include <cstddef>
#include <utility>

#include "core/device_impl.hpp"

namespace encore::detail {

class OwnedEvent {
 public:
  OwnedEvent() noexcept = default;
  OwnedEvent(std::nullptr_t) noexcept {}  // implicit: "no event" where a function takes one
  // Takes `ev` (may be null), an event of `dev`'s queue.
  OwnedEvent(DeviceImpl* dev, NativeEvent* ev) noexcept : dev_(dev), ev_(ev) {}
  OwnedEvent(OwnedEvent&& o) noexcept : dev_(o.dev_), ev_(std::exchange(o.ev_, nullptr)) {}
  OwnedEvent& operator=(OwnedEvent&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = o.dev_;
      ev_ = std::exchange(o.ev_, nullptr);
    }
    return *this;
  }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  ~OwnedEvent() { reset(); }

  explicit operator bool() const noexcept { return ev_ != nullptr; }
  NativeEvent* get() const noexcept { return ev_; }
  DeviceImpl* device() const noexcept { return dev_; }
  // A wait list of one entry, for the backend calls that take arrays (null entries are skipped).
  NativeEvent* const* list() const noexcept { return &ev_; }

  void wait() const {
    if (ev_) dev_->wait_event(ev_);
  }
  bool done() const { return !ev_ || dev_->event_done(ev_); }
  // Waits and releases; released also when the wait throws, so a failed command is reported by one
  // wait, not again by every later one on the same handle.
  void wait_reset() {
    if (!ev_) return;
    OwnedEvent e(std::move(*this));
    e.wait();
  }
  void reset() noexcept {
    if (ev_) dev_->release_event(std::exchange(ev_, nullptr));
  }
  // Another owner of the same event (retained).
  OwnedEvent share() const {
    if (ev_) dev_->retain_event(ev_);
    return OwnedEvent(dev_, ev_);
  }
  // Gives the event up, unreleased: the caller owns it now.
  NativeEvent* release() noexcept { return std::exchange(ev_, nullptr); }
  // Where a backend call that sets an event (a `NativeEvent** done` parameter) writes an event of
  // `dev`'s queue into this handle; the one held before is released.
  NativeEvent** out(DeviceImpl* dev) noexcept {
    reset();
    dev_ = dev;
    return &ev_;
  }

 private:
  DeviceImpl* dev_ = nullptr;
  NativeEvent* ev_ = nullptr;
};

}  // namespace encore::detail
