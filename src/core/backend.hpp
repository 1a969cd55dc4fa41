#pragma once
// The backend interface, by concern: the memory a device holds (MemoryBackend), the queue that runs
// its work (QueueBackend), the events that order and complete it (EventBackend) and the compiler
// that builds its programs (CompilerBackend), plus the program and kernel objects a build makes.
// The OpenCL (src/opencl) and NULL (src/null) devices implement all four through DeviceImpl (core/device_impl.hpp), which adds the state the core keeps
// per device. Nothing here is installed.
//   NativeMem* m = dev.raw_alloc(n); dev.write(m, 0, host, n, true); dev.launch(k, 1, gws, lws, nullptr);
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/event.hpp"
#include "encore/program.hpp"
#include "core/signature_parser.hpp"

namespace encore::detail {

// A backend's memory object (a cl_mem on OpenCL, host bytes on NULL), opaque to the core.
struct NativeMem;
// A backend's event object (a cl_event on OpenCL), opaque to the core.
struct NativeEvent;
struct DeviceImpl;

// A kernel object with its arguments set; set arguments stay set between launches.
struct BackendKernel {
  virtual ~BackendKernel() = default;
  // Sets by-value argument `index` to `size` bytes at `value` (copied before it returns).
  virtual void set_arg(uint32_t index, size_t size, const void* value) = 0;
  // Sets argument `index` to a root or a view of the kernel's device.
  virtual void set_buffer(uint32_t index, NativeMem* mem) = 0;
  // Sets __local argument `index` to `bytes` of local memory per work group.
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

// A built program: the source of its kernel objects.
struct BackendProgram {
  virtual ~BackendProgram() = default;
  // A new kernel object for kernel `name` (one per launcher: eager work and each bound item).
  virtual std::unique_ptr<BackendKernel> create_kernel(const std::string& name) = 0;
  // The device binary for the disk cache; empty where there is none (NULL, or after exit's drain).
  virtual std::vector<unsigned char> binary() = 0;
};

struct BuildResult {
  std::unique_ptr<BackendProgram> program;
  std::vector<KernelSignature> kernels;
};

// The parameter lists a build checks its kernels against: ready (read from the source, or stored
// with a cached binary), or still being read beside the driver's build (a saved binary's), which
// the backend asks for only once the driver has built. get(): null where they could not be read.
//   d.build(source, options, &binary, BuildSignatures([&] { return lists_read_aside(); }));
class BuildSignatures {
 public:
  BuildSignatures(const std::vector<KernelSignature>* ready) : ready_(ready) {}  // NOLINT: a pointer is the usual case
  explicit BuildSignatures(std::function<const std::vector<KernelSignature>*()> later) : later_(std::move(later)) {}
  const std::vector<KernelSignature>* get() const { return later_ ? later_() : ready_; }

 private:
  const std::vector<KernelSignature>* ready_ = nullptr;
  std::function<const std::vector<KernelSignature>*()> later_;
};

// The memory of one device: roots (whole allocations) and views into them.
class MemoryBackend {
 public:
  // A new root of `bytes`; throws (DeviceError, OpenCLError) where the device has no room.
  virtual NativeMem* raw_alloc(size_t bytes) = 0;
  // Frees a root from raw_alloc; no work on any queue may still use it.
  virtual void raw_free(NativeMem* mem) = 0;
  // A handle for bytes [offset, offset+bytes) of `root` usable as a kernel argument.
  virtual NativeMem* make_view(NativeMem* root, size_t offset, size_t bytes) = 0;
  // Frees a handle from make_view (the root stays).
  virtual void free_view(NativeMem* view) = 0;

