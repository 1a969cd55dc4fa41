#pragma once
// Initial buffer contents (docs/workload-format.md, "Buffers": zeros, fill, uniform, arange, file) and the
// double → dtype conversion they share.
#include <string>

#include "encore/workload.hpp"

namespace encore::workload::detail {

// Stores v as dtype t at dst: floats round to nearest even (f16 included, directly from double),
// integers round toward zero. False when the result is outside the dtype's range (or NaN → int).
bool store_double(DType t, double v, unsigned char* dst);

// Throws WorkloadError at `path` when some element of set 0 cannot be represented in the dtype.
void check_init_range(const BufferSpec& b, const std::string& path);

}  // namespace encore::workload::detail
