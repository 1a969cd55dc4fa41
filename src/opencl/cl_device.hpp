#pragma once
// The OpenCL device, shared by the backend's files: cl_open.cpp (platforms, devices, contexts,
// sub-devices), cl_program.cpp (builds, binaries, kernel objects and their parameters),
// cl_commands.cpp (memory and the queue's work: transfers, launches, markers, events) and
// cl_interop.cpp (the entry points of encore/opencl.hpp). Nothing here is installed.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cl_handle.hpp"
#include "core/device_impl.hpp"

namespace encore::detail {

// A device as enumeration finds it.
struct ClFound {
  cl_platform_id platform;
  cl_device_id device;
};

// One context per platform, holding all its devices, so cross-device copies and events work. The
// parts of one Device::split share a context of their own, which owns them (released after it)
// and keeps the device they were split from.
struct PlatformContext {
  std::shared_ptr<DeviceImpl> parent;
  std::vector<cl::DeviceH> owned;
  cl::Context ctx;
  std::vector<cl_device_id> devices;
  // devices of the platform left out because no context would take them, with the reason
  std::vector<std::pair<cl_device_id, std::string>> failed;
};

// A kernel object of one device's program.
class ClKernel final : public BackendKernel {
 public:
  ClKernel(cl::KernelH k, cl_device_id dev, std::string name, size_t max_wg, uint64_t local_bytes)
      : k_(std::move(k)), dev_(dev), name_(std::move(name)), max_wg_(max_wg), local_bytes_(local_bytes) {}
  size_t max_work_group_size() const override { return max_wg_; }
  WorkGroupInfo work_group_info() const override;
  uint64_t local_mem_bytes() const override { return local_bytes_; }
  void set_arg(uint32_t i, size_t size, const void* value) override {
    // the message is built only on failure: these calls are on the allocation-free replay path
    if (cl_int st = clSetKernelArg(k_.get(), i, size, value); st != CL_SUCCESS)
      cl::check(st, "clSetKernelArg", "kernel " + name_ + " argument " + std::to_string(i));
  }
  void set_buffer(uint32_t i, NativeMem* mem) override {
    cl_mem m = cl::mem(mem);
    if (cl_int st = clSetKernelArg(k_.get(), i, sizeof m, &m); st != CL_SUCCESS)
      cl::check(st, "clSetKernelArg", "kernel " + name_ + " argument " + std::to_string(i));
  }
  void set_local(uint32_t i, size_t bytes) override {
    if (cl_int st = clSetKernelArg(k_.get(), i, bytes, nullptr); st != CL_SUCCESS)
      cl::check(st, "clSetKernelArg", "kernel " + name_ + " __local argument " + std::to_string(i));
  }
  cl_kernel get() const { return k_.get(); }
  const std::string& name() const { return name_; }

 private:
  cl::KernelH k_;
  cl_device_id dev_;
  std::string name_;
  size_t max_wg_;
  uint64_t local_bytes_;
};

// A program built for one device (of a context that may hold more).
class ClProgram final : public BackendProgram {
 public:
  ClProgram(cl::ProgramH p, cl_device_id dev) : p_(std::move(p)), dev_(dev) {}
  std::unique_ptr<BackendKernel> create_kernel(const std::string& name) override;
  std::vector<unsigned char> binary() override;

 private:
  cl::ProgramH p_;
  cl_device_id dev_;
};

// One OpenCL device with its one in-order queue, in its platform's shared context (or its split's,
// or an adopted queue's).
class ClDevice final : public DeviceImpl {
 public:
  // cl_open.cpp
  ClDevice(const ClFound& f, int index);
  // One part of a Device::split, in the split's context.
  ClDevice(cl_device_id sub, std::shared_ptr<PlatformContext> ctx, DeviceInfo i);
  // Adopts an engine's in-order queue (and with it its context and device); both are retained.
  ClDevice(cl_command_queue q, int serial);
  ~ClDevice() override;
  std::vector<std::shared_ptr<DeviceImpl>> split(unsigned parts) override;