 protected:
  ~MemoryBackend() = default;
};

// The one in-order queue of a device: every command runs after the ones enqueued before it. Calls
// that say "waits" block the host; the others only enqueue. Offsets are from the start of a root.
class QueueBackend {
 public:
  // Root <- `n` host bytes at `src`. Not blocking: `src` must stay alive until the queue has read it.
  virtual void write(NativeMem* root, size_t offset, const void* src, size_t n, bool blocking) = 0;
  // `n` host bytes at `dst` <- root; waits (for the work queued before it, then the read).
  virtual void read_queue(NativeMem* root, size_t offset, void* dst, size_t n) = 0;
  // A read that does not wait: `dst` holds the bytes once the returned event completes (null: the
  // read is complete already). The caller waits for and releases the event.
  virtual NativeEvent* read_async(NativeMem* root, size_t offset, void* dst, size_t n) {
    read_queue(root, offset, dst, n);
    return nullptr;
  }
  // Sets bytes [offset, offset + n) of `root` to `pattern` repeated (n and offset are multiples of
  // pattern_bytes, a power of two up to 128: clEnqueueFillBuffer's rule). `pattern` is read before
  // the call returns.
  virtual void fill(NativeMem* root, size_t offset, const void* pattern, size_t pattern_bytes, size_t n) = 0;
  // dst <- src, `n` bytes between two roots of this device (not overlapping).
  virtual void copy(NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t n) = 0;
  // dst (this device) <- src (a root of `src_dev`, an async peer: DeviceImpl::async_peer), on this
  // queue after `waits` (null entries skipped; events of this context) instead of after src's
  // queue, setting `*done` (when given) to the copy's own event, submitted. The caller orders the
  // two queues (eager: whole queues, src/exec/enqueue.cpp; replay: src/unit/sync.cpp).
  virtual void copy_peer(const DeviceImpl& src_dev, NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t n,
                         NativeEvent* const* waits, uint32_t n_waits, NativeEvent** done);
  // Enqueues a launch of `k` (global and local sizes over `dims` dimensions; local null: the
  // driver's choice). `done` given: set to the launch's own completion event, not flushed (see
  // flush), or null where work is complete when the call returns (NULL); the caller releases it.
  virtual void launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent** done) = 0;
  // A launch with its own completion event (traces, timing, a replay's last kernel on a device).
  NativeEvent* launch_traced(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local) {
    NativeEvent* ev = nullptr;
    launch(k, dims, global, local, &ev);
    return ev;
  }
  // Waits until everything enqueued so far has completed.
  virtual void finish_queue() = 0;
  // Lanes: more in-order queues of this device beside its own (lane 0), for the replay of
  // independent items (src/unit/concurrent.cpp): each lane runs its commands in order, the lanes run
  // at once, and an item waits for items of other lanes through their events. Several in-order
  // queues rather than one out-of-order queue: on PoCL 3.1 eight independent chains of small
  // kernels ran 0.90x on two in-order queues and 1.07x on one out-of-order queue (docs/performance.md),
  // and in-order queues are the concurrency every OpenCL driver offers. open_lanes opens up to
  // `want` lanes in all (lane 0 included) at the first call that wants more (a unit's bind, never a
  // replay) and returns how many there are, at least 1 (NULL: just lane 0). Thread-safe. The calls
  // below enqueue on lane `lane` (< what open_lanes returned) after `waits` (`n` of them, null
  // entries skipped; events of this context), setting `*done` (when given) to the command's own
  // event, not flushed (flush_lane).
  virtual uint32_t open_lanes(uint32_t /*want*/) { return 1; }
  virtual void launch_after(uint32_t lane, BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local,
                            NativeEvent* const* waits, uint32_t n, NativeEvent** done);
  virtual void fill_after(uint32_t lane, NativeMem* root, size_t offset, const void* pattern, size_t pattern_bytes, size_t bytes,
                          NativeEvent* const* waits, uint32_t n, NativeEvent** done);
  virtual void copy_after(uint32_t lane, NativeMem* dst_root, size_t dst_off, NativeMem* src_root, size_t src_off, size_t bytes,
                          NativeEvent* const* waits, uint32_t n, NativeEvent** done);
  // A marker on lane `lane` after `waits` (n == 0: after every command enqueued on it so far),
  // submitted (flushed), so that a wait for it on another queue or the host cannot stall.
  virtual NativeEvent* marker_after(uint32_t lane, NativeEvent* const* waits, uint32_t n);
  // Submits what is queued on lane `lane`: before another lane's command waits for its events.
  virtual void flush_lane(uint32_t lane);
  // Later work on this queue waits for `events` without blocking the host where the backend can
  // (events of its own context); others are waited for on the host first.
  virtual void enqueue_wait(std::span<const Event> events) {
    for (const Event& e : events) e.wait();
  }

 protected:
  ~QueueBackend() = default;
};

// The events of a device's queue: markers, barriers, waits. Pure: a default could only be the NULL
// device's (work complete when its call returns), and a backend that forgot an override would
// then order and wait for nothing, silently.
class EventBackend {
 public:
  // Submits what is queued (clFlush): before an event is handed to code that may only poll it.
  virtual void flush() = 0;
  // Later work on this queue starts after `evs` (markers of this context's queues; null entries are
  // skipped) have completed, without a host wait.
  virtual void enqueue_barrier(NativeEvent* const* evs, uint32_t n) = 0;
  // A marker completes when everything enqueued so far has finished; null where work is complete
  // when its call returns (NULL). Markers are released with release_event.
  virtual NativeEvent* enqueue_marker() = 0;
  // Waits for `ev` (OpenCLError when its command failed).
  virtual void wait_event(NativeEvent* ev) = 0;
  // Whether `ev` has completed, without waiting (OpenCLError when its command failed).
  virtual bool event_done(NativeEvent* ev) = 0;
  // One more reference to `ev`, released by its own release_event.
  virtual void retain_event(NativeEvent* ev) = 0;
  // Drops one reference to `ev` (after the exit drain: nothing, the driver may be gone).
  virtual void release_event(NativeEvent* ev) noexcept = 0;
  // Device start and end of a completed event's command; false where the queue does not profile.
  // The one device-time query: launch timing and the device clock are built on it.
  virtual bool event_times(NativeEvent* ev, uint64_t* start_ns, uint64_t* end_ns) = 0;

 protected:
  ~EventBackend() = default;
};

// The compiler of one device.
class CompilerBackend {
 public:
  // Builds from source, or from `binary` when given (throws on a bad binary so the caller recompiles).
  // `signatures`: the parameter lists read from the source (or stored with the cached binary); null
  // when they could not be read: then the backend finds them itself (OpenCL: a metadata build).
  virtual BuildResult build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                            const BuildSignatures& signatures) = 0;
  // What makes a cached binary fit this device: its name, driver and version (the disk cache key's start).
  virtual std::string cache_key_prefix() const = 0;

 protected:
  ~CompilerBackend() = default;
};

}  // namespace encore::detail
