#pragma once
// The capture check (DESIGN rule 1): TinyJit records call 0 as well as call 1, and at the end of
// call 1 compares the two item by item. A host value the callable takes from its closure (a kernel
// scalar, a launch size, a buffer picked by a host index) that differs between the two calls would
// be frozen at call 1's value by replay: that is a JitError at capture.
//
// A recording is kept in a compact form (no Buffer handles, so call 0's temporaries are freed when
// call 0 ends). Buffers are seen as one of
//   input  - inside input slot k of that call (at a byte offset into it);
//   fresh  - storage allocated during that call: differs between calls by construction, so the two
//            calls' fresh storages are paired in the order the aligned items first use them, and
//            that pairing must then hold for every later use;
//   other  - any other storage (closure state): the same storage both times, still alive.
// Storage allocated in call 0 and used again by call 1 (a lazy initialisation that stored a buffer
// in the closure) is the same storage both times, so it matches.
//
// Alignment: items pair by kind and name (the kernel, or a native call's name), first over the
// longest common suffix, then the longest common prefix, then a longest common subsequence of what
// is left in the middle (when it is at most kMaxMiddleCells pairs; larger middles are skipped).
// Items without a partner are skipped: a lazy initialisation that ran only in call 0, or work a
// flag switched on after call 0. Upload data is compared by size and hash.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer_impl.hpp"
#include "core/var_state.hpp"

namespace encore::detail {

struct SeenBuf {
  enum class Cls : uint8_t { none, input, fresh, other };
  Cls cls = Cls::none;
  uint32_t id = 0;                   // input: its slot; fresh: its index among the call's fresh storages
  uint64_t off = 0, bytes = 0;       // input: byte offset into the input; else into the storage
  const BufferImpl* raw = nullptr;   // the storage (fresh, other)
  std::weak_ptr<BufferImpl> root;    // tells a live storage from a new one at a reused address
};

// An affine size inline; a size that is not affine by its index in CallRecord::exprs (compared by
// form), so the common item carries no Size of its own (100k items: half the record's bytes).
struct SeenSize {
  const VarState* var = nullptr;
  int64_t mul = 0, add = 0;
  int32_t expr = -1;
};

struct SeenArg {
  Arg::Kind kind = Arg::Kind::buffer;
  DType dtype = DType::i32;
  uint32_t buf = 0;               // buffer: its index in CallRecord::bufs
  uint64_t bits = 0;              // scalar: its bits; local: its bytes
  const VarState* var = nullptr;  // variable
  uint32_t arg = 0;               // its place in the item (Operand::arg; the index in ExecItem::args)
  std::shared_ptr<const std::vector<unsigned char>> value;  // bytes: the by-value argument
  int32_t host_slot = -1;         // bytes from a host input: its slot and byte offset (compared, not the value)
  uint64_t host_offset = 0;
};

struct SeenItem {
  ItemKind kind = ItemKind::kernel;
  uint64_t key = 0;                  // kind and name: what alignment pairs on
  uint32_t first = 0, count = 0;     // its arguments in CallRecord::args (ExecItem::args, else its operands)
  uint8_t gn = 0, ln = 0;
  SeenSize g[3], l[3];
  uint64_t data_bytes = 0, data_hash = 0;  // host data it holds (upload, fill; data_hash 0 from a host input)
  int32_t host_slot = -1;                  // upload from a host input: its slot and byte offset
  uint64_t host_offset = 0;
};

struct CallRecord {
  std::vector<SeenItem> items;
  std::vector<SeenArg> args;
  std::vector<SeenBuf> bufs;
  std::vector<SeenBuf> outputs;
  std::vector<Size> exprs;           // the sizes that are not affine (SeenSize::expr)
  uint32_t fresh = 0;                // fresh storages seen
};

// The compact form of one call's items. `capture_id`: the recorder of that call (what is fresh).
CallRecord summarize_call(const std::vector<ExecItem>& items, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs,
                          uint64_t capture_id);

// How the messages name the two recordings and the fixes: TinyJit's calls 0 and 1, or an explicit
// Capture and the one before it (Capture::check_against).
struct CheckWords {
  const char *title, *a, *b, *b_long;  // "TinyJit capture check", "call 0", "call 1", "call 1 (the capture)"
  const char *off_switch, *buffer_fix, *value_fix, *bytes_fix;
};
extern const CheckWords kJitWords, kCaptureWords;

// JitError at the first difference between call 0 and call 1 (`items1`/`outputs1`: call 1 as
// recorded, for the message), naming the item, the argument, both values and the fix.
void check_same_step(const CallRecord& call0, const CallRecord& call1, const std::vector<ExecItem>& items1,
                     const std::vector<Buffer>& outputs1, const CheckWords& words = kJitWords);

// Pairs (index in a, index in b) of the alignment described above, in increasing order.
std::vector<std::pair<uint32_t, uint32_t>> align_items(const std::vector<SeenItem>& a, const std::vector<SeenItem>& b);
constexpr size_t kMaxMiddleCells = size_t{1} << 20;

}  // namespace encore::detail
