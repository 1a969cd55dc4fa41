#pragma once
// One device: the state the core keeps for it and the backend interface the OpenCL and NULL
// devices implement. Nothing here is installed.
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
#include "core/signature_parser.hpp"

namespace encore::detail {

// A backend's memory object (a cl_mem on OpenCL, host bytes on NULL), opaque to the core.
struct NativeMem;

// A kernel object with its arguments set; set arguments stay set between launches.
struct BackendKernel {
  virtual ~BackendKernel() = default;
  virtual void set_arg(uint32_t index, size_t size, const void* value) = 0;
  virtual void set_buffer(uint32_t index, NativeMem* mem) = 0;
  virtual void set_local(uint32_t index, size_t bytes) = 0;
  // The most work items per work group this kernel can launch with on its device (OpenCL:
  // CL_KERNEL_WORK_GROUP_SIZE, read once when the kernel object is made; it may be below the
  // device's max_work_group_size for a kernel heavy in registers or local memory).
  virtual size_t max_work_group_size() const = 0;
  // The __local memory the kernel declares itself (OpenCL: CL_KERNEL_LOCAL_MEM_SIZE, read with the
  // kernel object, before any __local argument is set); __local arguments come on top.
  virtual uint64_t local_mem_bytes() const { return 0; }
  // Kernel::work_group_info (queried when asked: never on a launch or replay path).
  virtual WorkGroupInfo work_group_info() const = 0;
};

struct BackendProgram {
  virtual ~BackendProgram() = default;
  virtual std::unique_ptr<BackendKernel> create_kernel(const std::string& name) = 0;
  virtual std::vector<unsigned char> binary() = 0;
};

struct BuildResult {
  std::unique_ptr<BackendProgram> program;
  std::vector<KernelSignature> kernels;
};

class Allocator;
struct DeviceImpl;
struct ProgramImpl;

// A backend's event object (a cl_event on OpenCL), opaque to the core.
struct NativeEvent;

// One device. The backend implements memory, transfers, launches and builds; the core does the rest.
struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  DeviceInfo info;
  std::unique_ptr<Allocator> allocator;
  std::mutex programs_mu;
  // (source, options + the included headers' bytes) -> program (src/core/program.cpp), while any handle (a Kernel, an ExecItem) keeps it: a strong cache
  // would make a cycle with the program's own reference to its device
  std::map<std::pair<std::string, std::string>, std::weak_ptr<ProgramImpl>> programs;
  std::atomic<bool> programs_dirty{false};  // a program saw a new launch configuration since its last save
  bool profiling = false;                   // launches can report device time

  DeviceImpl();
  virtual ~DeviceImpl();
  virtual bool is_null() const { return false; }
  virtual NativeMem* raw_alloc(size_t bytes) = 0;
  virtual void raw_free(NativeMem* mem) = 0;
  // A handle for bytes [offset, offset+bytes) of `root` usable as a kernel argument.
  virtual NativeMem* make_view(NativeMem* root, size_t offset, size_t bytes) = 0;
  virtual void free_view(NativeMem* view) = 0;
  virtual void write(NativeMem* root, size_t offset, const void* src, size_t n, bool blocking) = 0;
  virtual void read(NativeMem* root, size_t offset, void* dst, size_t n) = 0;
  // A read that does not wait: `dst` holds the bytes once the returned event completes (null: the
  // read is complete already). The caller waits for and releases the event.
  virtual NativeEvent* read_async(NativeMem* root, size_t offset, void* dst, size_t n) {
    read(root, offset, dst, n);
    return nullptr;
  }
  virtual void copy(NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t n) = 0;
  // Sets bytes [offset, offset + n) of `root` to `pattern` repeated (n and offset are multiples of
  // pattern_bytes, a power of two up to 128: clEnqueueFillBuffer's rule). Enqueued like a copy;
  // `pattern` is read before the call returns.
  virtual void fill(NativeMem* root, size_t offset, const void* pattern, size_t pattern_bytes, size_t n) = 0;
  // Copy from a root on another device, complete when it returns (NULL); false when the backend
  // cannot (then: copy_peer between async peers, else through host memory).
  virtual bool copy_from(DeviceImpl& src_dev, NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t n) = 0;
  // Replay's cross-device copies (src/unit/sync.cpp): true when a copy from `src` can run on this
  // queue asynchronously to src's queue (one context). The caller then orders the two queues with
  // markers and barriers for exactly the items the copy depends on, and enqueues it by copy_peer:
  // after `waits` (null entries skipped), setting `*done` (when given) to the copy's own event.
  virtual bool async_peer(const DeviceImpl& /*src*/) const { return false; }
  virtual void copy_peer(DeviceImpl& src_dev, NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t n,
                         NativeEvent* const* waits, uint32_t n_waits, NativeEvent** done);
  // Later work on this queue starts after `evs` (markers of this context's queues; null entries are
  // skipped) have completed, without a host wait.
  virtual void enqueue_barrier(NativeEvent* const* /*evs*/, uint32_t /*n*/) {}
  // Enqueues; with device_ns set, waits and reports the device time.
  virtual void launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, uint64_t* device_ns) = 0;
  virtual void finish() = 0;
  // Submits what is queued (clFlush): before an event is handed to code that may only poll it.
  virtual void flush() {}
  // Waits for the queue and reads the device clock after everything queued so far (a profiling
  // marker's end time). False where the queue has no profiling (then callers use wall time).
  virtual bool device_clock(uint64_t* /*ns*/) { return false; }
  // Events. A marker completes when everything enqueued so far has finished; null where work is
  // complete when its call returns (NULL). Markers are released with release_event.
  virtual NativeEvent* enqueue_marker() { return nullptr; }
  virtual void wait_event(NativeEvent* /*ev*/) {}
  virtual bool event_done(NativeEvent* /*ev*/) { return true; }
  virtual void retain_event(NativeEvent* /*ev*/) {}
  // A launch with its own completion event where the backend has one (traces; a replay's last
  // kernel on a device, whose event bounds the work in flight). Not flushed: see flush().
  virtual NativeEvent* launch_traced(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local) {
    launch(k, dims, global, local, nullptr);
    return enqueue_marker();
  }
  // Device start and end of a completed event's command, where the queue profiles.
  virtual bool event_times(NativeEvent* /*ev*/, uint64_t* /*start_ns*/, uint64_t* /*end_ns*/) { return false; }
  virtual void release_event(NativeEvent* /*ev*/) noexcept {}
  // Waits for `ev` and releases it, also when the wait throws.
  void wait_release(NativeEvent* ev);
  // Later work on this queue waits for `events` without blocking the host where the backend can
  // (events of its own context); others are waited for on the host first.
  virtual void enqueue_wait(std::span<const Event> events) {
    for (const Event& e : events) e.wait();
  }
  // Builds from source, or from `binary` when given (throws on a bad binary so the caller recompiles).
  // `signatures`: the parameter lists read from the source (or stored with the cached binary); null
  // when they could not be read: then the backend finds them itself (OpenCL: a metadata build).
  virtual BuildResult build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                            const std::vector<KernelSignature>* signatures) = 0;
  virtual std::string cache_key_prefix() const = 0;  // device name + driver version
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
