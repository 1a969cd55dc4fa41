// The OpenCL backend: platforms and devices, one shared context per platform (and one per
// Device::split), one in-order queue per device, memory, transfers, builds and launches.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <sstream>

#include "cl_handle.hpp"
#include "encore/opencl.hpp"
#include "core/env.hpp"
#include "internal.hpp"
#include "testing.hpp"

namespace encore::detail {

namespace {

std::string device_str(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <class T> T device_val(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

std::string platform_str(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

struct Found {
  cl_platform_id platform;
  cl_device_id device;
};

std::vector<Found> enumerate() {
  std::vector<Found> out;
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    for (cl_device_id d : ds) out.push_back({p, d});
  }
  return out;
}

DeviceInfo read_info(const Found& f, int index) {
  DeviceInfo i;
  i.id = "CL:" + std::to_string(index);
  i.name = device_str(f.device, CL_DEVICE_NAME);
  i.vendor = device_str(f.device, CL_DEVICE_VENDOR);
  i.version = device_str(f.device, CL_DEVICE_VERSION);
  i.driver_version = device_str(f.device, CL_DRIVER_VERSION);
  i.platform = platform_str(f.platform, CL_PLATFORM_NAME);
  i.is_gpu = (device_val<cl_device_type>(f.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
  i.compute_units = device_val<cl_uint>(f.device, CL_DEVICE_MAX_COMPUTE_UNITS);
  i.global_mem_bytes = device_val<cl_ulong>(f.device, CL_DEVICE_GLOBAL_MEM_SIZE);
  i.max_alloc_bytes = device_val<cl_ulong>(f.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  i.base_align_bytes = std::max<size_t>(1, device_val<cl_uint>(f.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  i.max_work_group_size = device_val<size_t>(f.device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  const cl_uint dims = device_val<cl_uint>(f.device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  std::vector<size_t> items(std::max<cl_uint>(dims, 3), 0);
  if (dims >= 1 && clGetDeviceInfo(f.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), items.data(), nullptr) == CL_SUCCESS)
    for (int d = 0; d < 3; ++d) i.max_work_item_sizes[d] = items[d] ? items[d] : 1;
  else  // unreadable: the work-group limit bounds every dimension
    for (size_t& m : i.max_work_item_sizes) m = i.max_work_group_size;
  i.local_mem_bytes = device_val<cl_ulong>(f.device, CL_DEVICE_LOCAL_MEM_SIZE);
  size_t n = 0;
  if (clGetDeviceInfo(f.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
    std::vector<cl_name_version> v(n / sizeof(cl_name_version));
    clGetDeviceInfo(f.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, n, v.data(), nullptr);
    for (const cl_name_version& e : v) {
      std::string ver = std::to_string(CL_VERSION_MAJOR(e.version)) + "." + std::to_string(CL_VERSION_MINOR(e.version)) + "." +
                        std::to_string(CL_VERSION_PATCH(e.version));
      i.extensions.emplace_back(e.name, ver);
    }
  } else {
    std::istringstream ss(device_str(f.device, CL_DEVICE_EXTENSIONS));
    for (std::string e; ss >> e;) i.extensions.emplace_back(e, "");
  }
  for (auto& [name, ver] : i.extensions) {
    if (name == "cl_khr_command_buffer") i.command_buffer_version = ver.empty() ? "yes" : ver;
    if (name == "cl_khr_command_buffer_mutable_dispatch") i.mutable_dispatch = true;
  }
  return i;
}

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

// A context over `devices`, or null with `*error` set.
cl_context create_context(cl_platform_id p, const std::vector<cl_device_id>& devices, std::string* error) {
  ENCORE_TESTING_DO(for (cl_device_id d : devices) if (d == testing::fail_context_device.load()) {
    *error = "clCreateContext failed with CL_DEVICE_NOT_AVAILABLE (made to fail by the test)";
    return nullptr;
  })
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(p), 0};
  cl_int err = CL_SUCCESS;
  cl_context c = clCreateContext(props, static_cast<cl_uint>(devices.size()), devices.data(), nullptr, nullptr, &err);
  if (err != CL_SUCCESS || !c) {
    if (c) clReleaseContext(c);
    *error = "clCreateContext failed with " + std::string(cl_status_name(err));
    return nullptr;
  }
  return c;
}

// The platform's shared context. When one context over all its devices cannot be made, each device
// is tried alone: those that work share the context, the others are left out and reported (at
// ENCORE_DEBUG=1 now, and by the error of opening one), so one broken device costs only itself.
std::shared_ptr<PlatformContext> make_platform_context(cl_platform_id p) {
  auto c = std::make_shared<PlatformContext>();
  cl_uint nd = 0;
  cl::check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd), "clGetDeviceIDs");
  c->devices.resize(nd);
  cl::check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, c->devices.data(), nullptr), "clGetDeviceIDs");
  std::string error;
  if (cl_context all = create_context(p, c->devices, &error)) {
    c->ctx = cl::Context(all);
    return c;
  }
  std::vector<cl_device_id> usable;
  for (cl_device_id d : c->devices) {
    std::string why;
    if (cl_context alone = create_context(p, {d}, &why)) {
      clReleaseContext(alone);
      usable.push_back(d);
    } else {
      c->failed.emplace_back(d, why);
    }
  }
  if (c->failed.empty()) {  // each alone, never together: report the whole platform's failure
    for (cl_device_id d : c->devices) c->failed.emplace_back(d, error + " over the platform's " + std::to_string(nd) + " devices");
    usable.clear();
  }
  c->devices = usable;
  if (!usable.empty()) {
    std::string why;
    if (cl_context some = create_context(p, usable, &why)) {
      c->ctx = cl::Context(some);
    } else {
      for (cl_device_id d : usable) c->failed.emplace_back(d, why);
      c->devices.clear();
    }
  }
  for (const auto& [d, why] : c->failed)
    log(LogLevel::info, "platform " + platform_str(p, CL_PLATFORM_NAME) + ": device " + device_str(d, CL_DEVICE_NAME) +
                            " left out of the shared context (" + why + "); the platform's other devices can be opened");
  return c;
}

std::shared_ptr<PlatformContext> context_for(cl_platform_id p) {
  static std::mutex mu;
  static auto* ctxs = new std::map<cl_platform_id, std::weak_ptr<PlatformContext>>;
  std::lock_guard<std::mutex> lock(mu);
  bool fresh = false;  // a test making a device fail needs a context made now, kept out of the cache
  ENCORE_TESTING_DO(fresh = testing::fail_context_device.load() != nullptr;)
  if (fresh) return make_platform_context(p);
  if (auto c = (*ctxs)[p].lock()) return c;
  auto c = make_platform_context(p);
  (*ctxs)[p] = c;
  return c;
}

class ClKernel final : public BackendKernel {
 public:
  ClKernel(cl::KernelH k, cl_device_id dev, std::string name, size_t max_wg, uint64_t local_bytes)
      : k_(std::move(k)), dev_(dev), name_(std::move(name)), max_wg_(max_wg), local_bytes_(local_bytes) {}
  size_t max_work_group_size() const override { return max_wg_; }
  WorkGroupInfo work_group_info() const override {
    WorkGroupInfo w;
    w.max_size = max_wg_;
    w.local_mem_bytes = local_bytes_;
    auto ask = [&](cl_kernel_work_group_info what, const char* name, size_t n, void* v) {
      cl::check(clGetKernelWorkGroupInfo(k_.get(), dev_, what, n, v, nullptr), name, name_);
    };
    ask(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, "clGetKernelWorkGroupInfo(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)",
        sizeof w.preferred_multiple, &w.preferred_multiple);
    cl_ulong priv = 0;
    ask(CL_KERNEL_PRIVATE_MEM_SIZE, "clGetKernelWorkGroupInfo(CL_KERNEL_PRIVATE_MEM_SIZE)", sizeof priv, &priv);
    w.private_mem_bytes = priv;
    size_t compile[3] = {0, 0, 0};
    ask(CL_KERNEL_COMPILE_WORK_GROUP_SIZE, "clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)", sizeof compile, compile);
    for (int d = 0; d < 3; ++d) w.compile_size[d] = compile[d];
    w.preferred_multiple = std::max<size_t>(w.preferred_multiple, 1);
    return w;
  }
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

class ClProgram final : public BackendProgram {
 public:
  ClProgram(cl::ProgramH p, cl_device_id dev) : p_(std::move(p)), dev_(dev) {}
  std::unique_ptr<BackendKernel> create_kernel(const std::string& name) override {
    cl_int err = CL_SUCCESS;
    cl::KernelH k(clCreateKernel(p_.get(), name.c_str(), &err));
    cl::check(err, "clCreateKernel", name);
    size_t max_wg = 0;
    cl::check(clGetKernelWorkGroupInfo(k.get(), dev_, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, nullptr),
              "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)", name);
    cl_ulong local_bytes = 0;  // a driver that cannot say: 0, only the arguments are counted
    clGetKernelWorkGroupInfo(k.get(), dev_, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_bytes, &local_bytes, nullptr);
    return std::make_unique<ClKernel>(std::move(k), dev_, name, std::max<size_t>(max_wg, 1), local_bytes);
  }
  std::vector<unsigned char> binary() override {
    if (exiting()) return {};  // the exit drain stored what changed; the driver may be gone now
    cl_uint nd = 0;
    cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, nullptr), "clGetProgramInfo");
    std::vector<cl_device_id> devs(nd);
    cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_DEVICES, nd * sizeof(cl_device_id), devs.data(), nullptr), "clGetProgramInfo");
    std::vector<size_t> sizes(nd);
    cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_BINARY_SIZES, nd * sizeof(size_t), sizes.data(), nullptr), "clGetProgramInfo");
    std::vector<std::vector<unsigned char>> bins(nd);
    std::vector<unsigned char*> ptrs(nd);
    for (cl_uint i = 0; i < nd; ++i) {
      bins[i].resize(sizes[i]);
      ptrs[i] = bins[i].data();
    }
    cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_BINARIES, nd * sizeof(unsigned char*), ptrs.data(), nullptr), "clGetProgramInfo");
    for (cl_uint i = 0; i < nd; ++i)
      if (devs[i] == dev_ && !bins[i].empty()) return bins[i];
    // PoCL 3.1 reports the binary of a program built for one device of a multi-device context in
    // slot 0, whatever the device's slot. Our programs are only ever built for dev_, so the one
    // non-empty binary is dev_'s.
    std::vector<unsigned char>* only = nullptr;
    for (auto& b : bins)
      if (!b.empty()) {
        if (only) return {};
        only = &b;
      }
    return only ? std::move(*only) : std::vector<unsigned char>{};
  }

 private:
  cl::ProgramH p_;
  cl_device_id dev_;
};

