#pragma once
// The interface behind a native item: work that native code enqueues itself, recorded like any item
// (encore::opencl::enqueue_native wraps a user's function in one; encore::Communicator's collectives
// are split-phase ones). Internal: the backends and libencore-mpi implement it; users reach it
// through those public entry points.
//   detail::run_native(dev, std::make_shared<MyCall>(...), {encore::inout(buf)}, "my call");
#include <memory>
#include <string>
#include <vector>

#include "encore/device.hpp"
#include "encore/exec_item.hpp"
#include "encore/export.hpp"

namespace encore {

// One native call. Its buffers are the item's args.
struct NativeCall {
  virtual ~NativeCall() = default;
  // Enqueues the work on `dev`'s queue over the buffers' memory, in argument order.
  virtual void run(detail::DeviceImpl& dev, detail::NativeMem* const* mems, size_t n) const = 0;
  // Split-phase work (a collective): on replay begin() runs at the item's place and must not wait
  // for the device; finish() runs just before the first later item that touches the same buffers
  // (or at the end of the step), so items in between that do not depend on it are enqueued first
  // and overlap with it. Finishes run in the order of the items. run() equals begin(); finish().
  // cancel() drops a begun call after an error elsewhere in the step.
  virtual bool split() const { return false; }
  virtual void begin(detail::DeviceImpl& dev, detail::NativeMem* const* mems, size_t n) const { run(dev, mems, n); }
  virtual void finish(detail::DeviceImpl& /*dev*/, detail::NativeMem* const* /*mems*/, size_t /*n*/) const {}
  virtual void cancel(detail::DeviceImpl& /*dev*/) const noexcept {}
  std::shared_ptr<detail::DeviceImpl> dev;
};

namespace detail {
// Runs `call` over `buffers` (each with its access stated: in, out, inout) on `dev`: now, and on every
// replay of a capture that records it.
ENCORE_API void run_native(const Device& dev, std::shared_ptr<const NativeCall> call, std::vector<Arg> buffers, std::string name);
}  // namespace detail

}  // namespace encore
