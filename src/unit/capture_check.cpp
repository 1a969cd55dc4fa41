// The capture check: call 0 against call 1 (see capture_check.hpp for the rule and its limits).
#include "unit/capture_check.hpp"

#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "encore/error.hpp"
#include "exec/kind.hpp"
#include "core/scalar.hpp"

namespace encore::detail {

namespace {

// One call's items into a CallRecord: each buffer classed (input, fresh, other), each item's
// arguments, sizes and data in compact form.
struct Summary {
  const std::vector<Buffer>& inputs;
  uint64_t capture_id;
  CallRecord r;
  std::unordered_map<const BufferImpl*, uint32_t> fresh_of;
  std::vector<Operand> ops;
  const void* last_kernel = nullptr;  // a kernel's title depends on the kernel alone: runs of one kernel hash its name once
  uint64_t last_key = 0;

  void reserve(const std::vector<ExecItem>& items) {
    r.items.reserve(items.size());
    size_t nargs = 0, nbufs = 0;
    for (const ExecItem& it : items) {
      nargs += it.args.size() + 2;
      for (const Arg& a : it.args) nbufs += a.kind == Arg::Kind::buffer;
      nbufs += 2;
    }
    r.args.reserve(nargs);
    r.bufs.reserve(nbufs);
    fresh_of.reserve(nbufs);
  }

  SeenBuf seen(const Buffer& b) {
    SeenBuf s;
    if (!b) return s;
    BufferImpl* bi = b.impl();
    BufferImpl* root = bi->root();
    for (size_t k = 0; k < inputs.size(); ++k) {
      BufferImpl* in = inputs[k].impl();
      if (!in || in->root() != root || bi->offset < in->offset || bi->offset + bi->nbytes > in->offset + in->nbytes) continue;
      s.cls = SeenBuf::Cls::input;
      s.id = static_cast<uint32_t>(k);
      s.off = bi->offset - in->offset;
      s.bytes = bi->nbytes;
      return s;
    }
    s.off = bi->offset;
    s.bytes = bi->nbytes;
    s.raw = root;
    s.root = bi->base ? bi->base : b.shared_impl();
    if (capture_id != 0 && root->capture_id == capture_id) {
      s.cls = SeenBuf::Cls::fresh;
      auto [it, added] = fresh_of.emplace(root, r.fresh);
      if (added) ++r.fresh;
      s.id = it->second;
    } else {
      s.cls = SeenBuf::Cls::other;
    }
    return s;
  }

  void buffer_arg(const Buffer& b, uint32_t arg) {
    SeenArg a;
    a.kind = Arg::Kind::buffer;
    a.arg = arg;
    a.buf = static_cast<uint32_t>(r.bufs.size());
    r.bufs.push_back(seen(b));
    r.args.push_back(a);
  }

  SeenSize size_of(const Size& s) {
    if (s.is_affine()) return SeenSize{s.var() ? s.var()->state() : nullptr, s.mul(), s.add(), -1};
    r.exprs.push_back(s);
    return SeenSize{nullptr, 0, 0, static_cast<int32_t>(r.exprs.size() - 1)};
  }

  uint64_t key(const ExecItem& it) {
    const void* k = it.kind == ItemKind::kernel ? static_cast<const void*>(it.kernel.impl()) : nullptr;
    if (!k || k != last_kernel) {
      last_key = std::hash<std::string>{}(kind_of(it).title(it)) * 8 + static_cast<uint64_t>(it.kind);
      last_kernel = k;
    }
    return last_key;
  }

  // arguments as given (kernels, native calls), else the buffers the kind touches
  void args(const ExecItem& it) {
    for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
      const Arg& x = it.args[ai];
      if (x.kind == Arg::Kind::buffer) {
        buffer_arg(x.buf, ai);
        continue;
      }
      SeenArg a;
      a.kind = x.kind;
      a.dtype = x.dtype;
      a.bits = x.kind == Arg::Kind::scalar ? x.bits : x.kind == Arg::Kind::local ? x.local_bytes : 0;
      a.var = x.var ? x.var->state() : nullptr;
      a.value = x.value;
      a.host_slot = x.host_slot;
      a.host_offset = x.host_offset;
      a.arg = ai;
      r.args.push_back(a);
    }
    if (it.args.empty()) {
      ops.clear();
      kind_of(it).operands(it, ops);
      for (const Operand& o : ops) buffer_arg(*o.buf, o.arg);
    }
  }