std::optional<DType> dtype_of_cl_type(std::string t) {
  if (!t.empty() && t.back() == '*') return std::nullopt;
  return scalar_dtype_of(t);
}

class ClDevice final : public DeviceImpl {
 public:
  ClDevice(const Found& f, int index) : dev_(f.device) {
    info = read_info(f, index);
    ctx_ = context_for(f.platform);
    for (const auto& [d, why] : ctx_->failed)
      if (d == dev_)
        throw DeviceError(info.id + " (" + info.name + ") could not be initialised: " + why + "; the other devices of platform " +
                          info.platform + " can still be opened");
    open_queue();
  }
  // One part of a Device::split, in the split's context.
  ClDevice(cl_device_id sub, std::shared_ptr<PlatformContext> ctx, DeviceInfo i) : dev_(sub), ctx_(std::move(ctx)) {
    info = std::move(i);
    open_queue();
  }
  // Adopts an engine's in-order queue (and with it its context and device); both are retained.
  ClDevice(cl_command_queue q, int serial) {
    cl_context ctx = nullptr;
    cl_command_queue_properties qp = 0;
    cl::check(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetCommandQueueInfo", "adopted queue");
    cl::check(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev_, &dev_, nullptr), "clGetCommandQueueInfo", "adopted queue");
    cl::check(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof qp, &qp, nullptr), "clGetCommandQueueInfo", "adopted queue");
    if (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
      throw DeviceError("encore::opencl::adopt: the queue is out-of-order; encore orders work by queue order and needs an in-order queue");
    cl_platform_id plat = nullptr;
    cl::check(clGetDeviceInfo(dev_, CL_DEVICE_PLATFORM, sizeof plat, &plat, nullptr), "clGetDeviceInfo");
    info = read_info({plat, dev_}, 0);
    info.id = "CL:adopted:" + std::to_string(serial);
    ctx_ = std::make_shared<PlatformContext>();
    cl::check(clRetainContext(ctx), "clRetainContext");
    ctx_->ctx = cl::Context(ctx);
    ctx_->devices = {dev_};
    cl::check(clRetainCommandQueue(q), "clRetainCommandQueue");
    q_ = cl::Queue(q);
    profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
  }
  ~ClDevice() override {
    if (q_ && !exiting()) clFinish(q_.get());
    allocator.reset();  // return cached memory while the context is alive
  }

