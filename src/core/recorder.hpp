#pragma once
// The recording of one capture on one thread (src/core/recorder.cpp).
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>
#include "encore/exec_item.hpp"

namespace encore::detail {

struct AccessChecks;  // src/exec/access_check.cpp

// What a capture records on one thread. The thread holds a reference while recording, so an owner
// that goes away on another thread (a Capture destroyed elsewhere) only marks it closed: the
// recording thread lets go at its next launch, never writing into freed memory.
struct Recorder {
  uint64_t id = 0;
  double started_us = 0;  // for the trace's "record" span
  bool allow_copyout = false;
  bool check_access = false;  // try launches' access claims on the data (CaptureOptions::check_access)
  std::vector<ExecItem> items;
  // host inputs (slot = index): a copyin whose source lies inside one is recorded as from it
  std::vector<std::pair<const unsigned char*, size_t>> hosts;
  std::atomic<bool> closed{false};
  uint64_t allocs = 0;  // buffers made during the capture (BufferImpl::serial)
  uint32_t dry = 0;     // > 0: tracing an alternative not taken (src/exec/flow.hpp)
  // launches' in claims whose reads are still queued (made at the first; compared at the end)
  std::shared_ptr<AccessChecks> access_checks;
};
// The recorder of this thread, null when none (or its owner closed it).
Recorder* current_recorder();
// Makes `r` this thread's recorder (JitError when one is already recording).
void start_recording(std::shared_ptr<Recorder> r);
// A new capture's recorder, started on this thread.
std::shared_ptr<Recorder> start_recording(bool allow_copyout);
// Stops `r` if it is this thread's recorder; from another thread, closes it. Never throws.
void stop_recording(Recorder* r) noexcept;
uint64_t next_capture_id();

}  // namespace encore::detail
