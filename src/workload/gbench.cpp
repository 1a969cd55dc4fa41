#include "workload/gbench.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "workload/reader.hpp"

namespace encore::workload {

namespace {

std::string fixed(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string bytes_text(uint64_t b) {
  return b >= (1u << 20) ? fixed(double(b) / double(1u << 20), 2) + " MiB" : b >= 1024 ? fixed(double(b) / 1024, 1) + " KiB" : std::to_string(b) + " B";
}

// Local time as Google Benchmark writes it: 2024-05-01T12:34:56+02:00.
std::string iso_date() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char b[40], z[8];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
  std::strftime(z, sizeof z, "%z", &tm);  // +0200
  char out[64];
  if (std::strlen(z) == 5) std::snprintf(out, sizeof out, "%s%.3s:%s", b, z, z + 3);  // +02:00
  else std::snprintf(out, sizeof out, "%s%s", b, z);
  return out;
}

std::string read_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

int mhz_per_cpu() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) return int(std::stod(line.substr(line.find(':') + 1)));
  return 0;
}

// cpu0's caches from sysfs, in Google Benchmark's form.
std::string caches_json() {
  std::string out;
  const std::filesystem::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (int i = 0; i < 16; ++i) {
    const auto d = dir / ("index" + std::to_string(i));
    if (!std::filesystem::exists(d / "size")) break;
    std::string size = read_line(d / "size");
    uint64_t bytes = size.empty() ? 0 : std::stoull(size) * (size.back() == 'K' ? 1024 : size.back() == 'M' ? 1 << 20 : 1);
    int sharing = 1;
    const std::string shared = read_line(d / "shared_cpu_list");
    for (char c : shared) sharing += c == ',';
    if (auto dash = shared.find('-'); dash != std::string::npos && shared.find(',') == std::string::npos)
      sharing = std::stoi(shared.substr(dash + 1)) - std::stoi(shared.substr(0, dash)) + 1;
    std::string type = read_line(d / "type");
    out += std::string(out.empty() ? "" : ",") + "\n      {\"type\": " + detail::quote(type == "Unified" ? "Unified" : type) +
           ", \"level\": " + read_line(d / "level") + ", \"size\": " + std::to_string(bytes) + ", \"num_sharing\": " + std::to_string(sharing) + "}";
  }
  return "[" + out + (out.empty() ? "]" : "\n    ]");
}

}  // namespace

std::string summary_table(const std::vector<Report>& reports) {
  std::ostringstream s;
  char line[512];
  int w = 8;
  for (const Report& r : reports) w = std::max(w, int(std::min<size_t>(r.name.size(), 200)));
  std::snprintf(line, sizeof line, "%-*s %6s %6s %6s %12s %12s %8s  %s\n", w, "workload", "items", "pruned", "chains", "eager us", "replay us",
                "speedup", "temp bytes planned / naive");
  s << line;
  for (const Report& r : reports) {
    std::snprintf(line, sizeof line, "%-*s %6zu %6zu %6zu %12.1f %12.1f %7.2fx  %s / %s%s\n", w, r.name.substr(0, 200).c_str(), r.items, r.items_pruned, r.chains,
                  r.eager_step_us,
                  r.replay_step_us, r.speedup, bytes_text(r.temp_bytes_planned).c_str(), bytes_text(r.temp_bytes_naive).c_str(),
                  r.mismatches ? "  DIFFER" : "");
    s << line;
  }
  return s.str();
}

std::string gbench_json(const std::vector<Report>& reports, const std::string& executable) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  std::ostringstream s;
  s << "{\n  \"context\": {\n"
    << "    \"date\": " << detail::quote(iso_date()) << ",\n"
    << "    \"host_name\": " << detail::quote(host) << ",\n"
    << "    \"executable\": " << detail::quote(executable) << ",\n"
    << "    \"num_cpus\": " << std::max(1u, std::thread::hardware_concurrency()) << ",\n"
    << "    \"mhz_per_cpu\": " << mhz_per_cpu() << ",\n"
    << "    \"cpu_scaling_enabled\": false,\n"
    << "    \"caches\": " << caches_json() << ",\n"
    << "    \"load_avg\": [],\n"
#ifdef NDEBUG
    << "    \"library_build_type\": \"release\",\n"
#else
    << "    \"library_build_type\": \"debug\",\n"
#endif
    << "    \"encore_device\": " << detail::quote(reports.empty() ? "" : reports.front().device) << "\n  },\n  \"benchmarks\": [";
  int family = 0;
  for (const Report& r : reports) {
    for (int replay = 0; replay < 2; ++replay) {
      const std::string name = r.name + (replay ? "/replay" : "/eager");
      const double real = replay ? r.replay_step_us : r.eager_step_us, cpu = replay ? r.replay_cpu_us : r.eager_cpu_us;
      s << (family ? "," : "") << "\n    {\n"
        << "      \"name\": " << detail::quote(name) << ",\n"
        << "      \"family_index\": " << family << ",\n"
        << "      \"per_family_instance_index\": 0,\n"
        << "      \"run_name\": " << detail::quote(name) << ",\n"
        << "      \"run_type\": \"iteration\",\n"
        << "      \"repetitions\": 1,\n"
        << "      \"repetition_index\": 0,\n"
        << "      \"threads\": 1,\n"
        << "      \"iterations\": " << r.timed_calls << ",\n"
        << "      \"real_time\": " << fixed(real, 3) << ",\n"
        << "      \"cpu_time\": " << fixed(cpu, 3) << ",\n"
        << "      \"time_unit\": \"us\",\n"
        << "      \"items\": " << r.items << ",\n"
        << "      \"items_replayed\": " << (replay ? r.items_replayed : r.items) << ",\n"
        << "      \"items_pruned\": " << (replay ? r.items_pruned : 0) << ",\n"
        << "      \"temp_bytes_naive\": " << r.temp_bytes_naive << ",\n"
        << "      \"temp_bytes_planned\": " << r.temp_bytes_planned << ",\n"
        << "      \"planned_temps\": " << r.planned_temps << ",\n"
        << "      \"mismatches\": " << r.mismatches << "\n"
        << "    }";
      ++family;
    }
  }
  s << "\n  ]\n}\n";
  return s.str();
}

}  // namespace encore::workload
