#include "encore/error.hpp"

namespace encore {

OpenCLError::OpenCLError(int status, const std::string& call, const std::string& what)
    : DeviceError(call + " failed with " + cl_status_name(status) + (what.empty() ? "" : ": " + what)), status_(status) {}

const char* OpenCLError::status_name() const noexcept {
  thread_local std::string s;
  s = cl_status_name(status_);
  return s.c_str();
}

CompileError::CompileError(const std::string& what, std::string log)
    : Error(what + "\n--- build log ---\n" + log), log_(std::move(log)) {}

}  // namespace encore
