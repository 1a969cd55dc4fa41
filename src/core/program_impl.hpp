#pragma once
// What a Program and a Kernel refer to (src/core/program.cpp, src/core/program_cache.cpp).
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "encore/program.hpp"
#include "core/device_impl.hpp"

namespace encore::detail {

struct ProgramImpl {
  std::shared_ptr<DeviceImpl> dev;
  std::string source, options;
  std::unique_ptr<BackendProgram> backend;
  std::vector<KernelSignature> kernels;
  std::string disk_path, disk_key;  // disk_path empty when the disk cache is off
  bool from_disk = false;
  bool from_binary = false;  // built from a binary given to Device::compile_binary
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

}  // namespace encore::detail
