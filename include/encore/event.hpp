#pragma once
// Event: completion of enqueued work (a unit's replay, everything queued on a device so far).
//   encore::Event done = unit.run();            // enqueue the step, get its completion
//   engine_render(...); done.wait();             // block only when the result is needed
//   unit.run({done});                            // or order later work after it, without a host wait
// An engine's cl_events come in (and encore's go out) through encore/opencl.hpp. An empty Event
// (default-constructed) is already complete. Events are cheap shared handles; any thread may wait.
#include <memory>

#include "encore/export.hpp"

namespace encore {

namespace detail { struct EventImpl; }

class ENCORE_API Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<detail::EventImpl> impl) : impl_(std::move(impl)) {}
  // Blocks until the work completed; DeviceError when it failed on the device.
  void wait() const;
  // Whether the work completed, without blocking.
  bool done() const;
  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<detail::EventImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::EventImpl> impl_;
};

}  // namespace encore