  void sizes_and_data(const ExecItem& it, SeenItem& si) {
    si.gn = it.global.n;
    si.ln = it.local.n;
    for (uint8_t d = 0; d < it.global.n; ++d) si.g[d] = size_of(it.global.v[d]);
    for (uint8_t d = 0; d < it.local.n; ++d) si.l[d] = size_of(it.local.v[d]);
    si.host_slot = it.host_slot;
    si.host_offset = it.host_offset;
    if (it.data) {
      si.data_bytes = it.data->size();
      // bytes from a host input differ call to call by design: the slot and offset are compared
      if (it.host_slot < 0)
        si.data_hash = std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(it.data->data()), it.data->size()));
    }
  }
};

}  // namespace

CallRecord summarize_call(const std::vector<ExecItem>& items, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs,
                          uint64_t capture_id) {
  Summary s{inputs, capture_id, {}, {}, {}};
  s.reserve(items);
  for (const ExecItem& it : items) {
    SeenItem si;
    si.kind = it.kind;
    si.first = static_cast<uint32_t>(s.r.args.size());
    si.key = s.key(it);
    s.args(it);
    s.sizes_and_data(it, si);
    si.count = static_cast<uint32_t>(s.r.args.size()) - si.first;
    s.r.items.push_back(si);
  }
  for (const Buffer& o : outputs) s.r.outputs.push_back(s.seen(o));
  return std::move(s.r);
}

std::vector<std::pair<uint32_t, uint32_t>> align_items(const std::vector<SeenItem>& a, const std::vector<SeenItem>& b) {
  const size_t n = a.size(), m = b.size();
  size_t suffix = 0;
  while (suffix < n && suffix < m && a[n - 1 - suffix].key == b[m - 1 - suffix].key) ++suffix;
  size_t prefix = 0;
  while (prefix < n - suffix && prefix < m - suffix && a[prefix].key == b[prefix].key) ++prefix;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  pairs.reserve(prefix + suffix);
  for (size_t k = 0; k < prefix; ++k) pairs.emplace_back(static_cast<uint32_t>(k), static_cast<uint32_t>(k));
  const size_t ma = n - suffix - prefix, mb = m - suffix - prefix;
  if (ma > 0 && mb > 0 && ma * mb <= kMaxMiddleCells) {
    // longest common subsequence of the middles; on ties call 0's item is skipped first (the usual
    // extra item is call 0's lazy initialisation)
    const size_t w = mb + 1;
    std::vector<uint32_t> L((ma + 1) * w, 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return L[i * w + j]; };
    for (size_t i = ma; i-- > 0;)
      for (size_t j = mb; j-- > 0;)
        at(i, j) = a[prefix + i].key == b[prefix + j].key ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < ma && j < mb) {
      if (a[prefix + i].key == b[prefix + j].key && at(i, j) == at(i + 1, j + 1) + 1) {
        pairs.emplace_back(static_cast<uint32_t>(prefix + i), static_cast<uint32_t>(prefix + j));
        ++i;
        ++j;
      } else if (at(i + 1, j) >= at(i, j + 1)) {
        ++i;
      } else {
        ++j;
      }
    }
  }
  for (size_t k = 0; k < suffix; ++k)
    pairs.emplace_back(static_cast<uint32_t>(n - suffix + k), static_cast<uint32_t>(m - suffix + k));
  return pairs;
}