  cl_context ctx() const { return ctx_->ctx.get(); }
  cl_device_id device_id() const { return dev_; }
  cl_command_queue queue() const { return q_.get(); }

  NativeMem* raw_alloc(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
    cl::check(err, "clCreateBuffer", std::to_string(bytes) + " bytes on " + info.id);
    return cl::native(m);
  }
  // (after the exit drain, memory is left to the process's end: see cl::Handle::reset)
  void raw_free(NativeMem* mem) override {
    if (!exiting()) clReleaseMemObject(cl::mem(mem));
  }
  NativeMem* make_view(NativeMem* root, size_t offset, size_t bytes) override {
    cl_buffer_region r{offset, bytes};
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateSubBuffer(cl::mem(root), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    cl::check(err, "clCreateSubBuffer", std::to_string(bytes) + " bytes at offset " + std::to_string(offset));
    return cl::native(m);
  }
  void free_view(NativeMem* v) override {
    if (!exiting()) clReleaseMemObject(cl::mem(v));
  }
  void write(NativeMem* root, size_t off, const void* src, size_t n, bool blocking) override {
    if (cl_int st = clEnqueueWriteBuffer(queue(), cl::mem(root), blocking ? CL_TRUE : CL_FALSE, off, n, src, 0, nullptr, nullptr);
        st != CL_SUCCESS)
      cl::check(st, "clEnqueueWriteBuffer", std::to_string(n) + " bytes on " + info.id);
  }
  void read(NativeMem* root, size_t off, void* dst, size_t n) override {
    if (cl_int st = clEnqueueReadBuffer(queue(), cl::mem(root), CL_TRUE, off, n, dst, 0, nullptr, nullptr); st != CL_SUCCESS)
      cl::check(st, "clEnqueueReadBuffer", std::to_string(n) + " bytes on " + info.id);
  }
  NativeEvent* read_async(NativeMem* root, size_t off, void* dst, size_t n) override {
    cl_event ev = nullptr;
    if (cl_int st = clEnqueueReadBuffer(queue(), cl::mem(root), CL_FALSE, off, n, dst, 0, nullptr, &ev); st != CL_SUCCESS)
      cl::check(st, "clEnqueueReadBuffer", std::to_string(n) + " bytes on " + info.id);
    clFlush(queue());
    return reinterpret_cast<NativeEvent*>(ev);
  }
  void copy(NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n) override {
    if (cl_int st = clEnqueueCopyBuffer(queue(), cl::mem(src), cl::mem(dst), soff, doff, n, 0, nullptr, nullptr);
        st != CL_SUCCESS)
      cl::check(st, "clEnqueueCopyBuffer", std::to_string(n) + " bytes on " + info.id);
  }
  void fill(NativeMem* root, size_t off, const void* pattern, size_t pb, size_t n) override {
    if (n == 0) return;  // CL_INVALID_VALUE otherwise
    if (cl_int st = clEnqueueFillBuffer(queue(), cl::mem(root), pattern, pb, off, n, 0, nullptr, nullptr); st != CL_SUCCESS)
      cl::check(st, "clEnqueueFillBuffer", std::to_string(n) + " bytes on " + info.id);
  }
  bool async_peer(const DeviceImpl& src) const override {
    auto* s = dynamic_cast<const ClDevice*>(&src);
    return s && s != this && s->ctx() == ctx();
  }
  void copy_peer(DeviceImpl& src_dev, NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n, NativeEvent* const* waits,
                 uint32_t n_waits, NativeEvent** done) override {
    cl_event w[16];
    uint32_t k = 0;
    if (n_waits > 16)  // no allocation here: a long list becomes a barrier before the copy
      enqueue_barrier(waits, n_waits);
    else
      for (uint32_t i = 0; i < n_waits; ++i)
        if (waits[i]) w[k++] = reinterpret_cast<cl_event>(waits[i]);
    cl_event ev = nullptr;
    if (cl_int st = clEnqueueCopyBuffer(queue(), cl::mem(src), cl::mem(dst), soff, doff, n, k, k ? w : nullptr, done ? &ev : nullptr);
        st != CL_SUCCESS)
      cl::check(st, "clEnqueueCopyBuffer", "cross-device copy of " + std::to_string(n) + " bytes " + src_dev.info.id + " -> " + info.id);
    if (done) {
      clFlush(queue());  // a waiter on another queue needs it submitted
      *done = reinterpret_cast<NativeEvent*>(ev);
    }
  }
  void enqueue_barrier(NativeEvent* const* evs, uint32_t n) override {
    cl_event w[16];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (evs[i]) {
        w[k++] = reinterpret_cast<cl_event>(evs[i]);
        if (k == 16) {  // no allocation here: long lists become several barriers
          cl::check(clEnqueueBarrierWithWaitList(queue(), k, w, nullptr), "clEnqueueBarrierWithWaitList", info.id);
          k = 0;
        }
      }
    if (k) cl::check(clEnqueueBarrierWithWaitList(queue(), k, w, nullptr), "clEnqueueBarrierWithWaitList", info.id);
  }
  // between contexts: no direct copy (the core goes through host memory); within one: copy_peer
  bool copy_from(DeviceImpl&, NativeMem*, size_t, NativeMem*, size_t, size_t) override { return false; }
  // clEnqueueNDRangeKernel, with the launch in the error
  void enqueue_nd(ClKernel& ck, uint32_t dims, const size_t* global, const size_t* local, cl_event* ev) {
    cl_int st = clEnqueueNDRangeKernel(queue(), ck.get(), dims, nullptr, global, local, 0, nullptr, ev);
    if (st != CL_SUCCESS) {
      std::string what = "kernel " + ck.name() + " global [";
      for (uint32_t i = 0; i < dims; ++i) what += (i ? "," : "") + std::to_string(global[i]);
      what += "]";
      if (local) {
        what += " local [";
        for (uint32_t i = 0; i < dims; ++i) what += (i ? "," : "") + std::to_string(local[i]);
        what += "]";
      }
      throw OpenCLError(st, "clEnqueueNDRangeKernel", what + " on " + info.id);
    }
  }
  void launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, uint64_t* device_ns) override {
    auto& ck = static_cast<ClKernel&>(k);
    cl_event ev = nullptr;
    enqueue_nd(ck, dims, global, local, device_ns ? &ev : nullptr);
    if (device_ns) {
      cl::Event e(ev);
      cl::check(clWaitForEvents(1, &ev), "clWaitForEvents", ck.name());
      cl_ulong t0 = 0, t1 = 0;
      if (profiling && clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr) == CL_SUCCESS &&
          clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr) == CL_SUCCESS)
        *device_ns = t1 - t0;
      else
        *device_ns = 0;
    }
  }
  // after the exit drain the queue is empty but for work enqueued since, which exit abandons
  void finish() override {
    if (!exiting()) cl::check(clFinish(queue()), "clFinish", info.id);
  }
  void flush() override {
    if (!exiting()) clFlush(queue());
  }
  NativeEvent* enqueue_marker() override {
    cl_event ev = nullptr;
    cl::check(clEnqueueMarkerWithWaitList(queue(), 0, nullptr, &ev), "clEnqueueMarkerWithWaitList", info.id);
    clFlush(queue());  // a marker nobody flushes may never complete for a waiter on another thread
    return reinterpret_cast<NativeEvent*>(ev);
  }
  void wait_event(NativeEvent* ev) override {
    cl_event e = reinterpret_cast<cl_event>(ev);
    cl::check(clWaitForEvents(1, &e), "clWaitForEvents", "event on " + info.id);
  }
  bool event_done(NativeEvent* ev) override {
    cl_int st = CL_QUEUED;
    cl::check(clGetEventInfo(reinterpret_cast<cl_event>(ev), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr), "clGetEventInfo",
              info.id);
    if (st < 0) throw OpenCLError(st, "event", "work on " + info.id + " failed");
    return st == CL_COMPLETE;
  }
  void retain_event(NativeEvent* ev) override { cl::check(clRetainEvent(reinterpret_cast<cl_event>(ev)), "clRetainEvent", info.id); }
  void release_event(NativeEvent* ev) noexcept override {
    if (!exiting()) clReleaseEvent(reinterpret_cast<cl_event>(ev));
  }
  void enqueue_wait(std::span<const Event> events) override {
    // events of this context become a barrier on the queue; any other is waited for on the host
    std::vector<cl_event> same;
    for (const Event& e : events) {
      auto* q = dynamic_cast<QueueEvent*>(e.impl().get());
      auto* d = q ? dynamic_cast<ClDevice*>(q->dev.get()) : nullptr;
      if (d && d->ctx() == ctx()) same.push_back(reinterpret_cast<cl_event>(q->ev));
      else e.wait();
    }
    if (!same.empty())
      cl::check(clEnqueueBarrierWithWaitList(queue(), static_cast<cl_uint>(same.size()), same.data(), nullptr), "clEnqueueBarrierWithWaitList",
                info.id);
  }
  NativeEvent* launch_traced(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local) override {
    cl_event ev = nullptr;
    enqueue_nd(static_cast<ClKernel&>(k), dims, global, local, &ev);
    return reinterpret_cast<NativeEvent*>(ev);
  }
  bool event_times(NativeEvent* ev, uint64_t* start_ns, uint64_t* end_ns) override {
    if (!profiling) return false;
    cl_event e = reinterpret_cast<cl_event>(ev);
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr) != CL_SUCCESS ||
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr) != CL_SUCCESS)
      return false;
    *start_ns = t0;
    *end_ns = t1;
    return true;
  }
  bool device_clock(uint64_t* ns) override {
    if (!profiling) return false;
    cl_event ev = nullptr;
    cl::check(clEnqueueMarkerWithWaitList(queue(), 0, nullptr, &ev), "clEnqueueMarkerWithWaitList", info.id);
    cl::Event e(ev);
    cl::check(clWaitForEvents(1, &ev), "clWaitForEvents", "marker on " + info.id);
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t, &t, nullptr) != CL_SUCCESS) return false;
    *ns = t;
    return true;
  }

  // Built without -cl-kernel-arg-info: PoCL's code is slower with it. The parameter lists come from
  // the source (checked against the kernels the program has: names and argument counts), or, when
  // the source could not be read or disagrees, from a second build with the flag whose binary only
  // answers clGetKernelArgInfo and is never run.
  BuildResult build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                    const std::vector<KernelSignature>* signatures) override {
    cl::ProgramH p = build_program(source, options, binary);
    BuildResult r;
    const std::vector<Built> built = kernels_of(p.get(), false);
    std::string why = signatures ? disagreement(*signatures, built) : "the source could not be read";
    if (why.empty()) {
      r.kernels = *signatures;
      if (check_signatures()) {  // tests: every program they build or load from the disk cache, against the driver
        cl::ProgramH meta = build_program(source, options + " -cl-kernel-arg-info", nullptr);
        const std::vector<Built> truth = kernels_of(meta.get(), true);
        if (std::string d = compare(r.kernels, truth); !d.empty())
          throw CompileError("ENCORE_CHECK_SIGNATURES: the signature parser disagrees with clGetKernelArgInfo on " + info.id + ": " + d, source);
      }
    } else {
      if (binary) throw OpenCLError(CL_INVALID_BINARY, "clCreateProgramWithBinary", "cached binary: " + why);
      log(LogLevel::info, "program on " + info.id + ": " + why + "; parameter types from a metadata build (-cl-kernel-arg-info)");
      ENCORE_TESTING_DO(++testing::cl_metadata_builds;)
      cl::ProgramH meta = build_program(source, options + " -cl-kernel-arg-info", nullptr);
      for (Built& b : kernels_of(meta.get(), true)) r.kernels.push_back(std::move(b.sig));
    }
    r.program = std::make_unique<ClProgram>(std::move(p), dev_);
    return r;
  }

  std::string cache_key_prefix() const override {
    // (programs are built without -cl-kernel-arg-info since issue 19: entries built with it are not reused)
    std::string k = info.name + '\0' + info.driver_version + '\0' + info.version + '\0' + "no-arg-info";
    if (!info.parent.empty()) {  // a sub-device may get other code than the whole device: entries of its own
      k += '\0';
      k += "sub-device of " + std::to_string(info.compute_units) + " compute units";
    }
    return k;
  }

  std::vector<std::shared_ptr<DeviceImpl>> split(unsigned parts) override {
    const std::string what = "Device::split: " + info.id + " (" + info.name + ", " + std::to_string(info.compute_units) +
                             " compute units) into " + std::to_string(parts) + " equal parts";
    size_t n = 0;
    std::vector<cl_device_partition_property> kinds;
    if (clGetDeviceInfo(dev_, CL_DEVICE_PARTITION_PROPERTIES, 0, nullptr, &n) == CL_SUCCESS && n >= sizeof(cl_device_partition_property)) {
      kinds.resize(n / sizeof(cl_device_partition_property));
      cl::check(clGetDeviceInfo(dev_, CL_DEVICE_PARTITION_PROPERTIES, n, kinds.data(), nullptr), "clGetDeviceInfo(CL_DEVICE_PARTITION_PROPERTIES)");
    }
    if (std::find(kinds.begin(), kinds.end(), CL_DEVICE_PARTITION_EQUALLY) == kinds.end())
      throw DeviceError(what + ": the device does not offer CL_DEVICE_PARTITION_EQUALLY");
    // compute units per part; 0 when there are more parts than compute units, which OpenCL refuses
    const cl_uint per = info.compute_units / parts;
    const cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, static_cast<cl_device_partition_property>(per), 0};
    const std::string call = "clCreateSubDevices(CL_DEVICE_PARTITION_EQUALLY, " + std::to_string(per) + ")";
    const std::string why = per == 0 ? what + ": more parts than compute units" : what;
    cl_uint count = 0;
    if (cl_int st = clCreateSubDevices(dev_, props, 0, nullptr, &count); st != CL_SUCCESS) throw OpenCLError(st, call, why);
    if (count < parts) throw DeviceError(what + ": " + call + " gives only " + std::to_string(count) + " sub-devices");
    std::vector<cl_device_id> ids(count);
    if (cl_int st = clCreateSubDevices(dev_, props, count, ids.data(), nullptr); st != CL_SUCCESS) throw OpenCLError(st, call, why);
    auto ctx = std::make_shared<PlatformContext>();
    for (cl_device_id id : ids) ctx->owned.emplace_back(id);
    ctx->owned.resize(parts);  // compute units left over: their sub-devices are released now
    ctx->devices.assign(ids.begin(), ids.begin() + parts);
    ctx->parent = shared_from_this();
    cl_platform_id plat = nullptr;
    cl::check(clGetDeviceInfo(dev_, CL_DEVICE_PLATFORM, sizeof plat, &plat, nullptr), "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
    cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(plat), 0};
    cl_int err = CL_SUCCESS;
    ctx->ctx = cl::Context(clCreateContext(cprops, parts, ctx->devices.data(), nullptr, nullptr, &err));
    cl::check(err, "clCreateContext", what);
    std::vector<std::shared_ptr<DeviceImpl>> out;
    for (unsigned i = 0; i < parts; ++i) {
      DeviceInfo di = read_info({plat, ctx->devices[i]}, 0);
      di.id = info.id + "." + std::to_string(i);
      di.parent = info.id;
      out.push_back(std::make_shared<ClDevice>(ctx->devices[i], ctx, std::move(di)));
    }
    return out;
  }

 private:
  void open_queue() {
    profiling = debug_level() >= 2 || env::profiling();
    cl_int err = CL_SUCCESS;
    q_ = cl::Queue(cl::create_queue(ctx_->ctx.get(), dev_, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err));
    cl::check(err, "clCreateCommandQueue", info.id);
  }
  static std::string kernel_str(cl_kernel k, cl_kernel_info what) {
    size_t n = 0;
    clGetKernelInfo(k, what, 0, nullptr, &n);
    std::string s(n, '\0');
    if (n) clGetKernelInfo(k, what, n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  static std::string arg_str(cl_kernel k, cl_uint i, cl_kernel_arg_info what) {
    size_t n = 0;
    cl::check(clGetKernelArgInfo(k, i, what, 0, nullptr, &n), "clGetKernelArgInfo");
    std::string s(n, '\0');
    if (n) clGetKernelArgInfo(k, i, what, n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  static KernelSignature signature(cl_kernel k) {
    KernelSignature sig;
    sig.name = kernel_str(k, CL_KERNEL_FUNCTION_NAME);
    cl_uint na = 0;
    cl::check(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof na, &na, nullptr), "clGetKernelInfo");
    for (cl_uint i = 0; i < na; ++i) {
      KernelParam p;
      p.name = arg_str(k, i, CL_KERNEL_ARG_NAME);
      p.type_name = arg_str(k, i, CL_KERNEL_ARG_TYPE_NAME);
      cl_kernel_arg_address_qualifier aq = 0;
      cl_kernel_arg_type_qualifier tq = 0;
      cl::check(clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, nullptr), "clGetKernelArgInfo");
      cl::check(clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof tq, &tq, nullptr), "clGetKernelArgInfo");
      p.space = aq == CL_KERNEL_ARG_ADDRESS_GLOBAL     ? AddressSpace::global
                : aq == CL_KERNEL_ARG_ADDRESS_CONSTANT ? AddressSpace::constant
                : aq == CL_KERNEL_ARG_ADDRESS_LOCAL    ? AddressSpace::local
                                                       : AddressSpace::private_;
      p.is_pointer = !p.type_name.empty() && p.type_name.back() == '*';
      p.const_data = p.is_pointer && (tq & CL_KERNEL_ARG_TYPE_CONST);
      if (!p.is_pointer) p.scalar = dtype_of_cl_type(p.type_name);
      sig.params.push_back(std::move(p));
    }
    return sig;
  }

  // A kernel of a built program: its name and argument count, and with arg_info its parameters.
  struct Built {
    KernelSignature sig;
    cl_uint num_args = 0;
  };
  static std::vector<Built> kernels_of(cl_program p, bool arg_info) {
    cl_uint nk = 0;
    cl::check(clCreateKernelsInProgram(p, 0, nullptr, &nk), "clCreateKernelsInProgram");
    std::vector<cl_kernel> ks(nk);
    if (nk) cl::check(clCreateKernelsInProgram(p, nk, ks.data(), nullptr), "clCreateKernelsInProgram");
    std::vector<cl::KernelH> owned;
    for (cl_kernel k : ks) owned.emplace_back(k);
    std::vector<Built> out;
    for (cl_kernel k : ks) {
      Built b;
      b.sig.name = kernel_str(k, CL_KERNEL_FUNCTION_NAME);
      cl::check(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof b.num_args, &b.num_args, nullptr), "clGetKernelInfo");
      if (arg_info) b.sig = signature(k);
      out.push_back(std::move(b));
    }
    return out;
  }
  // Why the parameter lists read from the source cannot be the program's ("" when they can): the
  // same kernels, each with as many arguments.
  static std::string disagreement(const std::vector<KernelSignature>& read, const std::vector<Built>& built) {
    for (const Built& b : built) {
      const KernelSignature* s = nullptr;
      for (const KernelSignature& k : read)
        if (k.name == b.sig.name) s = &k;
      if (!s) return "the program has a kernel " + b.sig.name + " that the source's text does not show (a macro or an #include?)";
      if (s->params.size() != b.num_args)
        return "kernel " + b.sig.name + " has " + std::to_string(b.num_args) + " arguments, the source's text shows " + std::to_string(s->params.size());
    }
    for (const KernelSignature& k : read) {
      bool found = false;
      for (const Built& b : built) found = found || b.sig.name == k.name;
      if (!found) return "the source's text shows a kernel " + k.name + " that the program does not have (an #if branch?)";
    }
    return {};
  }
  // What differs between the parsed lists and the driver's ("" when nothing does).
  static std::string compare(const std::vector<KernelSignature>& read, const std::vector<Built>& truth) {
    if (std::string d = disagreement(read, truth); !d.empty()) return d;
    for (const Built& b : truth) {
      const KernelSignature* s = nullptr;
      for (const KernelSignature& k : read)
        if (k.name == b.sig.name) s = &k;
      for (size_t i = 0; i < b.sig.params.size(); ++i) {
        const KernelParam &x = s->params[i], &y = b.sig.params[i];
        auto str = [](const KernelParam& q) {
          return std::string(q.space == AddressSpace::global ? "global " : q.space == AddressSpace::constant ? "constant " : q.space == AddressSpace::local ? "local " : "") +
                 (q.const_data ? "const " : "") + q.type_name + " " + q.name + (q.scalar ? std::string(" (") + std::string(encore::name(*q.scalar)) + ")" : "");
        };
        const bool same = x.name == y.name && x.type_name == y.type_name && x.space == y.space && x.is_pointer == y.is_pointer &&
                          x.scalar == y.scalar && x.default_access() == y.default_access() &&
                          (x.space != AddressSpace::global || x.const_data == y.const_data);
        if (!same) return "kernel " + b.sig.name + " parameter " + std::to_string(i) + ": parsed " + str(x) + ", driver " + str(y);
      }
    }
    return {};
  }
  static bool check_signatures() { return env::check_signatures(); }
  cl::ProgramH build_program(const std::string& source, const std::string& opts, const std::vector<unsigned char>* binary) {
    cl_int err = CL_SUCCESS;
    cl::ProgramH p;
    if (binary) {
      const unsigned char* b = binary->data();
      size_t n = binary->size();
      cl_int bstatus = CL_SUCCESS;
      p = cl::ProgramH(clCreateProgramWithBinary(ctx(), 1, &dev_, &n, &b, &bstatus, &err));
      cl::check(err != CL_SUCCESS ? err : bstatus, "clCreateProgramWithBinary", "cached binary");
    } else {
      const char* src = source.c_str();
      size_t len = source.size();
      p = cl::ProgramH(clCreateProgramWithSource(ctx(), 1, &src, &len, &err));
      cl::check(err, "clCreateProgramWithSource");
    }
    err = clBuildProgram(p.get(), 1, &dev_, opts.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t n = 0;
      clGetProgramBuildInfo(p.get(), dev_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      if (n) clGetProgramBuildInfo(p.get(), dev_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      while (!log.empty() && log.back() == '\0') log.pop_back();
      if (binary) throw OpenCLError(err, "clBuildProgram", "cached binary: " + log);
      throw CompileError("OpenCL C build failed on " + info.id + " (" + info.name + ") with " + cl_status_name(err) +
                             (opts.empty() ? "" : ", options \"" + opts + "\""),
                         log);
    }
    return p;
  }
  cl_device_id dev_;
  std::shared_ptr<PlatformContext> ctx_;
  cl::Queue q_;
};

}  // namespace

