#include <atomic>

#include "encore/error.hpp"
#include "core/recorder.hpp"
#include "trace/trace.hpp"

namespace encore::detail {

namespace {
thread_local std::shared_ptr<Recorder> tl_recorder;
std::atomic<uint64_t> capture_ids{0};
}  // namespace

Recorder* current_recorder() {
  Recorder* r = tl_recorder.get();
  if (r && r->closed.load(std::memory_order_acquire)) {
    tl_recorder.reset();
    return nullptr;
  }
  return r;
}

void start_recording(std::shared_ptr<Recorder> r) {
  if (current_recorder()) throw JitError("Capture: another capture is already recording on this thread");
  tl_recorder = std::move(r);
}

std::shared_ptr<Recorder> start_recording(bool allow_copyout) {
  auto r = std::make_shared<Recorder>();
  r->id = next_capture_id();
  r->allow_copyout = allow_copyout;
  r->started_us = trace_active() ? trace_now_us() : 0;
  start_recording(r);
  return r;
}

void stop_recording(Recorder* r) noexcept {
  if (!r) return;
  r->closed.store(true, std::memory_order_release);
  if (tl_recorder.get() == r) tl_recorder.reset();
}

uint64_t next_capture_id() { return ++capture_ids; }

}  // namespace encore::detail
