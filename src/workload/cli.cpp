// The encore-bench command line (Boost.Program_options). Exit codes: 0 results agree, 1 they
// differ, 2 invalid file, bad command line or device error.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>

#include "encore/workload.hpp"

namespace encore::workload {

namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage: encore-bench run WORKLOAD.json [--device CL|CL:N|NULL] [--calls N] [--rotate R]\n"
    "                        [--no-prune] [--no-plan] [--no-batch] [--json OUT.json] [--dump DIR]\n"
    "       encore-bench check WORKLOAD.json [--device CL|CL:N|NULL]\n";

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
      ("no-batch", po::bool_switch(), "no command-buffer batching")
      ("json", po::value<std::string>(), "write the report as JSON to this file (- for stdout)")
      ("dump", po::value<std::string>(), "write state buffers and the last call's outputs as DIR/NAME.bin");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())("workload", po::value<std::string>());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("workload", 1);
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
  if ((cmd != "run" && cmd != "check") || !vm.count("workload")) {
    std::cerr << (cmd.empty() || cmd == "run" || cmd == "check" ? "encore-bench: missing arguments\n" : "encore-bench: unknown command \"" + cmd + "\"\n")
              << kUsage;
    return 2;
  }
  const std::string file = vm["workload"].as<std::string>();
  RunOptions ro;
  ro.calls = vm["calls"].as<int>();
  ro.rotate = vm["rotate"].as<int>();
  if (ro.calls < 1 || ro.rotate < 1) {
    std::cerr << "encore-bench: --calls and --rotate must be at least 1\n";
    return 2;
  }
  if (vm["no-prune"].as<bool>()) ro.jit.prune = false;
  if (vm["no-plan"].as<bool>()) ro.jit.plan = false;
  if (vm["no-batch"].as<bool>()) ro.jit.batch = false;
  if (vm.count("dump")) ro.dump_dir = vm["dump"].as<std::string>();
  ro.progress = isatty(STDERR_FILENO);
  if (adjust) adjust(ro);
  try {
    Workload w = load(file);
    Device dev = Device::open(vm["device"].as<std::string>());
    if (cmd == "check") {
      validate(w, dev);
      std::cout << file << ": valid (" << w.step.size() << " items, checked on " << dev.id() << ")\n";
      return 0;
    }
    Report r = run(w, dev, ro);
    std::cout << r.table();
    if (!r.first_mismatch.empty()) std::cerr << "encore-bench: results differ: " << r.first_mismatch << "\n";
    if (vm.count("json")) {
      std::string out = vm["json"].as<std::string>();
      if (out == "-") {
        std::cout << r.json();
      } else {
        std::ofstream f(out, std::ios::trunc);
        f << r.json();
        if (!f) throw Error("--json: cannot write " + out);
      }
    }
    return r.mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "encore-bench: " << file << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace encore::workload
