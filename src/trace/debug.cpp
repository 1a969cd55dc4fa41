// ENCORE_DEBUG=2: one line per item run (device, name, args, memory, time, GFLOP/s, GB/s).
#include <cstdio>
#include <mutex>

#include "trace/trace.hpp"

namespace encore::detail {

void debug_print_item(const ItemView& item, uint32_t dims, const size_t* gws, const size_t* lws, uint64_t device_ns, double host_us) {
  static std::mutex mu;
  static uint64_t count = 0;
  const double bytes = item.estimate.bytes != 0 ? item.estimate.bytes : item.bytes;
  double secs = device_ns ? device_ns * 1e-9 : host_us * 1e-6;
  std::string sizes;
  for (uint32_t d = 0; d < dims; ++d) sizes += (d ? "," : "") + std::to_string(gws[d]);
  if (dims) {
    sizes = "[" + sizes + "] local [";
    for (uint32_t d = 0; d < dims; ++d) sizes += (d ? "," : "") + std::to_string(lws[d]);
    sizes += "]";
  }
  std::string dev = item.device.id();
  AllocatorStats st = item.device.allocator_stats();
  std::lock_guard<std::mutex> lock(mu);
  char line[512];
  std::snprintf(line, sizeof line, "%-6s %6llu %-28.28s %-24s mem %8.2f MB  %9.2f us%s  %8.2f GFLOP/s  %8.2f GB/s", dev.c_str(),
               static_cast<unsigned long long>(++count), item.label.c_str(),
               sizes.c_str(), st.bytes_in_use / 1e6, secs * 1e6, device_ns ? " (device)" : " (host)  ",
               secs > 0 ? item.estimate.ops / secs * 1e-9 : 0.0, secs > 0 ? bytes / secs * 1e-9 : 0.0);
  log(LogLevel::debug, line);
}

void debug_print_decision(const std::string& device_id, const std::string& label, const std::string& what, double host_us) {
  char line[512];
  std::snprintf(line, sizeof line, "%-6s        %-28.28s %s  (%.2f us host)", device_id.c_str(), label.c_str(),
                what.c_str(), host_us);
  log(LogLevel::debug, line);
}

}  // namespace encore::detail
