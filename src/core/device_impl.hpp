#pragma once
// One device: the state the core keeps for it over the backend interface (core/backend.hpp) that
// the OpenCL and NULL devices implement. Nothing here is installed.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>
#include "encore/device.hpp"
#include "encore/event.hpp"
#include "encore/program.hpp"
#include "core/backend.hpp"
#include "core/signature_parser.hpp"

namespace encore::detail {

class Allocator;
struct ProgramImpl;

// One device: the backend interface (core/backend.hpp: memory, queue, events, compiler) that the OpenCL
// and NULL devices implement, and the state the core keeps for it.
struct DeviceImpl : std::enable_shared_from_this<DeviceImpl>, MemoryBackend, QueueBackend, EventBackend, CompilerBackend {
  DeviceInfo info;
  std::unique_ptr<Allocator> allocator;
  std::mutex programs_mu;
  // (source, options + the included headers' bytes) -> program (src/core/program.cpp), while any handle (a Kernel, an ExecItem) keeps it: a strong cache
  // would make a cycle with the program's own reference to its device
  std::map<std::pair<std::string, std::string>, std::weak_ptr<ProgramImpl>> programs;
  std::atomic<bool> programs_dirty{false};  // a program saw a new launch configuration since its last save
  bool profiling = false;                   // event_times reports device time (set at open)
  // What copies between devices are chosen from (copy_path, src/exec/enqueue.hpp), set by the
  // backend at open and fixed after, so choosing costs no virtual call or cast:
  // the context its queue belongs to (OpenCL: the cl_context); null: none shared with any other device
  const void* context = nullptr;
  // NativeMem handles are host addresses and every call completes before it returns (NULL): a copy
  // between two such devices is a memmove
  bool host_memory = false;

  // Completions of the whole queue (finish, and blocking reads: the queue is in order), so the
  // in-flight bound knows when a unit's earlier replays have completed without an event of theirs
  // (src/unit/replay.cpp). Each takes a ticket before it waits and publishes it after: work queued
  // before `queue_waits_begun` read t has completed once `queue_waits_done` > t.
  std::atomic<uint64_t> queue_waits_begun{0}, queue_waits_done{0};

  DeviceImpl();
  virtual ~DeviceImpl();
  // Waits until everything enqueued so far has completed (QueueBackend::finish_queue, counted).
  void finish();
  // `n` host bytes at `dst` <- root, waiting for the work queued before (read_queue, counted).
  void read(NativeMem* root, size_t offset, void* dst, size_t n);
  // The NULL device: runs no kernel (results are not computed).
  virtual bool is_null() const { return false; }
  // Whether a copy from `src` can run on this queue asynchronously to src's queue (another device
  // of this one's context): then copy_peer, ordered by markers and barriers.
  bool async_peer(const DeviceImpl& src) const { return context && context == src.context && &src != this; }
  // Waits for the queue and reads the device clock after everything queued so far (a marker's end
  // time). False where the queue has no profiling (then callers use wall time).
  bool device_clock(uint64_t* ns);
  // `parts` new sub-devices (Device::split); DeviceError where the backend cannot split.
  virtual std::vector<std::shared_ptr<DeviceImpl>> split(unsigned parts);
};


std::shared_ptr<DeviceImpl> open_opencl(int index);   // "CL:N"; -1: default
std::vector<DeviceInfo> list_opencl();
std::shared_ptr<DeviceImpl> open_null();



// Process exit (src/core/device.cpp): once the exit drain has finished every open device's queue, exiting()
// is true and backends make no more driver calls (the driver may have torn its own state down
// before the statics that still hold encore objects are destroyed).
bool exiting() noexcept;
void save_dirty_programs(DeviceImpl& d);

}  // namespace encore::detail
