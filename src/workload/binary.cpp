// Building a workload's programs from the binaries save_workload wrote: a binary is used only when
// its bytes are those that were saved (a checksum, since a driver may accept damaged bytes) and
// its key fits the device (Device::compile_binary checks that and falls back itself).
#include "workload/binary.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/checksum.hpp"
#include "encore/log.hpp"
#include "workload/reader.hpp"

namespace encore::workload::detail {

namespace {
bool hex16(const std::string& s, size_t at) {
  return s.size() == at + 16 && s.find_first_not_of("0123456789abcdef", at) == std::string::npos;
}
}  // namespace

std::string binary_sum(const std::vector<unsigned char>& bytes, const std::string& like) {
  char text[24];
  if (hex16(like, 0)) {  // the older form: byte by byte, 0.8 ms for an 860 KB binary
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  } else {
    std::snprintf(text, sizeof text, "s64-%016llx", static_cast<unsigned long long>(encore::detail::sum64(bytes.data(), bytes.size())));
  }
  return text;
}

bool is_binary_sum(const std::string& s) { return hex16(s, 0) || (s.rfind("s64-", 0) == 0 && hex16(s, 4)); }

Program build_program(const ProgramSpec& p, const Device& dev, const std::string& path) {
  try {
    if (p.binary_file.empty() || dev.is_null()) return dev.compile(p.source, p.options);
    // read in one piece (a stream iterator took milliseconds for a binary of hundreds of KB)
    std::ifstream f(p.binary_file, std::ios::binary | std::ios::ate);
    std::vector<unsigned char> bytes;
    std::string why;
    if (f) {
      const std::streamoff size = f.tellg();
      if (size > 0) {
        bytes.resize(static_cast<size_t>(size));
        f.seekg(0);
        f.read(reinterpret_cast<char*>(bytes.data()), size);
      }
    }
    if (!f && std::filesystem::exists(p.binary_file)) why = "cannot read " + p.binary_file.string();
    else if (bytes.empty()) why = p.binary_file.string() + " is missing or empty";
    else if (const std::string sum = binary_sum(bytes, p.binary_sum); sum != p.binary_sum)
      why = p.binary_file.string() + " does not hold the bytes that were saved (checksum " + sum + ", recorded " + p.binary_sum + ")";
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