namespace {

std::string size_str(const CallRecord& r, const SeenSize& s) {
  if (s.expr >= 0) return r.exprs[static_cast<size_t>(s.expr)].str([](const Variable& v) { return "\"" + v.name() + "\""; });
  if (!s.var) return std::to_string(s.add);
  std::string v = "\"" + s.var->name + "\"";
  if (s.mul != 1) v = std::to_string(s.mul) + "*" + v;
  if (s.add != 0) v += (s.add > 0 ? "+" : "") + std::to_string(s.add);
  return v;
}

std::string sizes_str(const CallRecord& r, const SeenSize* s, uint8_t n) {
  if (n == 0) return "none (encore chooses)";
  std::string out = "{";
  for (uint8_t d = 0; d < n; ++d) out += (d ? ", " : "") + size_str(r, s[d]);
  return out + "}";
}

std::string buf_str(const SeenBuf& b, const char* call, const Buffer* live) {
  std::string at = b.off != 0 ? " at byte " + std::to_string(b.off) : "";
  switch (b.cls) {
    case SeenBuf::Cls::none: return "no buffer";
    case SeenBuf::Cls::input: return "input " + std::to_string(b.id) + at;
    case SeenBuf::Cls::fresh:
      return "a buffer allocated during " + std::string(call) + " (" + std::to_string(b.bytes) + " bytes" + at + ")";
    case SeenBuf::Cls::other: {
      if (live) return "closure buffer " + live->describe();
      std::shared_ptr<BufferImpl> r = b.root.lock();
      if (!r) return "a closure buffer (" + std::to_string(b.bytes) + " bytes" + at + ") freed since";
      return "closure buffer " + Buffer(r).describe() + at;
    }
  }
  return "?";
}

// Pairs the two calls' fresh storages as the aligned items first use them.
struct FreshPairing {
  std::vector<int64_t> to1, to0;
  bool same(const SeenBuf& a, const SeenBuf& b) {
    if (a.off != b.off || a.bytes != b.bytes) return false;
    using C = SeenBuf::Cls;
    if (a.cls == C::none || b.cls == C::none || a.cls == C::input || b.cls == C::input) return a.cls == b.cls && a.id == b.id;
    if (a.cls == C::fresh && b.cls == C::fresh) {
      if (to1[a.id] < 0 && to0[b.id] < 0) {
        to1[a.id] = b.id;
        to0[b.id] = a.id;
        return true;
      }
      return to1[a.id] == static_cast<int64_t>(b.id);
    }
    // the same storage, still alive: closure state, or call 0's lazy allocation kept by the closure
    return a.raw == b.raw && !a.root.expired();
  }
};

std::string item_str(const ExecItem& it) { return kind_of(it).title(it); }

// A by-value argument for a message: its size and its bytes in hex (the first 32).
std::string bytes_str(const std::vector<unsigned char>& b) {
  static const char* hex = "0123456789abcdef";
  std::string s = std::to_string(b.size()) + " bytes 0x";
  for (size_t i = 0; i < b.size() && i < 32; ++i) {
    s += hex[b[i] >> 4];
    s += hex[b[i] & 15];
  }
  return s + (b.size() > 32 ? "..." : "");
}

// Where a by-value argument's bytes come from, for a message.
std::string bytes_place_str(const SeenArg& a) {
  if (a.host_slot < 0) return bytes_str(*a.value) + " (a constant)";
  return std::to_string(a.value->size()) + " bytes from host input " + std::to_string(a.host_slot) + " at byte offset " +
         std::to_string(a.host_offset);
}

}  // namespace

const CheckWords kJitWords{
    "TinyJit capture check", "call 0", "call 1", "call 1 (the capture)",
    " If the difference is meant to happen once and then stay (a flag set after call 0), switch this check off for this jit: "
    "JitOptions::capture.check_closure = false. Only calls 0 and 1 are compared: a value that changes later is found by verify mode "
    "(ENCORE_VERIFY=N).",
    "Replay would use call 1's buffer on every call. A buffer that changes between calls must be an input: pass it as an argument "
    "of the call (jit(buf, ...)).",
    "Replay would use call 1's value on every call. A value that changes between calls must be a Variable: launch with the "
    "Variable and pass it bound to each call (jit(..., v.bind(value))).",
    "Replay would use call 1's bytes on every call. A by-value struct or vector that changes between calls must come from a "
    "host input: pass it to the call as a host span (a std::span<const T> argument) and launch with encore::bytes_from(span) "
    "(or a part of it: bytes_from(span, offset, size)), which replays each call's bytes."};

const CheckWords kCaptureWords{
    "Capture check", "the previous capture", "this capture", "this capture",
    " (Capture::check_against / encore_capture_check_against compared this capture with the previous one.)",
    "Replay would use this capture's buffer on every run. A buffer that changes between runs must be an input: declare it with "
    "Capture::add_input (encore_capture_add_input) and bind it before each run.",
    "Replay would use this capture's value on every run. A value that changes between runs must be a Variable: launch with the "
    "Variable and bind it before each run (ExecutionUnit::bind_var, encore_unit_bind_var).",
    "Replay would use this capture's bytes on every run. A by-value struct or vector that changes between runs must come from a "
    "host input: declare its memory with Capture::add_host_input (encore_capture_add_host_input), launch with "
    "encore::bytes_from (encore_arg_bytes_from) of that memory, and bind each run's bytes "
    "(ExecutionUnit::bind_host_input, encore_unit_bind_host_input)."};

namespace {

// Two recordings compared pair by pair of aligned items; the first difference is a JitError naming
// the item, the argument, both values and the fix.
struct StepCompare {
  const CallRecord &c0, &c1;
  const std::vector<ExecItem>& items1;
  const CheckWords& w;
  FreshPairing fp;

