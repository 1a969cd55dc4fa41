#pragma once
// Device: one OpenCL device (or the NULL device) with its in-order queue, allocator and compiler.
//   encore::Device dev = encore::Device::open();        // first GPU, else first OpenCL device
//   encore::Device cpu = encore::Device::open("CL:1");  // device 1 across all platforms
//   encore::Device null = encore::Device::open("NULL"); // no-op device: measures encore's own cost
// ENCORE_DEVICE overrides the default. Opening the same name twice gives the same device.
// Sub-devices: split one device into equal parts, each a Device of its own (queue, allocator,
// compiler caches), all parts sharing one new OpenCL context:
//   std::vector<encore::Device> halves = encore::Device::open().split(2);  // "CL:0.0", "CL:0.1"
//   halves[1].copy(y1, x0);   // between parts of one split: a direct device copy
//   halves[0].copy(z0, x);    // between a part and its parent (another context): through host memory
// Threads: a Device may be used from any number of threads at once (launches, copies, allocation,
// compiles). Work from different threads lands on the one in-order queue in the order the calls
// reach it: order between threads is yours to arrange (an Event, or a join).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/control.hpp"
#include "encore/event.hpp"
#include "encore/exec_item.hpp"
#include "encore/program.hpp"

namespace encore {

namespace detail { struct DeviceImpl; }

struct DeviceInfo {
  std::string id;               // "CL:0", "NULL"; a sub-device: its parent's id and its index, "CL:0.1"
  std::string parent;           // a sub-device: the id of the device it was split from; else empty
  std::string name, vendor, version, driver_version, platform;
  bool is_gpu = false;
  uint32_t compute_units = 0;
  uint64_t global_mem_bytes = 0, max_alloc_bytes = 0;
  size_t base_align_bytes = 128;  // sub-buffer offsets must be multiples of this
  size_t max_work_group_size = 1;
  size_t max_work_item_sizes[3] = {1, 1, 1};  // the most work items per group in each dimension
  uint64_t local_mem_bytes = 0;                // __local memory one work group may use (0: unknown)
  std::vector<std::pair<std::string, std::string>> extensions;  // name, version ("1.0.0" or "")
  std::string command_buffer_version;  // cl_khr_command_buffer version, "" when absent
  bool mutable_dispatch = false;
};

struct AllocatorStats {
  size_t bytes_in_use = 0;   // held by live buffers
  size_t peak_bytes = 0;     // high-water mark of bytes_in_use
  size_t cached_bytes = 0;   // freed, kept for reuse
  size_t allocations = 0;    // fresh device allocations made
  size_t reuses = 0;         // allocations served from the cache
};

class ENCORE_API Device {
 public:
  Device() = default;
  static Device open(std::string_view name = "");
  // Every OpenCL device on this machine, in "CL:N" order (empty when there is no OpenCL platform).
  static std::vector<DeviceInfo> list();
  // Splits this device into `parts` sub-devices of compute_units / parts compute units each
  // (clCreateSubDevices with CL_DEVICE_PARTITION_EQUALLY; compute units left over stay unused).
  // The sub-devices have ids "<id>.0" .. "<id>.<parts-1>" and one new context shared by them:
  // copies and events between them stay on the devices; copies between a sub-device and its
  // parent, or any device outside the split, go through host memory. Like opened devices they live
  // for the whole process, and splitting the same device into the same number of parts again gives
  // the same sub-devices (PoCL 3.1 can crash when a sub-device's context is released right after
  // cross-queue work). DeviceError naming the OpenCL status when the device cannot be split so
  // (parts over its compute units, no CL_DEVICE_PARTITION_EQUALLY); ArgumentError for parts == 0
  // or over max_split_parts (each split made lives for the process: the bound keeps that finite).
  // The NULL device splits into `parts` NULL devices ("NULL.0", ...), which is how tests spread
  // work without OpenCL.
  std::vector<Device> split(unsigned parts) const;
  static constexpr unsigned max_split_parts = 64;

  const DeviceInfo& info() const;
  const std::string& id() const { return info().id; }
  bool is_null() const;
  // Whether kernels here can compute with `t` and take it by value: f16 needs cl_khr_fp16, f64
  // cl_khr_fp64 (as OpenCL says); every other dtype always. Buffers of any dtype work on every
  // device as storage (an f16 buffer is read and written with vload_half / vstore_half without
  // the extension). A by-value half parameter where f16 is not supported is an ArgumentError at
  // launch, and a failed build that mentions half says the extension is missing. The NULL device
  // supports every dtype (it runs nothing). PoCL 3.1 on the CPU does not report cl_khr_fp16.
  //   if (!dev.supports(encore::DType::f16)) use_f32_kernels();
  bool supports(DType t) const;

  Buffer alloc(DType dtype, size_t count) const { return Buffer(*this, dtype, count); }
  template <class T> Buffer alloc(size_t count) const { return Buffer(*this, dtype_of<T>, count); }

