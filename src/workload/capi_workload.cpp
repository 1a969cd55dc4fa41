// The C entry points of encore/encore_workload.h: save_workload and load_unit over encore.h handles.
// They live here, not in libencore, so the core keeps no dependency on the harness; the handles and
// errors are libencore's own (encore/c_handles.hpp).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "encore/c_handles.hpp"
#include "encore/encore_workload.h"
#include "encore/workload.hpp"

namespace {

// Runs body as encore.h's functions do: WorkloadError is the harness's own status, the rest maps as
// in libencore (a bad handle, an ArgumentError, a JitError, ...).
template <class F> encore_status c_call(const char* fn, F&& body) noexcept {
  try {
    body();
    return ENCORE_OK;
  } catch (const encore::WorkloadError& e) {
    return encore::capi::set_error(fn, ENCORE_ERROR_WORKLOAD, e.what());
  } catch (...) {
    return encore::capi::current_exception_status(fn);
  }
}

void need(const void* p, const char* what) {
  if (!p) throw encore::ArgumentError(std::string(what) + " is NULL");
}

}  // namespace

extern "C" {

encore_status encore_unit_save(encore_unit unit, const char* path, const char* name) {
  return c_call(__func__, [&] {
    const std::shared_ptr<encore::ExecutionUnit> u = encore::capi::unit_of(unit, "unit");
    need(path, "path");
    if (!*path) throw encore::ArgumentError("path is empty: expected the .json file to write");
    encore::workload::SaveOptions opt;
    if (name) opt.name = name;
    encore::workload::save_workload(*u, std::filesystem::path(path), opt);
  });
}

encore_status encore_unit_load(encore_device dev, const char* path, const encore_unit_options* opt, encore_unit* out, size_t* compiled) {
  return c_call(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    if (compiled) *compiled = 0;
    const encore::Device d = encore::capi::device_of(dev, "dev");
    need(path, "path");
    if (!*path) throw encore::ArgumentError("path is empty: expected a .json file encore_unit_save wrote");
    const encore::UnitOptions uo = encore::capi::unit_options(opt);
    encore::workload::LoadedUnit lu = encore::workload::load_unit(d, std::filesystem::path(path), uo);
    std::vector<std::pair<std::string, encore::Buffer>> named;
    named.reserve(lu.names.size());
    for (size_t k = 0; k < lu.names.size(); ++k) named.emplace_back(std::move(lu.names[k]), lu.buffers[k]);
    const size_t from_source = lu.from_source.size();
    *out = encore::capi::to_handle(std::move(lu.unit), std::move(named));
    if (compiled) *compiled = from_source;
  });
}

}  // extern "C"
