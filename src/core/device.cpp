#include "encore/device.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <system_error>

#include "core/env.hpp"
#include "core/owned_event.hpp"
#include "core/allocator.hpp"
#include "core/device_impl.hpp"
#include "trace/trace.hpp"

namespace encore {

namespace {
std::atomic<bool> g_exiting{false};
}  // namespace

namespace detail {

DeviceImpl::DeviceImpl() : allocator(std::make_unique<Allocator>(this)) {}
DeviceImpl::~DeviceImpl() = default;

namespace {
// A whole-queue wait: the ticket taken before it, published after it returned (a wait that throws
// publishes nothing). Concurrent waits may return out of order: done keeps the largest ticket.
template <class Wait> void counted_wait(std::atomic<uint64_t>& begun, std::atomic<uint64_t>& done, Wait wait) {
  const uint64_t ticket = begun.fetch_add(1) + 1;
  wait();
  uint64_t d = done.load();
  while (d < ticket && !done.compare_exchange_weak(d, ticket)) {
  }
}
}  // namespace

void DeviceImpl::finish() { counted_wait(queue_waits_begun, queue_waits_done, [&] { finish_queue(); }); }
void DeviceImpl::read(NativeMem* root, size_t offset, void* dst, size_t n) {
  counted_wait(queue_waits_begun, queue_waits_done, [&] { read_queue(root, offset, dst, n); });
}
// only backends whose devices share contexts (DeviceImpl::context) have async peers
void QueueBackend::copy_peer(const DeviceImpl& src_dev, NativeMem*, size_t, NativeMem*, size_t, size_t, NativeEvent* const*, uint32_t,
                             NativeEvent**) {
  throw Error("internal error: copy_peer from " + src_dev.info.id + " on a backend without async peers");
}
// only backends with lanes beside their queue (open_lanes) replay items concurrently
[[noreturn]] static void no_lanes() { throw Error("internal error: a concurrent replay on a backend without lanes"); }
void QueueBackend::launch_after(uint32_t, BackendKernel&, uint32_t, const size_t*, const size_t*, NativeEvent* const*, uint32_t,
                                NativeEvent**) {
  no_lanes();
}
void QueueBackend::fill_after(uint32_t, NativeMem*, size_t, const void*, size_t, size_t, NativeEvent* const*, uint32_t, NativeEvent**) {
  no_lanes();
}
void QueueBackend::copy_after(uint32_t, NativeMem*, size_t, NativeMem*, size_t, size_t, NativeEvent* const*, uint32_t, NativeEvent**) {
  no_lanes();
}
NativeEvent* QueueBackend::marker_after(uint32_t, NativeEvent* const*, uint32_t) { no_lanes(); }
void QueueBackend::flush_lane(uint32_t) { no_lanes(); }
bool DeviceImpl::device_clock(uint64_t* ns) {
  if (!profiling) return false;  // no marker, no wait: the caller times on the host
  OwnedEvent ev(this, enqueue_marker());
  if (!ev) return false;
  ev.wait();
  uint64_t start = 0, end = 0;
  const bool ok = event_times(ev.get(), &start, &end);
  if (ok) *ns = end;
  return ok;
}
std::vector<std::shared_ptr<DeviceImpl>> DeviceImpl::split(unsigned) {
  throw DeviceError("Device::split: " + info.id + " (" + info.name + ") cannot be split into sub-devices");
}

bool exiting() noexcept { return g_exiting.load(std::memory_order_acquire); }


int debug_level() { return env::debug(); }

}  // namespace detail

// Devices live for the whole process: units, buffers and programs refer to them freely, and no
// OpenCL object is released during static destruction (PoCL may already be gone by then).
namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<detail::DeviceImpl>> open;
  // sub-devices by (device split, parts): made once, like devices (releasing a sub-device's
  // context while PoCL's worker threads still finish its last events crashes PoCL 3.1)
  std::map<std::pair<const detail::DeviceImpl*, unsigned>, std::vector<std::shared_ptr<detail::DeviceImpl>>> parts;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Run at exit (arm_exit_drain), before the driver's thread-local state and statics are destroyed.
// Finishes every queue encore owns, so no driver thread still works (PoCL compiles kernel variants
// on its worker threads) while exit tears LLVM down, and stores the binaries of programs that ran
// new launch configurations while the driver can still give them. Runs once: later calls return.
void drain_at_exit() noexcept {
  if (g_exiting.load()) return;
  std::vector<std::shared_ptr<detail::DeviceImpl>> devs;
  {
    Registry& reg = registry();
    // a thread inside Device::open at exit holds the lock: skip the drain rather than wait for it
    std::unique_lock<std::mutex> lock(reg.mu, std::try_to_lock);
    if (lock.owns_lock()) {
      for (auto& [_, d] : reg.open)
        if (d) devs.push_back(d);
      for (auto& [_, ps] : reg.parts) devs.insert(devs.end(), ps.begin(), ps.end());
    }
  }
  for (auto& d : devs) try {
      d->finish();
      detail::save_dirty_programs(*d);
    } catch (...) {
    }
  g_exiting.store(true);
}

// exit() destroys the calling thread's thread_local objects first, the driver's among them
// (Oclgrind keeps its API-call tracking in one, made at the thread's first OpenCL call), then runs
// atexit handlers and static destructors. A driver call from a static encore object's destructor
// then writes into freed memory. So the drain runs from a thread_local of our own, made after the
// driver's (so destroyed before it) on a thread that opened a device: on the main thread its
// destruction is the process exiting (main returning, or exit() called from main). A thread other
// than main that ends is just a thread ending: nothing happens.
struct ExitSentinel {
  ~ExitSentinel() {
    if (::gettid() == ::getpid()) drain_at_exit();
  }
};
// On every open of an OpenCL device, after the driver calls it made
void watch_exit_on_this_thread() {
  thread_local ExitSentinel sentinel;
  (void)&sentinel;  // made (and its destructor registered) on this thread's first call
}
// After a device opened for the first time: exit() from a thread other than main still drains
// through atexit, registered after the driver's statics were built, so run before they go.
void arm_exit_drain() {
  watch_exit_on_this_thread();
  std::atexit(drain_at_exit);
}

std::string available() {
  std::string s = "available: NULL";
  for (const DeviceInfo& d : detail::list_opencl()) s += ", " + d.id + " (" + d.name + ")";
  return s;
}
}  // namespace

