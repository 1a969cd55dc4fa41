#pragma once
// Internal representation behind the public handles, and the backend interface that the OpenCL
// and NULL devices implement. Nothing here is installed.
#include <array>
#include <atomic>
#include <optional>
#include <span>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "encore/device.hpp"
#include "encore/event.hpp"
#include "encore/exec_item.hpp"
#include "encore/log.hpp"
#include "encore/program.hpp"
#include "encore/variable.hpp"
#include "core/signature_parser.hpp"

namespace encore::detail {

struct VarState {
  std::string name;
  VarType type = VarType::i64;
  int64_t min = 0, max = 0;
  double fmin = 0, fmax = 0;
  int64_t init_i = 0;  // the value before any binding
  double init_f = 0;
};

// The values eager work on this thread sees for a variable (Variable's rule: the innermost TinyJit
// call's BoundVars, else this thread's last bind(), else the initial value).
struct VarValue {
  int64_t i = 0;
  double f = 0;
};
VarValue var_value(const VarState& v);
using VarScope = BindingScope;

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

// A backend's event object (a cl_event on OpenCL), opaque to the core.
struct NativeEvent;

// What an encore::Event refers to.
struct EventImpl {
  virtual ~EventImpl() = default;
  virtual void wait() = 0;
  virtual bool done() = 0;
};

// An event of one device's queue; released with it.
struct QueueEvent final : EventImpl {
  QueueEvent(std::shared_ptr<DeviceImpl> d, NativeEvent* e) : dev(std::move(d)), ev(e) {}
  ~QueueEvent() override;
  void wait() override;
  bool done() override;
  std::shared_ptr<DeviceImpl> dev;
  NativeEvent* ev;
};

// Completes when every part has.
struct AllEvent final : EventImpl {
  std::vector<std::shared_ptr<EventImpl>> parts;
  void wait() override {
    for (auto& p : parts) p->wait();
  }
  bool done() override {
    for (auto& p : parts)
      if (!p->done()) return false;
    return true;
  }
};

// One device. The backend implements memory, transfers, launches and builds; the core does the rest.
struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  DeviceInfo info;
  std::unique_ptr<Allocator> allocator;
  std::mutex programs_mu;
  // (source, options) -> program, while any handle (a Kernel, an ExecItem) keeps it: a strong cache
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

class Allocator {
 public:
  explicit Allocator(DeviceImpl* dev) : dev_(dev) {}
  ~Allocator();
  // Returns a root handle of at least `bytes` and the bytes it really holds.
  NativeMem* alloc(size_t bytes, size_t* got);
  void free(NativeMem* mem, size_t bytes) noexcept;
  void release_cache() noexcept;
  AllocatorStats stats() const;
  static size_t size_class(size_t bytes);

 private:
  DeviceImpl* dev_;
  mutable std::mutex mu_;
  std::multimap<size_t, NativeMem*> cache_;
  AllocatorStats st_;
};

// The most bytes one buffer can hold. Larger requests are an ArgumentError, so byte arithmetic on
// sizes and offsets (offset + bytes, allocator size classes) never wraps.
constexpr size_t max_buffer_bytes = SIZE_MAX >> 1;
// count * size(dtype); ArgumentError naming `what`, the request and the limit when over it.
size_t checked_bytes(const char* what, size_t count, DType dtype);

struct BufferImpl {
  std::shared_ptr<DeviceImpl> dev;
  DType dtype = DType::f32;
  size_t count = 0, nbytes = 0;
  std::shared_ptr<BufferImpl> base;  // set for views (always a root)
  size_t offset = 0;                 // bytes into the root
  std::string name;
  uint64_t capture_id = 0;           // the capture during which this handle was created, 0 if none
  // root only. `mem` is set once, under view_mu, with release order (alloc_bytes before it), so any
  // thread that loads it non-null (acquire, or the seq_cst of a plain read) sees a complete allocation.
  std::atomic<NativeMem*> mem{nullptr};
  size_t alloc_bytes = 0;
  bool owned = true;                 // false for adopted native memory (released, not cached)
  std::atomic<uint64_t> version{0};
  // views only: the backend view handle, made on first use (set once under view_mu, like mem)
  std::atomic<NativeMem*> view_mem{nullptr};
  std::mutex view_mu;

