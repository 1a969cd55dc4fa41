// load_unit: a saved step (save_workload's file) as an ExecutionUnit ready to replay at its first
// call. Its programs come from their saved binaries where the keys fit (workload/binary.cpp), its
// buffers from the saved bytes, and the step is recorded without running (CaptureOptions::
// record_only), so the first run is a replay that also runs the one-time items once.
#include <algorithm>

#include "workload/runner.hpp"

namespace encore::workload {

using namespace detail;

Buffer LoadedUnit::buffer(std::string_view name) const {
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return buffers[k];
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw ArgumentError("LoadedUnit::buffer: no buffer \"" + std::string(name) + "\" (inputs, state, const and outputs: " +
                      (known.empty() ? "none" : known) + "; temps belong to the unit)");
}

LoadedUnit load_unit(const Device& dev, const std::filesystem::path& file, const UnitOptions& opt) {
  const Workload w = load(file);
  if (!w.sets.empty())
    throw WorkloadError("shapes", "a workload with shape sets holds one step per set; load_unit loads one step (a file without \"shapes\")");
  // the saved binaries' build, with the buffers made beside it
  auto [c, initial] = compile_beside_buffers(w, dev, [&] { return validate(w, dev); });
  LoadedUnit out;
  for (size_t k = 0; k < w.programs.size(); ++k)
    if (!c.programs[k].from_binary() && !dev.is_null()) out.from_source.push_back(w.programs[k].name);
  RunOptions ro;
  ro.rotate = 1;
  const Runner r(w, dev, c, ro);
  if (r.has_host_input())
    throw WorkloadError("step", "an argument takes per-call bytes ({\"bytes\": [...]}): load_unit gives a unit without host inputs; run such a file with encore-bench run");
  World world;
  world.resident = std::move(initial.resident);
  const std::vector<Buffer> inputs = std::move(initial.inputs);
  const std::vector<BoundVar> values = r.bind(0);  // each variable at its first value (save_workload writes the one it had)
  std::vector<Buffer> outputs;
  {
    CaptureOptions co;
    co.record_only = true;
    Capture cap(opt, co);
    for (const Buffer& b : inputs) cap.add_input(b);
    outputs = r.step(world, inputs, {});
    for (const Buffer& b : outputs) cap.add_output(b);
    out.unit = cap.end();
  }
  auto add = [&](int b, const Buffer& buf) {
    out.names.push_back(w.buffers[static_cast<size_t>(b)].name);
    out.buffers.push_back(buf);
  };
  for (size_t k = 0; k < inputs.size(); ++k) add(r.inputs()[k], inputs[k]);
  for (size_t b = 0; b < w.buffers.size(); ++b)
    if (world.resident[b]) add(static_cast<int>(b), world.resident[b]);
  for (size_t k = 0; k < outputs.size(); ++k) add(r.outputs()[k], outputs[k]);
  return out;
}

}  // namespace encore::workload
