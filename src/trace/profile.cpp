// Chrome trace recording (encore/profile.hpp): host spans and device items, written as trace-event
// JSON. Device times come from the items' own events where the queue profiles; they are put on the
// host's clock by one marker per device, read when the trace is written.
#include "encore/profile.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "encore/error.hpp"
#include "core/device_impl.hpp"
#include "core/env.hpp"
#include "core/json_text.hpp"
#include "core/owned_event.hpp"
#include "trace/trace.hpp"

namespace encore {

namespace detail {

namespace {

double host_now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct HostSpan {
  std::string name;
  double start_us, end_us;
};

struct DeviceItem {
  std::shared_ptr<DeviceImpl> dev;
  OwnedEvent ev;  // null where the device runs synchronously (NULL); after `dev`, so released before it
  std::string name, phase, sizes;  // sizes: the global size, "[1024,8]"
  double bytes;
  double enqueued_us;
  std::string decision;  // a step that decides: what this replay chose (trace_decision)
  double host_dur_us = 0;
};

struct Recording {
  std::mutex mu;
  std::vector<HostSpan> spans;
  std::vector<DeviceItem> items;
  void clear() {
    items.clear();
    spans.clear();
  }
  ~Recording() { clear(); }
};

std::atomic<bool> g_active{false};

Recording& rec() {
  static Recording r;
  return r;
}

// Inside a JSON string (core/json_text.hpp).
std::string json_escape(const std::string& s) {
  std::string o;
  append_json_escaped(o, s);
  return o;
}

// ENCORE_PROFILE=file.json: record from the first use until exit.
struct EnvProfile {
  std::string path;
  EnvProfile() {
    rec();  // made first, so it is destroyed after this writes the trace at exit
    if (!env::profile().empty()) {
      path = env::profile();
      g_active = true;
    }
  }
  ~EnvProfile() {
    if (path.empty() || !g_active) return;
    try {
      profile::stop(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "encore: ENCORE_PROFILE: %s\n", e.what());
    }
  }
};
EnvProfile g_env_profile;

}  // namespace

bool trace_active() noexcept { return g_active.load(std::memory_order_relaxed); }
double trace_now_us() { return host_now_us(); }

void trace_span(const char* name, double start_us) {
  if (!trace_active() || start_us == 0) return;
  double end = host_now_us();
  Recording& r = rec();
  std::lock_guard<std::mutex> lock(r.mu);
  r.spans.push_back({name, start_us, end});
}

double device_to_host_us(uint64_t device_ns, uint64_t ref_device_ns, double ref_host_us) {
  // the difference first, in integer nanoseconds: a double holds ~1.8e18 ns (since the epoch, as
  // some drivers count) only to ~256 ns, enough to put an item's start before the previous end
  const int64_t rel = device_ns >= ref_device_ns ? static_cast<int64_t>(device_ns - ref_device_ns)
                                                 : -static_cast<int64_t>(ref_device_ns - device_ns);
  return ref_host_us + static_cast<double>(rel) / 1000.0;
}

TraceSpan::TraceSpan(const char* n) : name(n), start_us(trace_active() ? host_now_us() : 0) {}
TraceSpan::~TraceSpan() { trace_span(name, start_us); }

void trace_item(DeviceImpl& dev, OwnedEvent ev, const ItemView& item, const char* phase, uint32_t dims, const size_t* gws) {
  DeviceItem d{dev.shared_from_this(), std::move(ev), item.label, phase, {}, item.bytes, host_now_us(), {}, 0};
  if (dims) {
    d.sizes = "[";
    for (uint32_t i = 0; i < dims; ++i) d.sizes += (i ? "," : "") + std::to_string(gws[i]);
    d.sizes += "]";
  }
  Recording& r = rec();
  std::lock_guard<std::mutex> lock(r.mu);
  r.items.push_back(std::move(d));
}

void trace_decision(DeviceImpl& dev, std::string label, std::string what, double start_us) {
  const double now = host_now_us();
  DeviceItem d{dev.shared_from_this(), {}, std::move(label), "replay", {}, 0, start_us, std::move(what), now - start_us};
  Recording& r = rec();
  std::lock_guard<std::mutex> lock(r.mu);
  r.items.push_back(std::move(d));
}

}  // namespace detail

namespace profile {

void start() {
  detail::Recording& r = detail::rec();
  std::lock_guard<std::mutex> lock(r.mu);
  r.clear();
  detail::g_active = true;
}

bool active() { return detail::trace_active(); }

void stop(const std::string& path) {
  using namespace detail;
  g_active = false;
  Recording& r = rec();
  std::lock_guard<std::mutex> lock(r.mu);
  // device clock -> host clock, one marker per device: its device time and the host time then
  struct ClockRef {
    uint64_t device_ns = 0;
    double host_us = 0;
  };
  std::map<DeviceImpl*, ClockRef> clock;
  for (DeviceItem& d : r.items) {
    if (!d.ev || clock.count(d.dev.get())) continue;
    ClockRef c;
    if (!d.dev->device_clock(&c.device_ns)) c.device_ns = 0;
    c.host_us = host_now_us();
    clock[d.dev.get()] = c;
  }
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"encore"}})";
  out << ",\n" << R"({"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"host"}})";
  std::map<DeviceImpl*, int> tid;
  for (DeviceItem& d : r.items)
    if (tid.emplace(d.dev.get(), static_cast<int>(tid.size()) + 1).second)
      out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid[d.dev.get()] << ",\"args\":{\"name\":\""
          << json_escape(d.dev->info.id + " " + d.dev->info.name) << "\"}}";
  for (const HostSpan& h : r.spans)
    out << ",\n{\"name\":\"" << json_escape(h.name) << "\",\"cat\":\"capture\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":" << h.start_us
        << ",\"dur\":" << (h.end_us - h.start_us) << "}";
  for (DeviceItem& d : r.items) {
    double ts = d.enqueued_us, dur = d.host_dur_us;
    bool on_device = false;
    if (d.ev) {
      d.ev.wait();
      uint64_t s = 0, e = 0;
      if (d.dev->event_times(d.ev.get(), &s, &e)) {
        const ClockRef& c = clock[d.dev.get()];
        ts = device_to_host_us(s, c.device_ns, c.device_ns ? c.host_us : 0);
        dur = static_cast<double>(e >= s ? e - s : 0) / 1000.0;
        on_device = true;
      }
    }
    out << ",\n{\"name\":\"" << json_escape(d.name) << "\",\"cat\":\"" << d.phase << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << tid[d.dev.get()]
        << ",\"ts\":" << ts << ",\"dur\":" << dur << ",\"args\":{\"global\":\"" << d.sizes << "\",\"bytes\":" << d.bytes
        << ",\"clock\":\"" << (on_device ? "device" : "host enqueue") << "\"";
    if (!d.decision.empty()) out << ",\"decision\":\"" << json_escape(d.decision) << "\"";
    out << "}}";
  }
  out << "\n]}\n";
  r.clear();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << out.str();
  if (!f) throw Error("encore::profile::stop: cannot write the trace to " + path);
}

}  // namespace profile
}  // namespace encore