  [[noreturn]] void fail(uint32_t i, uint32_t j, const std::string& what, const std::string& v0, const std::string& v1, const char* fix) const {
    std::string where = "item " + std::to_string(j) + " (" + item_str(items1[j]) + ")";
    if (i != j) where += ", item " + std::to_string(i) + " of " + w.a + ",";
    throw JitError(std::string(w.title) + ": the step's " + what + " in " + where + " differs between " + w.a + " and " + w.b_long + ": " + v0 +
                   " in " + w.a + ", " + v1 + " in " + w.b + ". " + fix + w.off_switch);
  }

  void args(uint32_t i, uint32_t j) {
    const SeenItem &a = c0.items[i], &b = c1.items[j];
    const ExecItem& it = items1[j];
    auto arg_name = [&](uint32_t k) { return kind_of(it).operand_name(it, c1.args[b.first + k].arg); };
    std::vector<Operand> ops;
    kind_of(it).operands(it, ops);
    if (a.count != b.count) fail(i, j, "number of arguments", std::to_string(a.count), std::to_string(b.count), w.value_fix);
    for (uint32_t k = 0; k < a.count; ++k) {
      const SeenArg &x = c0.args[a.first + k], &y = c1.args[b.first + k];
      const Buffer* live = nullptr;
      for (const Operand& o : ops)
        if (o.arg == y.arg) live = o.buf;
      static constexpr const char* kinds[] = {"a buffer", "a scalar", "a Variable", "__local memory", "by-value bytes"};
      if (x.kind != y.kind)
        fail(i, j, arg_name(k), kinds[static_cast<int>(x.kind)], kinds[static_cast<int>(y.kind)],
             x.kind == Arg::Kind::buffer ? w.buffer_fix : w.value_fix);
      switch (y.kind) {
        case Arg::Kind::buffer:
          if (const SeenBuf &xb = c0.bufs[x.buf], &yb = c1.bufs[y.buf]; !fp.same(xb, yb)) {
            bool other = xb.cls == SeenBuf::Cls::other && yb.cls == SeenBuf::Cls::other;
            fail(i, j, arg_name(k), buf_str(xb, w.a, nullptr), (other ? "another " : "") + buf_str(yb, w.b, live), w.buffer_fix);
          }
          break;
        case Arg::Kind::scalar:
          if (x.dtype != y.dtype || x.bits != y.bits)
            fail(i, j, arg_name(k), value_str(x.dtype, &x.bits), value_str(y.dtype, &y.bits), w.value_fix);
          break;
        case Arg::Kind::variable:
          if (x.var != y.var || x.dtype != y.dtype)
            fail(i, j, arg_name(k), "Variable \"" + x.var->name + "\" as " + std::string(name(x.dtype)),
                 "Variable \"" + y.var->name + "\" as " + std::string(name(y.dtype)), w.value_fix);
          break;
        case Arg::Kind::bytes:
          // from a host input: the place is compared (its bytes change call to call by design);
          // otherwise the value (padding is zeroed at launch where the layout is known: member bytes)
          if (x.host_slot != y.host_slot || x.host_offset != y.host_offset || x.value->size() != y.value->size())
            fail(i, j, arg_name(k), bytes_place_str(x), bytes_place_str(y), w.bytes_fix);
          if (x.host_slot < 0 && *x.value != *y.value) fail(i, j, arg_name(k), bytes_str(*x.value), bytes_str(*y.value), w.bytes_fix);
          break;
        case Arg::Kind::local:
          if (x.bits != y.bits)
            fail(i, j, arg_name(k), std::to_string(x.bits) + " bytes of __local memory", std::to_string(y.bits) + " bytes", w.value_fix);
          break;
      }
    }
  }

  bool same_sizes(const SeenSize* p, uint8_t pn, const SeenSize* q, uint8_t qn) const {
    if (pn != qn) return false;
    for (uint8_t d = 0; d < pn; ++d) {
      const SeenSize &x = p[d], &y = q[d];
      if (x.var != y.var || x.mul != y.mul || x.add != y.add || (x.expr < 0) != (y.expr < 0)) return false;
      if (x.expr >= 0 && !(c0.exprs[static_cast<size_t>(x.expr)] == c1.exprs[static_cast<size_t>(y.expr)])) return false;
    }
    return true;
  }