  cl_context ctx() const { return ctx_->ctx.get(); }
  cl_device_id device_id() const { return dev_; }
  cl_command_queue queue() const { return q_.get(); }

  // memory and the queue's work: cl_commands.cpp
  NativeMem* raw_alloc(size_t bytes) override;
  void raw_free(NativeMem* mem) override;
  NativeMem* make_view(NativeMem* root, size_t offset, size_t bytes) override;
  void free_view(NativeMem* v) override;
  void write(NativeMem* root, size_t off, const void* src, size_t n, bool blocking) override;
  void read_queue(NativeMem* root, size_t off, void* dst, size_t n) override;
  NativeEvent* read_async(NativeMem* root, size_t off, void* dst, size_t n) override;
  void fill(NativeMem* root, size_t off, const void* pattern, size_t pb, size_t n) override;
  void copy(NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n) override;
  void copy_peer(const DeviceImpl& src_dev, NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n, NativeEvent* const* waits,
                 uint32_t n_waits, NativeEvent** done) override;
  void enqueue_barrier(NativeEvent* const* evs, uint32_t n) override;
  void launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent** done) override;
  void finish_queue() override;
  void flush() override;
  bool event_times(NativeEvent* ev, uint64_t* start_ns, uint64_t* end_ns) override;
  NativeEvent* enqueue_marker() override;
  void wait_event(NativeEvent* ev) override;
  bool event_done(NativeEvent* ev) override;
  void retain_event(NativeEvent* ev) override;
  void release_event(NativeEvent* ev) noexcept override;
  void enqueue_wait(std::span<const Event> events) override;
  // lanes (concurrent replay): cl_open.cpp opens them, cl_commands.cpp enqueues on them
  uint32_t open_lanes(uint32_t want) override;
  void launch_after(uint32_t lane, BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent* const* waits,
                    uint32_t n, NativeEvent** done) override;
  void fill_after(uint32_t lane, NativeMem* root, size_t off, const void* pattern, size_t pb, size_t bytes, NativeEvent* const* waits,
                  uint32_t n, NativeEvent** done) override;
  void copy_after(uint32_t lane, NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t bytes, NativeEvent* const* waits,
                  uint32_t n, NativeEvent** done) override;
  NativeEvent* marker_after(uint32_t lane, NativeEvent* const* waits, uint32_t n) override;
  void flush_lane(uint32_t lane) override;

  // the compiler: cl_program.cpp
  BuildResult build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                    const BuildSignatures& signatures) override;
  std::string cache_key_prefix() const override;

 private:
  void open_queue();
  cl::ProgramH build_program(const std::string& source, const std::string& opts, const std::vector<unsigned char>* binary);
  cl_device_id dev_;
  std::shared_ptr<PlatformContext> ctx_;
  cl::Queue q_;
  // lanes 1.. (lane 0 is q_), opened by open_lanes and kept to the device's end; destroyed before
  // q_. lane_q_ holds their handles for the enqueues and finish_queue, which other threads may call
  // while a bind opens more; n_lanes_ counts lane 0 too.
  static constexpr uint32_t kMostLanes = 8;
  std::mutex lanes_mu_;
  bool lanes_refused_ = false;
  std::array<cl::Queue, kMostLanes> lanes_;
  std::array<std::atomic<cl_command_queue>, kMostLanes> lane_q_{};
  std::atomic<uint32_t> n_lanes_{1};
  cl_command_queue lane(uint32_t l) const { return l ? lane_q_[l].load(std::memory_order_acquire) : q_.get(); }
};

// The OpenCL device behind `d`; DeviceError naming `what` when it is another kind (cl_interop.cpp).
ClDevice& cl_device_of(DeviceImpl* d, const char* what);

}  // namespace encore::detail
