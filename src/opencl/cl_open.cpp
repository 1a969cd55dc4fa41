// The OpenCL backend's devices: platforms and their devices, one shared context per platform (and
// one per Device::split), opening a device (its queue) or adopting an engine's queue, sub-devices.
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "cl_device.hpp"
#include "core/allocator.hpp"
#include "core/env.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"

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

std::vector<ClFound> enumerate() {
  std::vector<ClFound> out;
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

DeviceInfo read_info(const ClFound& f, int index) {
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

}  // namespace

ClDevice::ClDevice(const ClFound& f, int index) : dev_(f.device) {
  info = read_info(f, index);
  ctx_ = context_for(f.platform);
  for (const auto& [d, why] : ctx_->failed)
    if (d == dev_)
      throw DeviceError(info.id + " (" + info.name + ") could not be initialised: " + why + "; the other devices of platform " +
                        info.platform + " can still be opened");
  open_queue();
}
// One part of a Device::split, in the split's context.
ClDevice::ClDevice(cl_device_id sub, std::shared_ptr<PlatformContext> ctx, DeviceInfo i) : dev_(sub), ctx_(std::move(ctx)) {
  info = std::move(i);
  open_queue();
}
// Adopts an engine's in-order queue (and with it its context and device); both are retained.
ClDevice::ClDevice(cl_command_queue q, int serial) {
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
  context = ctx;  // adopted queues of one context are async peers too
}

ClDevice::~ClDevice() {
  for (uint32_t l = 1; l < n_lanes_.load() && !exiting(); ++l) clFinish(lane(l));
  if (q_ && !exiting()) clFinish(q_.get());
  allocator.reset();  // return cached memory while the context is alive
}

void ClDevice::open_queue() {
  context = ctx();  // the devices of one context copy between their queues asynchronously (copy_path)
  profiling = debug_level() >= 2 || env::profiling();
  cl_int err = CL_SUCCESS;
  q_ = cl::Queue(cl::create_queue(ctx_->ctx.get(), dev_, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err));
  cl::check(err, "clCreateCommandQueue", info.id);
}

// The lanes of a concurrent replay: in-order queues of the device's context beside its own, with
// its profiling. A driver that refuses one keeps the lanes it gave (never fewer than lane 0).
uint32_t ClDevice::open_lanes(uint32_t want) {
  want = std::min(want, kMostLanes);
  if (n_lanes_.load(std::memory_order_acquire) >= want) return n_lanes_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(lanes_mu_);
  uint32_t n = n_lanes_.load(std::memory_order_relaxed);
  for (; n < want && !lanes_refused_; ++n) {
    cl_int err = CL_SUCCESS;
    cl_command_queue q = cl::create_queue(ctx(), dev_, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS || !q) {
      lanes_refused_ = true;
      break;
    }
    lanes_[n] = cl::Queue(q);
    lane_q_[n].store(q, std::memory_order_release);
  }
  n_lanes_.store(n, std::memory_order_release);
  return n;
}

std::vector<std::shared_ptr<DeviceImpl>> ClDevice::split(unsigned parts) {
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


namespace {

// The platforms and their devices, found once per process. PoCL's first enumeration (its device
// initialisation inside clGetPlatformIDs / clGetDeviceIDs) is not thread-safe: threads listing or
// opening devices at once before OpenCL was touched crashed inside it. So every path (Device::list,
// Device::open, the "available" list of a failed open) reads this one enumeration, made by the
// first of them while the others wait (a function-local static's initialisation). The OpenCL ICD
// loader loads its platforms once, so a later enumeration would find the same devices.
struct Enumeration {
  std::vector<ClFound> found;
  std::vector<DeviceInfo> info;  // per found device, ids CL:0, CL:1, ...
};
const Enumeration& enumeration() {
  static const Enumeration* e = [] {
    auto* x = new Enumeration;  // never destroyed: devices are opened until the process ends
    x->found = enumerate();
    for (size_t i = 0; i < x->found.size(); ++i) x->info.push_back(read_info(x->found[i], static_cast<int>(i)));
    return x;
  }();
  return *e;
}

}  // namespace

std::vector<DeviceInfo> list_opencl() { return enumeration().info; }

std::shared_ptr<DeviceImpl> open_opencl(int index) {
  const Enumeration& e = enumeration();
  if (index < 0 || static_cast<size_t>(index) >= e.found.size()) {
    std::string names = "NULL";
    for (const DeviceInfo& i : e.info) names += ", " + i.id + " (" + i.name + ")";
    throw DeviceError("no OpenCL device CL:" + std::to_string(index) + (e.found.empty() ? " (no OpenCL platform found)" : "") +
                      "; available: " + names);
  }
  return std::make_shared<ClDevice>(e.found[static_cast<size_t>(index)], index);
}

}  // namespace encore::detail
