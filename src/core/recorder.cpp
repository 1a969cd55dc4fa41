#include <atomic>

#include "encore/error.hpp"
#include "core/recorder.hpp"
#include "trace/trace.hpp"

namespace encore::detail {

namespace {
thread_local std::shared_ptr<Recorder> tl_recorder;
std::atomic<uint64_t> capture_ids{0};
// Threads whose tl_recorder is set (or was, by a thread that exited recording): while none, a
// call answers without reading the thread-local, which in a shared library costs a TLS lookup and
// the shared_ptr's init guard (~30 instructions, three times in an eager alloc and launch). A
// thread's own increment comes before its own reads, so relaxed order is enough.
std::atomic<uint32_t> threads_recording{0};

void clear_recorder() noexcept {
  tl_recorder.reset();
  threads_recording.fetch_sub(1, std::memory_order_relaxed);
}
}  // namespace

Recorder* current_recorder() {
  if (threads_recording.load(std::memory_order_relaxed) == 0) return nullptr;
  Recorder* r = tl_recorder.get();
  if (r && r->closed.load(std::memory_order_acquire)) {
    clear_recorder();
    return nullptr;
  }
  return r;
}

void start_recording(std::shared_ptr<Recorder> r) {
  if (current_recorder()) throw JitError("Capture: another capture is already recording on this thread");
  if (!r) return;
  threads_recording.fetch_add(1, std::memory_order_relaxed);
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
  if (threads_recording.load(std::memory_order_relaxed) != 0 && tl_recorder.get() == r) clear_recorder();
}

uint64_t next_capture_id() { return ++capture_ids; }

}  // namespace encore::detail
