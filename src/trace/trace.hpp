#pragma once
// Logging, ENCORE_DEBUG output and the trace (src/trace/).
#include <cstdint>
#include <string>
#include <string_view>
#include "encore/device.hpp"
#include "encore/exec_item.hpp"
#include "encore/log.hpp"

namespace encore::detail {

struct DeviceImpl;
struct NativeEvent;
class OwnedEvent;

// What the trace and ENCORE_DEBUG=2 lines know of an item: made by the caller, which knows its
// kind (item_view, src/exec/kinds.cpp), so trace/ never reads an item's kind-specific fields.
struct ItemView {
  std::string label;  // the kernel's or the call's name, else the kind
  Device device;      // the device whose queue ran it
  double bytes = 0;   // the bytes its accesses span
  Estimate estimate;  // as given at launch (ExecItem::estimate)
};

int debug_level();
// Tracing (encore/profile.hpp): whether recording, a host span, and an enqueued item.
bool trace_active() noexcept;
double trace_now_us();
void trace_span(const char* name, double start_us);  // [start_us, now] on the host track
struct TraceSpan {
  explicit TraceSpan(const char* name);
  ~TraceSpan();
  const char* name;
  double start_us;
};
// Records an item enqueued on `dev` with its completion event (may be null: host times only),
// which the trace keeps until it is written or cleared.
void trace_item(DeviceImpl& dev, OwnedEvent ev, const ItemView& item, const char* phase, uint32_t dims, const size_t* gws);
// A decision of a step that decides (encore/control.hpp) made during a replay: a host item's values,
// a branch's alternative, a loop's iterations; [start_us, now] on its device's track, with `what`.
void trace_decision(DeviceImpl& dev, std::string label, std::string what, double start_us);
// A device time on the host's clock, given one reference instant read on both (src/trace/profile.cpp).
double device_to_host_us(uint64_t device_ns, uint64_t ref_device_ns, double ref_host_us);
// Sends a message to the log sink (encore/log.hpp); by default printed only at ENCORE_DEBUG >= 1.
void log(LogLevel level, std::string_view message);

// ENCORE_DEBUG=2 line for an item that just ran.
void debug_print_item(const ItemView& item, uint32_t dims, const size_t* gws, const size_t* lws, uint64_t device_ns, double host_us);
// ENCORE_DEBUG=2 line for a decision made during a replay (see trace_decision).
void debug_print_decision(const std::string& device_id, const std::string& label, const std::string& what, double host_us);

}  // namespace encore::detail