  void sizes(uint32_t i, uint32_t j) const {
    const SeenItem &a = c0.items[i], &b = c1.items[j];
    if (!same_sizes(a.g, a.gn, b.g, b.gn)) fail(i, j, "global size", sizes_str(c0, a.g, a.gn), sizes_str(c1, b.g, b.gn), w.value_fix);
    if (!same_sizes(a.l, a.ln, b.l, b.ln)) fail(i, j, "local size", sizes_str(c0, a.l, a.ln), sizes_str(c1, b.l, b.ln), w.value_fix);
  }

  // an upload's source and bytes, a fill's value
  void data(uint32_t i, uint32_t j) const {
    const SeenItem &a = c0.items[i], &b = c1.items[j];
    auto source_str = [](const SeenItem& s) {
      return s.host_slot < 0 ? std::string("bytes recorded at capture")
                             : "host input " + std::to_string(s.host_slot) + " at byte offset " + std::to_string(s.host_offset);
    };
    if (a.host_slot != b.host_slot || a.host_offset != b.host_offset)
      fail(i, j, "copyin source", source_str(a), source_str(b),
           "Only a copyin from a host span passed to the call (a std::span<const T> argument) uploads that call's bytes on replay; "
           "any other copyin is replayed with the capture's bytes. Copy in from the span argument itself (or a subspan of it) on every call.");
    if (b.kind == ItemKind::fill && (a.data_bytes != b.data_bytes || a.data_hash != b.data_hash))
      fail(i, j, "fill value", "one value", "another value",
           "A fill inside the step is replayed with the capture's value on every call. A value that changes between calls belongs in a "
           "buffer passed as an input (or a kernel with a Variable argument).");
    if (a.data_bytes != b.data_bytes || a.data_hash != b.data_hash)
      fail(i, j, "uploaded host data", std::to_string(a.data_bytes) + " bytes", "other bytes (" + std::to_string(b.data_bytes) + " bytes)",
           "A copyin inside the step is replayed with the capture's bytes on every call. Pass host data that changes as a host span "
           "argument (std::span<const T>) and copy in from it, or upload it outside the step into a buffer passed as an input.");
  }

  void outputs(const std::vector<Buffer>& outputs1) {
    const std::string title = w.title, a0 = w.a, b1 = w.b;
    if (c0.outputs.size() != c1.outputs.size())
      throw JitError(title + ": " + a0 + " returned " + std::to_string(c0.outputs.size()) + " buffers, " + w.b_long + " " +
                     std::to_string(c1.outputs.size()) + ". Replay returns " + b1 + "'s outputs on every call: host code must not steer "
                     "what the step returns." + w.off_switch);
    for (size_t k = 0; k < c0.outputs.size(); ++k)
      if (!fp.same(c0.outputs[k], c1.outputs[k])) {
        const Buffer* live = outputs1[k] ? &outputs1[k] : nullptr;
        bool other = c0.outputs[k].cls == SeenBuf::Cls::other && c1.outputs[k].cls == SeenBuf::Cls::other;
        throw JitError(title + ": output " + std::to_string(k) + " differs between " + a0 + " and " + w.b_long + ": " +
                       buf_str(c0.outputs[k], w.a, nullptr) + " in " + a0 + ", " + (other ? "another " : "") + buf_str(c1.outputs[k], w.b, live) +
                       " in " + b1 + ". Replay returns " + b1 + "'s output on every call; a buffer that changes between calls must be an input." +
                       w.off_switch);
      }
  }
};

}  // namespace

void check_same_step(const CallRecord& c0, const CallRecord& c1, const std::vector<ExecItem>& items1, const std::vector<Buffer>& outputs1,
                     const CheckWords& w) {
  StepCompare cmp{c0, c1, items1, w, FreshPairing{std::vector<int64_t>(c0.fresh, -1), std::vector<int64_t>(c1.fresh, -1)}};
  const std::vector<std::pair<uint32_t, uint32_t>> pairs = align_items(c0.items, c1.items);
  if (pairs.size() != c0.items.size() || pairs.size() != c1.items.size())
    log(LogLevel::info, std::string(w.title) + ": " + std::to_string(c0.items.size() - pairs.size()) + " items of " + w.a + " and " +
                            std::to_string(c1.items.size() - pairs.size()) + " of " + w.b + " have no partner in the other and were not compared");
  for (auto [i, j] : pairs) {
    cmp.args(i, j);
    cmp.sizes(i, j);
    cmp.data(i, j);
  }
  cmp.outputs(outputs1);
}

}  // namespace encore::detail
