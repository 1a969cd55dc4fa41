#include "fault_device.hpp"
#include "core/allocator.hpp"
#include "core/device_impl.hpp"


namespace encore_test {

namespace {

using encore::detail::BackendKernel;
using encore::detail::NativeMem;
using encore::detail::NativeEvent;
using encore::detail::BackendProgram;
using encore::detail::BuildResult;
using encore::detail::DeviceImpl;
using encore::detail::KernelSignature;

// Counts a backend call; throws on the armed one.
void tick(FaultControl& c, const char* what, const std::string& detail = {}) {
  const long n = c.calls++;
  long at = c.fail_at.load();
  if (n != at || !c.fail_at.compare_exchange_strong(at, -1)) return;
  ++c.fired;
  std::string msg = "call " + std::to_string(n) + ": " + what + (detail.empty() ? "" : " " + detail);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.last_fault = msg;
  }
  throw encore::DeviceError("injected fault at " + msg);
}

class FaultKernel final : public BackendKernel {
 public:
  FaultKernel(std::shared_ptr<FaultControl> c, std::unique_ptr<BackendKernel> inner, std::string name)
      : c_(std::move(c)), inner_(std::move(inner)), name_(std::move(name)) {}
  void set_arg(uint32_t i, size_t size, const void* value) override {
    tick(*c_, "set_arg", name_);
    inner_->set_arg(i, size, value);
    grow(i);
    args_.ptr[i] = nullptr;
    args_.bytes[i] = {};
    std::memcpy(args_.bytes[i].data(), value, std::min<size_t>(size, 8));
  }
  void set_buffer(uint32_t i, encore::detail::NativeMem* mem) override {
    tick(*c_, "set_buffer", name_);
    inner_->set_buffer(i, mem);
    grow(i);
    args_.ptr[i] = reinterpret_cast<void*>(mem);  // NULL's memory is host bytes
  }
  void set_local(uint32_t i, size_t bytes) override {
    tick(*c_, "set_local", name_);
    inner_->set_local(i, bytes);
    grow(i);
  }
  size_t max_work_group_size() const override { return inner_->max_work_group_size(); }
  encore::WorkGroupInfo work_group_info() const override { return inner_->work_group_info(); }

  BackendKernel& inner() { return *inner_; }
  const std::string& name() const { return name_; }
  const HostArgs& args() const { return args_; }

 private:
  void grow(uint32_t i) {
    if (args_.ptr.size() <= i) {
      args_.ptr.resize(i + 1);
      args_.bytes.resize(i + 1);
    }
  }
  std::shared_ptr<FaultControl> c_;
  std::unique_ptr<BackendKernel> inner_;
  std::string name_;
  HostArgs args_;
};

class FaultProgram final : public BackendProgram {
 public:
  FaultProgram(std::shared_ptr<FaultControl> c, std::unique_ptr<BackendProgram> inner) : c_(std::move(c)), inner_(std::move(inner)) {}
  std::unique_ptr<BackendKernel> create_kernel(const std::string& name) override {
    tick(*c_, "create_kernel", name);
    return std::make_unique<FaultKernel>(c_, inner_->create_kernel(name), name);
  }
  std::vector<unsigned char> binary() override { return inner_->binary(); }

 private:
  std::shared_ptr<FaultControl> c_;
  std::unique_ptr<BackendProgram> inner_;
};

class FaultDevice final : public DeviceImpl {
 public:
  FaultDevice(std::shared_ptr<FaultControl> c, int serial) : c_(std::move(c)), inner_(encore::detail::open_null()) {
    info = inner_->info;
    info.id = "FAULT:" + std::to_string(serial);
    info.name = "fault injection over host memory";
  }
  ~FaultDevice() override { allocator.reset(); }  // frees cached memory while this object is whole

  NativeMem* raw_alloc(size_t bytes) override {
    tick(*c_, "alloc", std::to_string(bytes) + " bytes");
    NativeMem* p = inner_->raw_alloc(bytes);
    ++c_->live_allocs;
    return p;
  }
  void raw_free(NativeMem* mem) override {
    --c_->live_allocs;
    inner_->raw_free(mem);
  }
  NativeMem* make_view(NativeMem* root, size_t offset, size_t bytes) override {
    tick(*c_, "make_view");
    NativeMem* v = inner_->make_view(root, offset, bytes);
    ++c_->live_views;
    return v;
  }
  void free_view(NativeMem* view) override {
    --c_->live_views;
    inner_->free_view(view);
  }
  void write(NativeMem* root, size_t offset, const void* src, size_t n, bool blocking) override {
    tick(*c_, "write");
    inner_->write(root, offset, src, n, blocking);
  }
  void read_queue(NativeMem* root, size_t offset, void* dst, size_t n) override {
    tick(*c_, "read");
    inner_->read_queue(root, offset, dst, n);
  }
  void copy(NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n) override {
    tick(*c_, "copy");
    inner_->copy(dst, doff, src, soff, n);
  }
  void fill(NativeMem* root, size_t offset, const void* pattern, size_t pattern_bytes, size_t n) override {
    tick(*c_, "fill");
    inner_->fill(root, offset, pattern, pattern_bytes, n);
  }
  void launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent** done) override {
    auto& fk = static_cast<FaultKernel&>(k);
    tick(*c_, "launch", fk.name());
    inner_->launch(fk.inner(), dims, global, local, done);
    if (auto f = c_->kernels.find(fk.name()); f != c_->kernels.end()) f->second(fk.args(), dims, global);
  }
  void finish_queue() override {
    tick(*c_, "finish");
    inner_->finish_queue();
  }
  // events: the inner device's (not fault points: the numbering of calls stays as the tests know it)
  void flush() override { inner_->flush(); }
  void enqueue_barrier(NativeEvent* const* evs, uint32_t n) override { inner_->enqueue_barrier(evs, n); }
  NativeEvent* enqueue_marker() override { return inner_->enqueue_marker(); }
  void wait_event(NativeEvent* ev) override { inner_->wait_event(ev); }
  bool event_done(NativeEvent* ev) override { return inner_->event_done(ev); }
  void retain_event(NativeEvent* ev) override { inner_->retain_event(ev); }
  void release_event(NativeEvent* ev) noexcept override { inner_->release_event(ev); }
  bool event_times(NativeEvent* ev, uint64_t* start_ns, uint64_t* end_ns) override { return inner_->event_times(ev, start_ns, end_ns); }
  BuildResult build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                    const encore::detail::BuildSignatures& cached) override {
    tick(*c_, "build");
    BuildResult r = inner_->build(source, options, binary, cached);
    r.program = std::make_unique<FaultProgram>(c_, std::move(r.program));
    return r;
  }
  std::string cache_key_prefix() const override { return info.id; }

 private:
  std::shared_ptr<FaultControl> c_;
  std::shared_ptr<DeviceImpl> inner_;
};

}  // namespace

encore::Device open_fault_device(std::shared_ptr<FaultControl> ctl) {
  static std::atomic<int> serial{0};
  return encore::Device(std::make_shared<FaultDevice>(std::move(ctl), serial++));
}

}  // namespace encore_test
