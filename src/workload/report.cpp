// The run report: a table for people, JSON for scripts (field names as in docs/harness.md).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "workload/reader.hpp"

namespace encore::workload {

namespace {

std::string num(double v, int prec = 3) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

}  // namespace

std::string Report::table() const {
  std::ostringstream s;
  auto row = [&](const std::string& k, const std::string& v) { s << "  " << k << std::string(k.size() < 24 ? 24 - k.size() : 1, ' ') << v << "\n"; };
  s << "workload " << detail::quote(name) << " on " << device << "\n";
  row("calls", std::to_string(calls) + " compared, " + std::to_string(timed_calls) + " timed, " + std::to_string(rotate) + " input sets");
  row("options", std::string(prune ? "prune" : "no-prune") + " " + (plan ? "plan" : "no-plan") + (concurrent ? " concurrent" : ""));
  row("items", std::to_string(items) + " (" + std::to_string(items_replayed) + " replayed, " + std::to_string(items_pruned) + " pruned; " +
                   std::to_string(chains) + " chains, the longest " + std::to_string(longest_chain) + " items)");
  row("eager step", num(eager_step_us, 1) + " us  (" + num(eager_item_us, 2) + " us/item)");
  row("replay step", num(replay_step_us, 1) + " us  (" + num(replay_item_us, 2) + " us/item)");
  row("speedup", num(speedup, 2) + "x");
  row("capture", num(capture_ms, 2) + " ms");
  row("temp bytes", "naive " + std::to_string(temp_bytes_naive) + ", planned " + std::to_string(temp_bytes_planned) + ", lower bound " +
                        std::to_string(temp_bytes_lower_bound) + " (" + std::to_string(planned_temps) + " planned temps)");
  for (const SetReport& sr : sets)
    row("  " + sr.shape, "eager " + num(sr.eager_step_us, 1) + " us, replay " + num(sr.replay_step_us, 1) + " us (" + num(sr.speedup, 2) +
                                       "x), capture " + num(sr.capture_ms, 2) + " ms, " + std::to_string(sr.items_pruned) + " pruned, temps planned " +
                                       std::to_string(sr.temp_bytes_planned) + " of " + std::to_string(sr.temp_bytes_naive) + " bytes");
  row("mismatches", std::to_string(mismatches) + (mismatches ? "  first: " + first_mismatch : ""));
  row("result", !compared ? "not compared (the NULL device computes nothing)" : mismatches ? "DIFFER" : "agree");
  return s.str();
}

std::string Report::json() const {
  std::ostringstream s;
  s << "{\n";
  auto field = [&](const char* k, const std::string& v, bool last = false) { s << "  \"" << k << "\": " << v << (last ? "\n" : ",\n"); };
  field("name", detail::quote(name));
  field("device", detail::quote(device));
  field("calls", std::to_string(calls));
  field("timed_calls", std::to_string(timed_calls));
  field("rotate", std::to_string(rotate));
  field("prune", prune ? "true" : "false");
  field("concurrent", concurrent ? "true" : "false");
  field("plan", plan ? "true" : "false");
  field("items", std::to_string(items));
  field("items_replayed", std::to_string(items_replayed));
  field("items_pruned", std::to_string(items_pruned));
  field("chains", std::to_string(chains));
  field("longest_chain", std::to_string(longest_chain));
  field("eager_step_us", num(eager_step_us));
  field("replay_step_us", num(replay_step_us));
  field("eager_item_us", num(eager_item_us));
  field("replay_item_us", num(replay_item_us));
  field("eager_cpu_us", num(eager_cpu_us));
  field("replay_cpu_us", num(replay_cpu_us));
  field("speedup", num(speedup));
  field("capture_ms", num(capture_ms));
  field("temp_bytes_naive", std::to_string(temp_bytes_naive));
  field("temp_bytes_planned", std::to_string(temp_bytes_planned));
  field("temp_bytes_lower_bound", std::to_string(temp_bytes_lower_bound));
  field("planned_temps", std::to_string(planned_temps));
  field("compared", compared ? "true" : "false");
  field("mismatches", std::to_string(mismatches));
  if (!sets.empty()) {
    std::string a = "[";
    for (size_t k = 0; k < sets.size(); ++k) {
      const SetReport& sr = sets[k];
      a += std::string(k ? ",\n    " : "\n    ") + "{\"shape\": " + detail::quote(sr.shape) + ", \"eager_step_us\": " + num(sr.eager_step_us) +
           ", \"replay_step_us\": " + num(sr.replay_step_us) + ", \"speedup\": " + num(sr.speedup) + ", \"capture_ms\": " + num(sr.capture_ms) +
           ", \"items_pruned\": " + std::to_string(sr.items_pruned) + ", \"temp_bytes_naive\": " + std::to_string(sr.temp_bytes_naive) +
           ", \"temp_bytes_planned\": " + std::to_string(sr.temp_bytes_planned) + ", \"temp_bytes_lower_bound\": " +
           std::to_string(sr.temp_bytes_lower_bound) + ", \"planned_temps\": " + std::to_string(sr.planned_temps) + "}";
    }
    field("sets", a + "\n  ]");
  }
  field("first_mismatch", first_mismatch.empty() ? "null" : detail::quote(first_mismatch), true);
  s << "}\n";
  return s.str();
}

}  // namespace encore::workload
