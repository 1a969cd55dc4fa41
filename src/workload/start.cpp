// encore-bench start: how long a new process takes to its first replayed step, loading the saved
// unit (load_unit: no compile where the binaries fit, no warm-up call) or from source as a program
// would (compile, then TinyJit's warm-up and capture calls before the first replay); then the
// results of those calls checked against the same calls run eagerly from the same initial state.
#include <chrono>
#include <sstream>

#include "workload/runner.hpp"

namespace encore::workload {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::vector<unsigned char> bytes_of(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  b.copyout_bytes(v.data(), v.size());
  return v;
}

}  // namespace

std::string StartReport::table() const {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << "workload " << quote(name) << " on " << device << ", " << path << "\n";
  s << "  open device        " << open_ms << " ms\n";
  s << "  " << (from_source ? "compile + calls 0-1" : "load saved unit    ") << " " << build_ms << " ms (" << programs << " programs, "
    << compiled << " compiled from source)\n";
  s << "  first replay       " << first_ms << " ms\n";
  s << "  to first replay    " << total_ms << " ms\n";
  if (!compared) s << "  results            not compared (the NULL device computes nothing)\n";
  else s << "  results            " << (mismatches ? "differ: " + first_mismatch : std::string("equal to eager")) << "\n";
  return s.str();
}

StartReport start(const std::filesystem::path& file, const std::string& device, bool from_source) {
  const auto t0 = Clock::now();
  Device dev = Device::open(device);
  StartReport r;
  r.from_source = from_source;
  r.open_ms = ms_since(t0);
  r.device = dev.id() + " (" + dev.info().name + ")";
  r.path = from_source ? "from source (compile, warm-up and capture calls)" : "saved unit (load_unit)";
  // The saved unit's path reads the file once, in load_unit, as an engine would; this run's own
  // reading (names, the check) comes after the timing there.
  Workload w;
  auto read = [&] {
    w = load(file);
    if (!w.sets.empty()) throw WorkloadError("shapes", "encore-bench start takes a workload without shape sets");
    r.name = w.name;
    r.programs = w.programs.size();
  };
  if (from_source) read();
  RunOptions ro;
  ro.rotate = 1;
  std::vector<std::string> names;     // compared after the timing, eager against what ran
  std::vector<Buffer> ran;
  size_t calls = 1;
  std::unique_ptr<Compiled> cs;       // (from source: the jit's programs, alive until the check)
  std::unique_ptr<Runner> rn;
  World jw;
  LoadedUnit lu;
  auto t1 = Clock::now();
  if (!from_source) {
    lu = load_unit(dev, file);
    r.compiled = lu.from_source.size();
    r.build_ms = ms_since(t1);
    t1 = Clock::now();
    lu.unit();
    dev.synchronize();
    r.first_ms = ms_since(t1);
    names = lu.names;
    ran = lu.buffers;
  } else {
    // as a program written by hand: compiled (the check after the timing too; no copy of the file)
    for (ProgramSpec& p : w.programs) p.binary_file.clear();
    // the compile with the buffers made beside it, as load_unit does
    auto [c, initial] = compile_beside_buffers(w, dev, [&] { return validate(w, dev); });
    cs = std::make_unique<Compiled>(std::move(c));
    r.compiled = dev.is_null() ? 0 : w.programs.size();
    rn = std::make_unique<Runner>(w, dev, *cs, ro);
    jw.resident = std::move(initial.resident);
    const std::vector<Buffer> ins = std::move(initial.inputs);
    const Runner& runner = *rn;
    TinyJit jit([&runner, &jw](const std::vector<Buffer>& in, const std::vector<std::span<const unsigned char>>& host,
                               const std::vector<BoundVar>&) { return runner.step(jw, in, host); });
    std::vector<Buffer> outs;
    calls = 3;  // warm-up, capture, the first replay
    for (size_t i = 0; i < calls; ++i) {
      if (i == 2) {
        dev.synchronize();
        r.build_ms = ms_since(t1);
        t1 = Clock::now();
      }
      outs = jit(ins, rn->host(i), rn->bind(i));
    }
    dev.synchronize();
    r.first_ms = ms_since(t1);
    for (size_t k = 0; k < ins.size(); ++k) names.push_back(w.buffers[static_cast<size_t>(rn->inputs()[k])].name), ran.push_back(ins[k]);
    for (size_t b = 0; b < w.buffers.size(); ++b)
      if (jw.resident[b]) names.push_back(w.buffers[b].name), ran.push_back(jw.resident[b]);
    for (size_t k = 0; k < outs.size(); ++k) names.push_back(w.buffers[static_cast<size_t>(rn->outputs()[k])].name), ran.push_back(outs[k]);
  }
  r.total_ms = ms_since(t0);
  if (!from_source) read();

  // the check, outside the timing: the same calls eagerly, from the same initial state
  r.compared = !dev.is_null();
  if (!r.compared) return r;
  const Compiled ec = validate(w, dev);
  const Runner er(w, dev, ec, ro);
  World ew;
  ew.resident = er.make_resident();
  std::vector<Buffer> ins;
  for (int b : er.inputs()) ins.push_back(er.make(static_cast<size_t>(b), 0));
  std::vector<Buffer> outs;
  for (size_t i = 0; i < calls; ++i) {
    const std::vector<BoundVar> values = er.bind(i);
    outs = er.step(ew, ins, er.host(i));
  }
  const Tolerance tol{w.bitwise(), w.rtol, w.atol};
  for (size_t k = 0; k < names.size(); ++k) {
    const int b = w.find_buffer(names[k]);
    const BufferSpec& s = w.buffers[static_cast<size_t>(b)];
    Buffer eager;
    for (size_t j = 0; j < er.inputs().size(); ++j)
      if (er.inputs()[j] == b) eager = ins[j];
    if (!eager) eager = ew.resident[static_cast<size_t>(b)];
    for (size_t j = 0; j < er.outputs().size(); ++j)
      if (er.outputs()[j] == b) eager = outs[j];
    const std::vector<unsigned char> e = bytes_of(eager), j = bytes_of(ran[k]);
    const Diff d = compare(s.dtype, e.data(), j.data(), s.count, tol);
    if (d.count && r.first_mismatch.empty()) {
      const size_t off = d.first * size(s.dtype);
      r.first_mismatch = "buffer " + quote(s.name) + ", index " + std::to_string(d.first) + ": eager " + format_element(s.dtype, e.data() + off) +
                         ", first replay " + format_element(s.dtype, j.data() + off);
    }
    r.mismatches += d.count;
  }
  return r;
}

}  // namespace encore::workload
