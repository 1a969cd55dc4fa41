#pragma once
// C++ objects as encore.h handles and back, for libraries over encore's C++ API that add C entry
// points of their own (libencore_workload's encore/encore_workload.h). They share encore.h's checked
// handle table and error convention, so their handles mix freely with encore.h's and their failures
// read like encore.h's (a status, encore_last_error() prefixed by the function's name):
//   extern "C" encore_status mylib_load(encore_device dev, encore_unit* out) {
//     try {
//       *out = nullptr;
//       *out = encore::capi::to_handle(mylib::load(encore::capi::device_of(dev, "dev")));
//       return ENCORE_OK;
//     } catch (...) {
//       return encore::capi::current_exception_status(__func__);
//     }
//   }
// A handle that is not a live one of the right type throws from device_of / unit_of; the exception
// is for current_exception_status (ENCORE_ERROR_INVALID_HANDLE naming the parameter).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/device.hpp"
#include "encore/encore.h"
#include "encore/execution_unit.hpp"
#include "encore/export.hpp"

namespace encore::capi {

// The device behind a live handle; `what` names the parameter in the error.
ENCORE_API Device device_of(encore_device h, const char* what);
// The unit behind a live handle, kept alive by the pointer (the handle may be destroyed meanwhile).
ENCORE_API std::shared_ptr<ExecutionUnit> unit_of(encore_unit h, const char* what);
// A new handle owning `u`. `named`: buffers the caller may reach by name (encore_unit_buffer); the
// unit keeps them alive.
ENCORE_API encore_unit to_handle(ExecutionUnit u, std::vector<std::pair<std::string, Buffer>> named = {});
// *opt as encore_capture_begin reads it (NULL: the defaults; its size checked; UnitOptions::validate).
ENCORE_API UnitOptions unit_options(const encore_unit_options* opt);

// Sets this thread's encore_last_error() to "<fn>: <msg>" and returns s.
ENCORE_API encore_status set_error(const char* fn, encore_status s, const std::string& msg) noexcept;
// Inside a catch block: the exception in flight as encore.h maps it (ArgumentError: INVALID_ARGUMENT,
// JitError: JIT, ...), set as this thread's error.
ENCORE_API encore_status current_exception_status(const char* fn) noexcept;

}  // namespace encore::capi