  BufferImpl() = default;
  ~BufferImpl();
  BufferImpl* root() { return base ? base.get() : this; }
  void ensure_allocated();
  // Handle to pass as a kernel argument.
  NativeMem* handle();
  void bump() { root()->version.fetch_add(1, std::memory_order_relaxed); }
};

// `count` elements of `t` at `byte_offset` into `of` (a view, or `of`'s root when that is all of
// it), without the alignment check of Buffer::view: for the byte ranges of partial transfers (never
// a kernel argument) and for rebasing views that passed the check at capture. The range must fit.
Buffer region(const Buffer& of, DType t, size_t byte_offset, size_t count);

// Views of recently bound inputs at one place (`count` elements of `dtype` at byte `rel`), so a
// replay that rotates among inputs allocates nothing once each input was seen: up to kMax inputs
// are remembered (then the oldest is replaced). The inputs are held, so a freed input's address can
// never be mistaken for a new one.
struct ViewCache {
  static constexpr size_t kMax = 64;
  std::vector<std::pair<Buffer, Buffer>> slots;
  uint32_t next = 0;
  // `in` itself when the place is all of it, else a cached or new view of it.
  Buffer get(const Buffer& in, DType dtype, uint64_t rel, size_t count);
};

struct ProgramImpl {
  std::shared_ptr<DeviceImpl> dev;
  std::string source, options;
  std::unique_ptr<BackendProgram> backend;
  std::vector<KernelSignature> kernels;
  std::string disk_path, disk_key;  // disk_path empty when the disk cache is off
  bool from_disk = false;
  std::atomic<bool> dirty{false};  // new launch configuration since the binary was stored
  std::mutex mu;

  void save() noexcept;   // stores the binary in the disk cache (if on); never throws
  ~ProgramImpl();         // a program released after new launch configurations stores its binary
};

struct KernelImpl {
  std::shared_ptr<ProgramImpl> program;
  const KernelSignature* sig = nullptr;
  std::unique_ptr<BackendKernel> eager;  // kernel object used by eager launches
  std::mutex mu;                         // clSetKernelArg on a shared kernel is not thread-safe
  std::vector<std::array<size_t, 4>> seen_configs;  // local sizes + dims launched so far
};

// What a capture records on one thread. The thread holds a reference while recording, so an owner
// that goes away on another thread (a Capture destroyed elsewhere) only marks it closed: the
// recording thread lets go at its next launch, never writing into freed memory.
struct Recorder {
  uint64_t id = 0;
  double started_us = 0;  // for the trace's "record" span
  bool allow_copyout = false;
  std::vector<ExecItem> items;
  // host inputs (slot = index): a copyin whose source lies inside one is recorded as from it
  std::vector<std::pair<const unsigned char*, size_t>> hosts;
  std::atomic<bool> closed{false};
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

// Runs one item eagerly on its device (sets args on the kernel's eager object).
void run_item_eager(const ExecItem& item);
// Local size chosen by encore when a launch gives none: a fixed set of sizes, so a new global
// size never makes PoCL compile a new work-group function (src/exec/enqueue.cpp).
void choose_local(uint32_t dims, const size_t* global, size_t max_wg, size_t* local);

int debug_level();
// Tracing (encore/profile.hpp): whether recording, a host span, and an enqueued item.
bool trace_active() noexcept;
double trace_now_us();
void trace_span(const char* name, double start_us);  // [start_us, now] on the host track
struct TraceSpan {
  explicit TraceSpan(const char* name);
  ~TraceSpan();
  const char* name;
  double start_us;
};
// Records an item enqueued on `dev` with its completion event (may be null: host times only).
void trace_item(DeviceImpl& dev, NativeEvent* ev, const ExecItem& item, const char* phase, uint32_t dims, const size_t* gws);
// A device time on the host's clock, given one reference instant read on both (src/trace/profile.cpp).
double device_to_host_us(uint64_t device_ns, uint64_t ref_device_ns, double ref_host_us);
// One element of dtype `t` at `p` (little-endian bytes), printed for messages (src/core/dtype.cpp).
std::string value_str(DType t, const void* p);

// Sends a message to the log sink (encore/log.hpp); by default printed only at ENCORE_DEBUG >= 1.
void log(LogLevel level, std::string_view message);

std::shared_ptr<DeviceImpl> open_opencl(int index);   // "CL:N"; -1: default
std::vector<DeviceInfo> list_opencl();
std::shared_ptr<DeviceImpl> open_null();


}  // namespace encore::detail

namespace encore::detail {
// An integer of dtype `from` (its low size(from) bytes of `bits`) as dtype `to`: false when it does
// not fit. Both integer dtypes (bool is 0..1). No allocation (the replay path binds through it).
bool convert_integer(DType from, uint64_t bits, DType to, uint64_t& out);
// "i32 holds -2147483648 to 2147483647", for messages.
std::string integer_range(DType t);
// Bits of a variable's value passed as `as`; ArgumentError when the value does not fit.
uint64_t var_arg_bits(const VarState& v, int64_t ivalue, double fvalue, DType as);
bool check_launch(uint32_t dims, const size_t* gws, const size_t* lws, const char* what);
void save_dirty_programs(DeviceImpl& d);
// Process exit (src/core/device.cpp): once the exit drain has finished every open device's queue, exiting()
// is true and backends make no more driver calls (the driver may have torn its own state down
// before the statics that still hold encore objects are destroyed).
bool exiting() noexcept;
// ENCORE_DEBUG=2 line for an item that just ran.
void debug_print_item(const ExecItem& item, uint32_t dims, const size_t* gws, const size_t* lws, uint64_t device_ns, double host_us);
}  // namespace encore::detail
