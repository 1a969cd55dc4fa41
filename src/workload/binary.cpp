// Building a workload's programs from the binaries save_workload wrote: a binary is used only when
// its bytes are those that were saved (a checksum, since a driver may accept damaged bytes) and
// its key fits the device (Device::compile_binary checks that and falls back itself).
#include "workload/binary.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "encore/log.hpp"
#include "workload/reader.hpp"

namespace encore::workload::detail {

std::string binary_sum(const std::vector<unsigned char>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

Program build_program(const ProgramSpec& p, const Device& dev, const std::string& path) {
  try {
    if (p.binary_file.empty() || dev.is_null()) return dev.compile(p.source, p.options);
    std::ifstream f(p.binary_file, std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string why;
    if (!f.good() && !f.eof()) why = "cannot read " + p.binary_file.string();
    else if (bytes.empty()) why = p.binary_file.string() + " is missing or empty";
    else if (binary_sum(bytes) != p.binary_sum)
      why = p.binary_file.string() + " does not hold the bytes that were saved (checksum " + binary_sum(bytes) + ", recorded " + p.binary_sum + ")";
    if (!why.empty()) {
      log_message(LogLevel::info, path + ": saved binary not used, compiling from source: " + why);
      return dev.compile(p.source, p.options);
    }
    return dev.compile_binary(p.source, p.options, bytes, p.binary_key);
  } catch (const CompileError& e) {
    fail(path, std::string("does not compile: ") + e.what());  // what() carries the build log
  }
}

}  // namespace encore::workload::detail