Device Device::open(std::string_view name_in) {
  std::string name(name_in);
  if (name.empty()) {
    name = detail::env::device();
    if (name.empty()) name = "CL";
  }
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int index = -2;
  if (name == "NULL") index = -3;
  else if (name == "CL" || name == "OPENCL") index = -1;
  else if (name.rfind("CL:", 0) == 0 && name.size() > 3 && name.find_first_not_of("0123456789", 3) == std::string::npos) {
    // strictly: atoi wrapped "CL:4294967296" to CL:0
    auto [end, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size())
      throw DeviceError("no OpenCL device " + std::string(name_in) + ": the device number is out of range (" + available() + ")");
  }
  if (index == -2) throw DeviceError("unknown device name \"" + std::string(name_in) + "\" (expected CL, CL:N or NULL; " + available() + ")");
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (index == -3) {
    auto& d = reg.open["NULL"];
    if (!d) d = detail::open_null();
    return Device(d);
  }
  if (index == -1) {
    // default: first GPU, else first device
    auto all = detail::list_opencl();
    if (all.empty()) throw DeviceError("no OpenCL platform or device found (is an ICD such as pocl-opencl-icd installed?); available: NULL");
    index = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].is_gpu) {
        index = static_cast<int>(i);
        break;
      }
  }
  std::string id = "CL:" + std::to_string(index);
  auto& d = reg.open[id];
  if (!d) {
    try {
      d = detail::open_opencl(index);
    } catch (...) {
      reg.open.erase(id);
      throw;
    }
    arm_exit_drain();
  }
  watch_exit_on_this_thread();  // (after the driver calls above: see ExitSentinel)
  return Device(d);
}

std::vector<DeviceInfo> Device::list() { return detail::list_opencl(); }

std::vector<Device> Device::split(unsigned parts) const {
  if (!impl_) throw ArgumentError("use of a null Device");
  if (parts == 0) throw ArgumentError("Device::split: parts must be at least 1 (splitting " + impl_->info.id + ")");
  if (parts > max_split_parts)
    throw ArgumentError("Device::split: at most " + std::to_string(max_split_parts) + " parts, got " + std::to_string(parts) + " (splitting " +
                        impl_->info.id + ")");
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto& made = reg.parts[{impl_.get(), parts}];
  if (made.empty()) made = impl_->split(parts);
  std::vector<Device> out;
  for (auto& d : made) out.emplace_back(d);
  return out;
}

static detail::DeviceImpl& need(const std::shared_ptr<detail::DeviceImpl>& d) {
  if (!d) throw ArgumentError("use of a null Device");
  return *d;
}

const DeviceInfo& Device::info() const { return need(impl_).info; }
bool Device::is_null() const { return need(impl_).is_null(); }

bool Device::supports(DType t) const {
  const char* ext = t == DType::f16 ? "cl_khr_fp16" : t == DType::f64 ? "cl_khr_fp64" : nullptr;
  if (!ext) return true;
  for (const auto& e : need(impl_).info.extensions)
    if (e.first == ext) return true;
  return false;
}
AllocatorStats Device::allocator_stats() const { return need(impl_).allocator->stats(); }
void Device::free_cache() const { need(impl_).allocator->release_cache(); }

void Device::synchronize() const {
  detail::DeviceImpl& d = need(impl_);
  d.finish();
  detail::save_dirty_programs(d);
}

}  // namespace encore