std::vector<DeviceInfo> list_opencl() {
  std::vector<DeviceInfo> out;
  auto found = enumerate();
  for (size_t i = 0; i < found.size(); ++i) out.push_back(read_info(found[i], static_cast<int>(i)));
  return out;
}

std::shared_ptr<DeviceImpl> open_opencl(int index) {
  auto found = enumerate();
  if (index < 0 || static_cast<size_t>(index) >= found.size()) {
    std::string names = "NULL";
    for (size_t i = 0; i < found.size(); ++i) names += ", CL:" + std::to_string(i) + " (" + device_str(found[i].device, CL_DEVICE_NAME) + ")";
    throw DeviceError("no OpenCL device CL:" + std::to_string(index) + (found.empty() ? " (no OpenCL platform found)" : "") +
                      "; available: " + names);
  }
  return std::make_shared<ClDevice>(found[static_cast<size_t>(index)], index);
}

ClDevice& cl_device_of(DeviceImpl* d, const char* what) {
  auto* c = dynamic_cast<ClDevice*>(d);
  if (!c) throw DeviceError(std::string(what) + ": not an OpenCL device (" + (d ? d->info.id : std::string("null")) + ")");
  return *c;
}

}  // namespace encore::detail

// encore/opencl.hpp
namespace encore::opencl {

using detail::cl_device_of;

Device adopt(cl_command_queue queue) {
  static std::atomic<int> serial{0};
  if (!queue) throw ArgumentError("encore::opencl::adopt: null queue");
  return Device(std::make_shared<detail::ClDevice>(queue, serial++));
}

Buffer adopt(const Device& dev, cl_mem mem, DType dtype, size_t count) {
  detail::ClDevice& d = cl_device_of(dev.impl(), "encore::opencl::adopt");
  if (!mem) throw ArgumentError("encore::opencl::adopt: null cl_mem");
  size_t bytes = 0;
  cl_context ctx = nullptr;
  cl::check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr), "clGetMemObjectInfo");
  cl::check(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetMemObjectInfo");
  if (ctx != d.ctx()) throw ArgumentError("encore::opencl::adopt: the cl_mem belongs to another context than " + dev.id());
  if (count == 0 || detail::checked_bytes("encore::opencl::adopt", count, dtype) > bytes)
    throw ArgumentError("encore::opencl::adopt: " + std::to_string(count) + " elements of " + std::string(name(dtype)) +
                        " do not fit in the cl_mem's " + std::to_string(bytes) + " bytes");
  cl::check(clRetainMemObject(mem), "clRetainMemObject");
  auto b = std::make_shared<detail::BufferImpl>();
  b->dev = dev.shared_impl();
  b->dtype = dtype;
  b->count = count;
  b->nbytes = count * size(dtype);  // checked above
  b->mem = cl::native(mem);
  b->alloc_bytes = bytes;
  b->owned = false;  // released, never returned to encore's allocator
  return Buffer(std::move(b));
}

