#pragma once
// The bound, replayable form of an ExecutionUnit.
#include <array>
#include <memory>
#include <vector>

#include "encore/execution_unit.hpp"
#include "internal.hpp"

namespace encore::detail {

// One distinct buffer handle used by the items, and where its current bytes live.
struct Entry {
  enum class Kind : uint8_t { fixed, input, planned } kind = Kind::fixed;
  uint32_t slot = 0;      // input slot
  uint64_t rel = 0;       // byte offset inside the input
  Buffer captured;        // as recorded (a placeholder for planned temps)
  Buffer current;         // what replay uses now
  std::vector<std::pair<uint32_t, uint32_t>> kernel_uses;  // (bound item, argument)
  ViewCache views;        // rebased views of recent inputs
};

struct SizeRef {
  int32_t var = -1;  // variable slot, -1 for a literal
  int64_t mul = 0, add = 0;
};

struct BoundItem {
  // what a replay of a kernel with fixed sizes reads, together in the first cache line
  ItemKind kind = ItemKind::kernel;
  bool dynamic = false, has_local = false, empty = false;
  uint32_t dims = 0;
  DeviceImpl* dev = nullptr;
  std::unique_ptr<BackendKernel> kernel;
  std::array<size_t, 3> gws{}, lws{};
  std::array<SizeRef, 3> g{}, l{};
  uint32_t dst = 0, src = 0;  // entries for copy / upload
  const unsigned char* data = nullptr;
  size_t n = 0;
  uint32_t item = 0;          // index in the unit's items
};

struct VarUse {
  uint32_t bound, arg;
  DType as;
};

struct UnitImpl {
  static UnitImpl& of(const ExecutionUnit& u);
  UnitOptions opt;
  std::vector<ExecItem> items;        // captured, planned temps replaced by placeholders
  std::vector<bool> one_time;
  std::vector<BufferImpl*> internal;  // roots created in the capture that nothing outside refers to
  std::vector<Buffer> inputs_captured, inputs, outputs;
  std::vector<Entry> entries;
  std::vector<BoundItem> replay, once;  // replayed items; one-time items (re-run when their bytes changed)
  // bumped after each replay: the storages of written fixed and planned entries (fixed between
  // binds, each once), and the written input entries (their storage follows the bound inputs)
  std::vector<BufferImpl*> written_roots;
  std::vector<uint32_t> written_entries;
  // variables
  std::vector<Variable> vars;
  std::vector<int64_t> var_i;
  std::vector<double> var_f;
  std::vector<std::vector<VarUse>> var_uses;
  // input slots
  std::vector<std::vector<uint32_t>> slot_entries;
  std::vector<std::vector<uint8_t>> captured_overlap;  // [i][j]: captured inputs i and j overlap
  std::vector<bool> slot_written;
  bool inputs_changed = false;
  // inputs that alias a fresh output of this unit are staged through a private copy
  std::vector<Buffer> staging;            // per slot, made on first need
  std::vector<int32_t> staged;            // per slot: 1 when staged this call
  std::vector<uint32_t> fresh_output_roots_idx;
  std::vector<BufferImpl*> fresh_output_roots;
  // one-time items: versions of everything they read or write
  std::vector<std::pair<BufferImpl*, uint64_t>> once_versions;
  std::vector<BufferImpl*> once_written;  // storages one-time items write
  bool versions_taken = false;
  // arena per device
  struct Arena {
    std::shared_ptr<DeviceImpl> dev;
    uint64_t bytes = 0;
    Buffer buf;
  };
  std::vector<Arena> arenas;
  std::vector<std::pair<uint32_t, std::pair<uint32_t, uint64_t>>> planned;  // entry -> (arena, offset)
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  bool bound = false;
  UnitStats stats;
};

inline bool has(Access a, Access bit) { return (static_cast<uint8_t>(a) & static_cast<uint8_t>(bit)) != 0; }

// unit_replay.cpp: binding and the replay path
void bind_unit(UnitImpl& u);
void check_inputs(UnitImpl& u);   // argument aliasing and staging, when inputs changed
void run_unit(UnitImpl& u);
void set_slot_buffer(UnitImpl& u, uint32_t slot, const Buffer& b);
void set_kernel_var(UnitImpl& u, const VarUse& use, uint32_t slot);

struct UnitAccess {
  static ExecutionUnit wrap(std::unique_ptr<UnitImpl> p);
};

std::unique_ptr<UnitImpl> make_unit(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs,
                                    UnitOptions opt, std::vector<BufferImpl*> internal, std::vector<uint64_t> capture_ids);
// Roots created during capture `capture_id` that no handle outside `items` refers to.
std::vector<BufferImpl*> find_internal(const std::vector<ExecItem>& items, uint64_t capture_id);

}  // namespace encore::detail
