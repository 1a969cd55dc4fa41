#pragma once
// A test-only device for fault injection (issue 8, tests): host memory through the NULL backend,
// kernels computed on the host by registered functions (so results can be checked), and one
// injected fault: the backend call numbered `fail_at` (0-based, counting allocations, views, builds,
// kernel objects, argument sets, launches, writes, reads, copies and finishes) throws DeviceError.
// The fault fires once, then the device works again.
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "encore/device.hpp"

namespace encore_test {

// A kernel's arguments as the host function sees them: buffers as host pointers (already at the
// view's offset), scalars as their bytes.
struct HostArgs {
  std::vector<void*> ptr;
  std::vector<std::array<unsigned char, 8>> bytes;
  template <class T> T* buf(size_t i) const { return static_cast<T*>(ptr.at(i)); }
  template <class T> T scalar(size_t i) const {
    T v;
    std::memcpy(&v, bytes.at(i).data(), sizeof v);
    return v;
  }
};
// Runs the kernel over the whole grid: global[0..dims).
using HostKernel = std::function<void(const HostArgs& args, uint32_t dims, const size_t* global)>;

struct FaultControl {
  std::atomic<long> calls{0};     // backend calls counted so far
  std::atomic<long> fail_at{-1};  // the call that throws; -1: none
  std::atomic<long> fired{0};     // faults injected so far
  std::atomic<long> live_allocs{0}, live_views{0};
  std::map<std::string, HostKernel> kernels;  // by kernel name; a kernel without one does nothing
  std::mutex mu;
  std::string last_fault;  // "call 17: launch f_scale"

  void arm(long at) {
    calls = 0;
    fail_at = at;
  }
  void disarm() { fail_at = -1; }
};

// A Device over a new fault device driven by `ctl`.
encore::Device open_fault_device(std::shared_ptr<FaultControl> ctl);

}  // namespace encore_test