  Program compile(const std::string& source, const std::string& options = "") const;
  // A program built from a binary saved earlier (Program::binary and Program::binary_key), with no
  // compile, where `key` equals binary_key(source, options) here and the driver accepts the bytes;
  // otherwise compiled from source (compile(), its caches included) with an ENCORE_DEBUG=1 line
  // saying why. Program::from_binary() tells which happened. A binary that fits another device,
  // driver, option set or source is never used; bytes corrupted in a way the driver accepts are
  // the caller's to catch (workload files carry a checksum).
  //   encore::Program p = dev.compile_binary(src, "", saved_bytes, saved_key);
  Program compile_binary(const std::string& source, const std::string& options, const std::vector<unsigned char>& binary,
                         const std::string& key) const;
  // The device name, driver and OpenCL version, the options, and a hash of the source and of every
  // header it includes: what a saved binary must have been built for to be used here. Empty where
  // an include cannot be followed (such a program is always compiled).
  std::string binary_key(const std::string& source, const std::string& options = "") const;

  // Eager execution: builds an ExecItem and runs it at once (recorded when a capture is active).
  //   dev.launch(k, {n}, {}, x, y, 2.0f, encore::in(w), pos, encore::LocalMem{256});
  template <class... A> void launch(const Kernel& k, const Sizes& global, const Sizes& local, A&&... args) const {
    // built in place: an initializer list would copy every Arg (its handles' reference counts) and then drop the list
    std::vector<Arg> v;
    v.reserve(sizeof...(A));
    (v.emplace_back(std::forward<A>(args)), ...);
    launch_args(k, global, local, std::move(v));
  }
  void launch_args(const Kernel& k, const Sizes& global, const Sizes& local, std::vector<Arg> args,
                   std::string name = {}, Estimate estimate = {}) const;
  // Whole-buffer copy, equal byte sizes; src may be on another device.
  void copy(const Buffer& dst, const Buffer& src) const;
  // Sets every element of `buf` (on this device; a view: only its elements) to `value`, whose type
  // must be buf's dtype; recorded as a fill item during a capture and replayed like a copy.
  // ArgumentError when the types differ (cast the value: dev.fill(f32_buf, 0) is an error).
  //   dev.fill(acc, 0.0f);
  template <class T, class = std::enable_if_t<has_dtype<T>>> void fill(const Buffer& buf, T value) const {
    fill_value(buf, dtype_of<T>, &value);
  }
  // The same with one element's bytes: `value_bytes` must be buf's element size (the C form).
  void fill_bytes(const Buffer& buf, const void* value, size_t value_bytes) const;
  // Steps that decide (encore/control.hpp: the rules, the cost). Eagerly each runs at once; inside
  // a capture each becomes an item of the step, replayed in place.
  // A host item: reads `reads` (blocking, only those bytes), then runs fn, which may set `sets`.
  //   dev.host({sums.view(0, 1)}, {live}, [live](encore::HostCtx& c) { c.set(live, c.read<int32_t>(0)); });
  void host(std::vector<Buffer> reads, std::vector<Variable> sets, HostFn fn, std::string name = {}) const;
  // A branch on an integer Variable (bound for the call, or set by a host item before it):
  // then_fn when it is non-zero, else else_fn (may be empty).
  //   dev.when(eval_now, [&] { dev.launch(eval, {n}, {}, x, acc); });
  void when(const Variable& cond, const std::function<void()>& then_fn, const std::function<void()>& else_fn = {},
            std::string name = {}) const;
  // A multi-way branch: alternatives[index]; the Variable's bounds must lie in [0, alternatives - 1].
  void select(const Variable& index, const std::vector<std::function<void()>>& alternatives, std::string name = {}) const;
  // Runs body `count` times (an integer Variable with min >= 0; no round trip on replay).
  void repeat(const Variable& count, const std::function<void()>& body, std::string name = {}) const;
  // Runs body, then again while `more` (set by a host item inside body) is non-zero; more than
  // max_iterations iterations is an ArgumentError naming the loop.
  void loop_while(int64_t max_iterations, const Variable& more, const std::function<void()>& body, std::string name = {}) const;
  // The same with the condition as a host function over `reads`, evaluated after each iteration
  // (one round trip per iteration): true runs the body again.
  //   dev.loop_while(500, {resid}, [&] { dev.launch(jacobi, {n}, {}, a, b, resid); dev.copy(a, b); },
  //                  [tol](encore::HostCtx& c) { return c.read<float>(0) > tol; }, "jacobi");
  void loop_while(int64_t max_iterations, std::vector<Buffer> reads, const std::function<void()>& body, HostCond cond,
                  std::string name = {}) const;
  // Runs an item (kernel, copy, upload, native or fill) as eager work on the item's device.
  void run(const ExecItem& item) const;
  // Waits until all work queued on this device has finished.
  void synchronize() const;
  // An event that completes when all work queued on this device so far has finished (an empty,
  // complete Event on devices that run work synchronously, like NULL).
  Event marker() const;
  // Work queued on this device from now on starts after `events` completed (no host wait for
  // events of this device's OpenCL context; others are waited for on the host first).
  void wait_for(std::span<const Event> events) const;

  AllocatorStats allocator_stats() const;
  void free_cache() const;  // releases memory kept for reuse

  bool operator==(const Device& o) const { return impl_ == o.impl_; }
  explicit operator bool() const { return impl_ != nullptr; }
  detail::DeviceImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<detail::DeviceImpl>& shared_impl() const { return impl_; }
  explicit Device(std::shared_ptr<detail::DeviceImpl> d) : impl_(std::move(d)) {}

 private:
  void fill_value(const Buffer& buf, DType type, const void* value) const;
  std::shared_ptr<detail::DeviceImpl> impl_;
};

// Ordering for std::map keys: by identity.
inline bool operator<(const Buffer& a, const Buffer& b) { return a.impl() < b.impl(); }

}  // namespace encore
