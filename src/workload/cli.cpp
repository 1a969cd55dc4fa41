// The encore-bench command line (Boost.Program_options). Exit codes: 0 results agree, 1 they
// differ, 2 invalid file, bad command line or device error.
#include "workload/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "encore/profile.hpp"
#include "workload/gbench.hpp"

namespace encore::workload {

namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage: encore-bench run WORKLOAD.json|DIR... [--device CL|CL:N|NULL] [--calls N] [--rotate R]\n"
    "                        [--no-prune] [--no-plan] [--concurrent] [--json OUT.json] [--format encore|gbench]\n"
    "                        [--dump DIR] [--trace TRACE.json] [--root DIR]\n"
    "       encore-bench check WORKLOAD.json|DIR... [--device CL|CL:N|NULL] [--root DIR]\n"
    "       encore-bench start WORKLOAD.json [--device CL|CL:N|NULL] [--from-source]\n"
    "A folder stands for its *.json files, in name order. Several workloads print one summary table.\n";

// The workload files named on the command line, folders expanded to their *.json files.
std::vector<std::filesystem::path> expand(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> files;
  for (const std::string& a : args) {
    if (!std::filesystem::is_directory(a)) {
      files.emplace_back(a);
      continue;
    }
    std::vector<std::filesystem::path> in_dir;
    for (const auto& e : std::filesystem::directory_iterator(a))
      if (e.is_regular_file() && e.path().extension() == ".json") in_dir.push_back(e.path());
    if (in_dir.empty()) throw Error(a + ": a folder without .json workload files");
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

void write_out(const std::string& out, const std::string& text) {
  if (out == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(out, std::ios::trunc);
  f << text;
  if (!f) throw Error("--json: cannot write " + out);
}

}  // namespace

int bench_main(int argc, const char* const* argv, const std::function<void(RunOptions&)>& adjust) {
  po::options_description opts("options");
  opts.add_options()
      ("help,h", "show this help")
      ("device", po::value<std::string>()->default_value(""), "CL (default: first GPU, else first OpenCL device), CL:N or NULL")
      ("calls", po::value<int>()->default_value(20), "calls compared (and at least this many timed)")
      ("rotate", po::value<int>()->default_value(3), "input buffer sets, used in turn")
      ("no-prune", po::bool_switch(), "keep one-time items in replay")
      ("no-plan", po::bool_switch(), "do not plan temporaries into one arena")
      ("concurrent", po::bool_switch(), "replay independent items concurrently (UnitOptions::concurrent)")
      ("from-source", po::bool_switch(), "start: compile and capture as a program does, rather than load the saved unit")
      ("json", po::value<std::string>(), "write the report as JSON to this file (- for stdout)")
      ("format", po::value<std::string>()->default_value("encore"),
       "--json format: encore (the report; an array for several workloads) or gbench (Google Benchmark JSON, for compare.py)")
      ("dump", po::value<std::string>(), "write state buffers and the last call's outputs as DIR/NAME.bin")
      ("trace", po::value<std::string>(), "write a Chrome trace-event file of the run (Perfetto, chrome://tracing)")
      ("root", po::value<std::string>(), "read only files inside DIR (source_file, file, files): for workload files from elsewhere");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())("workload", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("workload", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "encore-bench: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << opts;
    return 0;
  }
  std::string cmd = vm.count("command") ? vm["command"].as<std::string>() : "";
  const bool known = cmd == "run" || cmd == "check" || cmd == "start";
  if (!known || !vm.count("workload")) {
    std::cerr << (cmd.empty() || known ? "encore-bench: missing arguments\n" : "encore-bench: unknown command \"" + cmd + "\"\n")
              << kUsage;
    return 2;
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "encore" && format != "gbench") {
    std::cerr << "encore-bench: --format must be encore or gbench, not \"" << format << "\"\n";
    return 2;
  }
  RunOptions ro;
  ro.calls = vm["calls"].as<int>();
  ro.rotate = vm["rotate"].as<int>();
  if (ro.calls < 1 || ro.rotate < 1) {
    std::cerr << "encore-bench: --calls and --rotate must be at least 1\n";
    return 2;
  }
  if (vm["no-prune"].as<bool>()) ro.jit.unit.prune = false;
  if (vm["no-plan"].as<bool>()) ro.jit.unit.plan = false;
  if (vm["concurrent"].as<bool>()) ro.jit.unit.concurrent = true;
  if (vm.count("dump")) ro.dump_dir = vm["dump"].as<std::string>();
  ro.progress = isatty(STDERR_FILENO);
  if (adjust) adjust(ro);
  std::vector<std::filesystem::path> files;
  try {
    files = expand(vm["workload"].as<std::vector<std::string>>());
  } catch (const std::exception& e) {
    std::cerr << "encore-bench: " << e.what() << "\n";
    return 2;
  }
  if (files.size() > 1 && !ro.dump_dir.empty()) {
    std::cerr << "encore-bench: --dump takes one workload\n";
    return 2;
  }
  std::string file = files.size() == 1 ? files[0].string() : "";
  if (cmd == "start") {
    // a new process's time to its first replayed step (docs/performance.md, "Start-up")
    if (files.size() != 1) {
      std::cerr << "encore-bench: start takes one workload\n";
      return 2;
    }
    try {
      const StartReport r = start(files[0], vm["device"].as<std::string>(), vm["from-source"].as<bool>());
      std::cout << r.table();
      return r.mismatches ? 1 : 0;
    } catch (const std::exception& e) {
      std::cerr << "encore-bench: " << file << ": " << e.what() << "\n";
      return 2;
    }
  }
  const std::string trace = vm.count("trace") ? vm["trace"].as<std::string>() : "";
  // device times in the trace need a profiling queue: asked for before the device opens
  if (!trace.empty()) setenv("ENCORE_PROFILING", "1", 0);
  try {
    Device dev = Device::open(vm["device"].as<std::string>());
    std::vector<Report> reports;
    if (!trace.empty()) encore::profile::start();
    for (const auto& f : files) {
      file = f.string();
      Workload w = load(f, vm.count("root") ? std::filesystem::path(vm["root"].as<std::string>()) : std::filesystem::path());
      if (cmd == "check") {
        validate_sets(w, dev);
        std::cout << file << ": valid (" << w.step.size() << " items" << (w.sets.empty() ? "" : ", " + std::to_string(w.sets.size()) + " shape sets")
                  << ", checked on " << dev.id() << ")\n";
        continue;
      }
      reports.push_back(run(w, dev, ro));
      const Report& r = reports.back();
      if (files.size() == 1) std::cout << r.table();
      if (!r.first_mismatch.empty()) std::cerr << "encore-bench: " << file << ": results differ: " << r.first_mismatch << "\n";
    }
    if (cmd == "check") return 0;
    if (!trace.empty()) encore::profile::stop(trace);
    file.clear();
    if (files.size() > 1) std::cout << summary_table(reports);
    if (vm.count("json")) {
      std::string text;
      if (format == "gbench") {
        text = gbench_json(reports, argc > 0 ? argv[0] : "encore-bench");
      } else if (reports.size() == 1) {
        text = reports[0].json();
      } else {
        text = "[\n";
        for (size_t i = 0; i < reports.size(); ++i) text += (i ? ",\n" : "") + reports[i].json();
        text += "]\n";
      }
      write_out(vm["json"].as<std::string>(), text);
    }
    bool differ = std::any_of(reports.begin(), reports.end(), [](const Report& r) { return r.mismatches > 0; });
    return differ ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "encore-bench: " << (file.empty() ? "" : file + ": ") << e.what() << "\n";
    return 2;
  }
}

}  // namespace encore::workload
