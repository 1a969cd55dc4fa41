// encore-info: the OpenCL platforms and devices encore sees, and what each offers.
#include <cstdio>
#include <exception>

#include "encore/encore.hpp"

int main() {
  try {
    auto devices = encore::Device::list();
    if (devices.empty()) std::printf("no OpenCL devices found (install an ICD, e.g. pocl-opencl-icd); the NULL device is always available\n");
    std::string platform;
    for (const encore::DeviceInfo& d : devices) {
      if (d.platform != platform) std::printf("platform: %s\n", (platform = d.platform).c_str());
      std::printf("  %s  %s%s\n", d.id.c_str(), d.name.c_str(), d.is_gpu ? "  [GPU]" : "");
      std::printf("    vendor %s, %s, driver %s\n", d.vendor.c_str(), d.version.c_str(), d.driver_version.c_str());
      std::printf("    compute units %u, global memory %.1f GiB (max allocation %.1f GiB), max work-group %zu\n", d.compute_units,
                  d.global_mem_bytes / 1073741824.0, d.max_alloc_bytes / 1073741824.0, d.max_work_group_size);
      std::printf("    base-address alignment %zu bytes, max work items per dimension %zux%zux%zu, local memory %llu KiB\n", d.base_align_bytes,
                  d.max_work_item_sizes[0], d.max_work_item_sizes[1], d.max_work_item_sizes[2],
                  static_cast<unsigned long long>(d.local_mem_bytes / 1024));
      std::printf("    cl_khr_command_buffer: %s, mutable dispatch: %s\n", d.command_buffer_version.empty() ? "no" : d.command_buffer_version.c_str(),
                  d.mutable_dispatch ? "yes" : "no");
      std::printf("    extensions:");
      for (const auto& [name, ver] : d.extensions) std::printf(" %s%s%s", name.c_str(), ver.empty() ? "" : " ", ver.c_str());
      std::printf("\n");
      try {  // a device its platform's context would not take is reported, the others still open
        (void)encore::Device::open(d.id);
      } catch (const std::exception& e) {
        std::printf("    cannot be opened: %s\n", e.what());
      }
    }
    encore::Device def = encore::Device::open();
    std::printf("default device: %s (%s)\n", def.id().c_str(), def.info().name.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "encore-info: %s\n", e.what());
    return 1;
  }
}
