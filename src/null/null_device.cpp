// The NULL device: buffers in host memory, copies and transfers work, kernel launches do nothing.
// It measures encore's own overhead; programs are "built" by reading their kernel signatures.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/allocator.hpp"
#include "core/device_impl.hpp"
#include "testing.hpp"

namespace encore::detail {

namespace {

// A NULL device's memory is host bytes.
char* bytes(NativeMem* m) { return reinterpret_cast<char*>(m); }
NativeMem* as_mem(char* p) { return reinterpret_cast<NativeMem*>(p); }

// In the test build it counts argument sets, so tests can check that replay re-sets only what changed.
struct NullKernel final : BackendKernel {
  NullKernel(std::string name, size_t max_wg, std::array<size_t, 3> reqd) : name(std::move(name)), max_wg(max_wg), reqd(reqd) {}
  void set_arg(uint32_t, size_t, const void*) override { ENCORE_TESTING_DO(++testing::null_arg_sets); }
  void set_buffer(uint32_t, NativeMem*) override { ENCORE_TESTING_DO(++testing::null_arg_sets); }
  void set_local(uint32_t, size_t) override { ENCORE_TESTING_DO(++testing::null_arg_sets); }
  size_t max_work_group_size() const override { return max_wg; }
  // No code, so no memory of its own and no preferred multiple; the limits a device would report.
  WorkGroupInfo work_group_info() const override {
    WorkGroupInfo w;
    w.max_size = max_wg;
    w.compile_size = reqd;
    return w;
  }
  std::string name;
  size_t max_wg;
  std::array<size_t, 3> reqd;
};

struct NullProgram final : BackendProgram {
  NullProgram(size_t device_max_wg, const std::vector<KernelSignature>& sigs) : device_max_wg(device_max_wg) {
    for (const KernelSignature& s : sigs) reqd.emplace_back(s.name, s.reqd_work_group_size);
  }
  std::unique_ptr<BackendKernel> create_kernel(const std::string& name) override {
    size_t forced = 0;
    ENCORE_TESTING_DO(forced = testing::null_kernel_work_group_limit.load());
    std::array<size_t, 3> r{};
    for (const auto& [n, sz] : reqd)
      if (n == name) r = sz;
    return std::make_unique<NullKernel>(name, forced ? std::min(forced, device_max_wg) : device_max_wg, r);
  }
  std::vector<unsigned char> binary() override { return {}; }
  size_t device_max_wg;
  std::vector<std::pair<std::string, std::array<size_t, 3>>> reqd;  // reqd_work_group_size per kernel
};

class NullDevice final : public DeviceImpl {
 public:
  NullDevice() {
    info.id = "NULL";
    info.name = "NULL (no-op device)";
    info.vendor = "encore";
    info.version = "none";
    info.platform = "encore";
    info.compute_units = 1;
    info.global_mem_bytes = info.max_alloc_bytes = uint64_t{1} << 40;
    info.base_align_bytes = 128;  // as PoCL, so views behave the same
    info.max_work_group_size = 1024;
    for (size_t& m : info.max_work_item_sizes) m = 1024;
    info.local_mem_bytes = 1 << 20;  // as PoCL: what runs there passes the launch checks here too
    // it runs nothing, so it can claim every type: Device::supports(f16) is true here
    info.extensions = {{"cl_khr_fp16", "1.0.0"}, {"cl_khr_fp64", "1.0.0"}};
    host_memory = true;  // copies between NULL devices are a memmove (copy_path)
  }
  ~NullDevice() override { allocator.reset(); }
  bool is_null() const override { return true; }
  NativeMem* raw_alloc(size_t bytes) override {
    void* p = std::aligned_alloc(128, (bytes + 127) / 128 * 128);
    if (!p) throw DeviceError("NULL device: out of host memory allocating " + std::to_string(bytes) + " bytes");
    ENCORE_TESTING_DO(++testing::null_live_allocations);
    return as_mem(static_cast<char*>(p));
  }
  void raw_free(NativeMem* mem) override {
    ENCORE_TESTING_DO(--testing::null_live_allocations);
    std::free(bytes(mem));
  }
  NativeMem* make_view(NativeMem* root, size_t offset, size_t) override { return as_mem(bytes(root) + offset); }
  void free_view(NativeMem*) override {}
  void write(NativeMem* root, size_t off, const void* src, size_t n, bool) override { std::memcpy(bytes(root) + off, src, n); }
  void read_queue(NativeMem* root, size_t off, void* dst, size_t n) override { std::memcpy(dst, bytes(root) + off, n); }
  void copy(NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n) override {
    std::memmove(bytes(dst) + doff, bytes(src) + soff, n);
  }
  void fill(NativeMem* root, size_t off, const void* pattern, size_t pb, size_t n) override {
    unsigned char* d = reinterpret_cast<unsigned char*>(bytes(root)) + off;
    for (size_t i = 0; i < n; i += pb) std::memcpy(d + i, pattern, pb);
  }
  // Does nothing, after the check OpenCL makes (CL_INVALID_WORK_GROUP_SIZE), so that a local size
  // over the kernel's limit fails on NULL as it would on a device.
  void launch(BackendKernel& k, uint32_t dims, const size_t*, const size_t* local, NativeEvent** done) override {
    if (local) {
      size_t items = 1;
      for (uint32_t d = 0; d < dims; ++d) items *= local[d];
      if (const size_t max = static_cast<NullKernel&>(k).max_wg; items > max) [[unlikely]]
        throw DeviceError("NULL device: kernel " + static_cast<NullKernel&>(k).name + " launched with " + std::to_string(items) +
                          " work items per group, over its limit of " + std::to_string(max) +
                          " (CL_INVALID_WORK_GROUP_SIZE on OpenCL)");
    }
    if (done) *done = nullptr;  // complete: nothing ran
  }
  void finish_queue() override {}
  // Its events: every call completed its work before it returned, so there is none to wait for.
  void flush() override {}
  void enqueue_barrier(NativeEvent* const*, uint32_t) override {}
  NativeEvent* enqueue_marker() override { return nullptr; }
  void wait_event(NativeEvent*) override {}
  bool event_done(NativeEvent*) override { return true; }
  void retain_event(NativeEvent*) override {}
  void release_event(NativeEvent*) noexcept override {}
  bool event_times(NativeEvent*, uint64_t*, uint64_t*) override { return false; }
  BuildResult build(const std::string& source, const std::string&, const std::vector<unsigned char>*,
                    const BuildSignatures& lists) override {
    BuildResult r;
    const std::vector<KernelSignature>* signatures = lists.get();
    r.kernels = signatures ? *signatures : parse_kernel_signatures(source);
    r.program = std::make_unique<NullProgram>(info.max_work_group_size, r.kernels);
    return r;
  }
  std::string cache_key_prefix() const override { return "NULL"; }
  // `parts` new NULL devices: nothing to divide, but work spreads over devices as on OpenCL
  std::vector<std::shared_ptr<DeviceImpl>> split(unsigned parts) override {
    std::vector<std::shared_ptr<DeviceImpl>> out;
    for (unsigned i = 0; i < parts; ++i) {
      auto d = std::make_shared<NullDevice>();
      d->info.id = info.id + "." + std::to_string(i);
      d->info.parent = info.id;
      out.push_back(std::move(d));
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<DeviceImpl> open_null() { return std::make_shared<NullDevice>(); }

}  // namespace encore::detail
