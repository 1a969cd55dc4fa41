#include <atomic>

#include "internal.hpp"

namespace encore::detail {

namespace {
thread_local Recorder* tl_recorder = nullptr;
std::atomic<uint64_t> capture_ids{0};
}  // namespace

Recorder* current_recorder() { return tl_recorder; }
void set_current_recorder(Recorder* r) { tl_recorder = r; }
uint64_t next_capture_id() { return ++capture_ids; }

}  // namespace encore::detail
