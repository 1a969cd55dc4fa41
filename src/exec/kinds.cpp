// The table of item kinds, by ItemKind: the one list a new kind is added to.
#include "exec/kind.hpp"

#include "core/owned_event.hpp"
#include "core/recorder.hpp"
#include "trace/trace.hpp"

namespace encore::detail {

namespace {
constexpr const KindOps* kinds[] = {&kernel_kind, &copy_kind, &upload_kind, &native_kind, &fill_kind, &host_kind, &branch_kind, &loop_kind};
static_assert(sizeof(kinds) / sizeof(kinds[0]) == static_cast<size_t>(ItemKind::loop) + 1, "one table entry per ItemKind");
}  // namespace

const KindOps& kind_of(ItemKind k) {
  const auto i = static_cast<size_t>(k);
  if (i >= sizeof(kinds) / sizeof(kinds[0])) throw ArgumentError("item kind " + std::to_string(i) + " is not a kind this version knows");
  return *kinds[i];
}

void bump_written(const std::vector<Arg>& args) {
  for (const Arg& a : args)
    if (a.kind == Arg::Kind::buffer && (static_cast<uint8_t>(a.access) & static_cast<uint8_t>(Access::out))) a.buf.impl()->bump();
}

void record_item(ExecItem&& item) {
  if (Recorder* r = current_recorder()) r->items.push_back(std::move(item));
}

double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

std::chrono::steady_clock::time_point eager_start() {
  return debug_level() >= 2 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
}

ItemView item_view(const ExecItem& it) {
  ItemView v{kind_of(it).label(it), it.device(), 0, it.estimate};
  for (const StorageAccess& a : it.accesses()) v.bytes += static_cast<double>(a.hi - a.lo);
  return v;
}

void trace_item(DeviceImpl& dev, OwnedEvent ev, const ExecItem& it, const char* phase, uint32_t dims, const size_t* gws) {
  trace_item(dev, std::move(ev), item_view(it), phase, dims, gws);
}

void debug_print_item(const ExecItem& it, uint32_t dims, const size_t* gws, const size_t* lws, uint64_t device_ns, double host_us) {
  debug_print_item(item_view(it), dims, gws, lws, device_ns, host_us);
}

void after_eager(const ExecItem& it, DeviceImpl& dev, std::chrono::steady_clock::time_point t0) {
  if (trace_active()) trace_item(dev, nullptr, it, "eager", 0, nullptr);
  if (debug_level() >= 2) debug_print_item(it, 0, nullptr, nullptr, 0, micros_since(t0));
}

}  // namespace encore::detail
