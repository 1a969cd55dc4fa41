#pragma once
// Every error encore throws derives from encore::Error.
//   try { dev.compile(src); } catch (const encore::CompileError& e) { std::cerr << e.log(); }
#include <stdexcept>
#include <string>

#include "encore/export.hpp"

namespace encore {

class ENCORE_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument to an encore call: wrong kernel argument, out-of-range variable, misaligned view.
class ENCORE_API ArgumentError : public Error {
 public:
  using Error::Error;
};

// No such device, no OpenCL platform, or a device that cannot do what was asked.
class ENCORE_API DeviceError : public Error {
 public:
  using Error::Error;
};

// An OpenCL call failed. status() is the raw code, status_name() its name (CL_OUT_OF_RESOURCES).
class ENCORE_API OpenCLError : public DeviceError {
 public:
  OpenCLError(int status, const std::string& call, const std::string& what);
  int status() const noexcept { return status_; }
  const char* status_name() const noexcept;

 private:
  int status_;
};

// Program build failure; log() holds the compiler's full build log.
class ENCORE_API CompileError : public Error {
 public:
  CompileError(const std::string& what, std::string log);
  const std::string& log() const noexcept { return log_; }

 private:
  std::string log_;
};

// A TinyJit / ExecutionUnit rule was broken: inputs not matching the capture, copyout during capture, ...
class ENCORE_API JitError : public Error {
 public:
  using Error::Error;
};

// Name of an OpenCL status code ("CL_INVALID_VALUE"), or "CL_UNKNOWN_ERROR(-9999)".
ENCORE_API std::string cl_status_name(int status);

}  // namespace encore