Event adopt(const Device& dev, cl_event event) {
  detail::ClDevice& d = cl_device_of(dev.impl(), "encore::opencl::adopt");
  if (!event) throw ArgumentError("encore::opencl::adopt: null cl_event");
  cl_context ctx = nullptr;
  cl::check(clGetEventInfo(event, CL_EVENT_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetEventInfo", "adopted event");
  if (ctx != d.ctx()) throw ArgumentError("encore::opencl::adopt: the cl_event belongs to another context than " + dev.id());
  cl::check(clRetainEvent(event), "clRetainEvent", "adopted event");
  return Event(std::make_shared<detail::QueueEvent>(dev.shared_impl(), reinterpret_cast<detail::NativeEvent*>(event)));
}

namespace {
// A native call on an OpenCL device: the memory handles are cl_mems (NativeMem is cl_mem here), so
// the core's array is handed over as it is: nothing to allocate on replay.
struct ClNativeCall final : NativeCall {
  NativeFn fn;
  void run(detail::DeviceImpl& d, detail::NativeMem* const* mems, size_t n) const override {
    auto& cd = static_cast<detail::ClDevice&>(d);
    fn(cd.queue(), std::span<const cl_mem>(reinterpret_cast<const cl_mem*>(mems), n));
  }
};
}  // namespace

void enqueue_native(const Device& dev, NativeFn fn, std::vector<BufferArg> buffers, std::string name) {
  cl_device_of(dev.impl(), "encore::opencl::enqueue_native");
  if (!fn) throw ArgumentError("encore::opencl::enqueue_native: empty function");
  auto call = std::make_shared<ClNativeCall>();
  call->fn = std::move(fn);
  call->dev = dev.shared_impl();
  std::vector<Arg> args;
  args.reserve(buffers.size());
  for (const BufferArg& b : buffers) args.emplace_back(b);
  dev.run_native(std::move(call), std::move(args), std::move(name));
}

cl_event native(const Event& e) {
  auto* q = dynamic_cast<detail::QueueEvent*>(e.impl().get());
  if (!q || !dynamic_cast<detail::ClDevice*>(q->dev.get()))
    throw ArgumentError("encore::opencl::native: the event is not one OpenCL event (empty, from the NULL device, or over several devices)");
  return reinterpret_cast<cl_event>(q->ev);
}

cl_context context(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::context").ctx(); }
cl_device_id device_id(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::device_id").device_id(); }
cl_command_queue queue(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::queue").queue(); }

cl_mem native(const Buffer& b) {
  if (!b) throw ArgumentError("encore::opencl::native: null buffer");
  cl_device_of(b.impl()->dev.get(), "encore::opencl::native");
  return cl::mem(b.impl()->handle());
}

}  // namespace encore::opencl
