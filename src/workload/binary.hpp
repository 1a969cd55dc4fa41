#pragma once
// Programs saved with their device binaries (docs/workload-format.md, "Binaries"): the checksum the
// file records, and the one way a workload's program is built (validate, load_unit).
//   Program p = build_program(w.programs[0], dev, "programs.p0");
#include <string>
#include <vector>

#include "encore/workload.hpp"

namespace encore::workload::detail {

// The checksum save_workload records for a binary (ProgramSpec::binary_sum): "s64-" and the bytes'
// sum64 (core/checksum.hpp) as 16 lowercase hex digits. With `like` a sum of the older form (16 hex
// digits alone: 64-bit FNV-1a, what files saved before sum64 hold), the bytes' sum in that form.
std::string binary_sum(const std::vector<unsigned char>& bytes, const std::string& like = {});
// Whether `s` is a sum of either form.
bool is_binary_sum(const std::string& s);

// Program `p` built on `dev`: from its saved binary where the file reads, its bytes give the
// recorded sum and Device::compile_binary takes the key; else compiled from source, with an
// ENCORE_DEBUG=1 line saying why. A failed compile is a WorkloadError at `path` with the log.
Program build_program(const ProgramSpec& p, const Device& dev, const std::string& path);

}  // namespace encore::workload::detail
