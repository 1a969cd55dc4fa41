// Saving a captured ExecutionUnit as an `encore.workload/1` file (docs/workload-format.md): the JSON
// plus raw little-endian `.bin` files with the initial contents of the inputs, state, const and
// upload buffers, so `encore-bench run` replays and measures exactly the captured step.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "encore/workload.hpp"
#include "workload/binary.hpp"
#include "workload/reader.hpp"

namespace encore::workload {

using detail::fail;
using detail::quote;  // a JSON string (core/json_text.hpp: kernel sources keep \n and \t readable)


namespace {

// Kernel used for copies the format's whole-buffer `copy` item cannot express (views).
constexpr const char* kCopyProgram = "encore_save";
constexpr const char* kCopyKernel = "encore_copy_bytes";
constexpr const char* kCopySource =
    "__kernel void encore_copy_bytes(__global const uchar* src, __global uchar* dst) {\n"
    "  size_t i = get_global_id(0);\n"
    "  dst[i] = src[i];\n"
    "}\n";

// A JSON string for the step, where '@' delimits the buffer and variable placeholders resolved
// once every name is known: a literal '@' is written as its escape.
std::string qstep(std::string_view s) {
  std::string q = quote(s), r;
  for (char c : q) r += c == '@' ? std::string("\\u0040") : std::string(1, c);
  return r;
}

// A file or folder of the save that could not be written: a WorkloadError, so the C API gives it
// ENCORE_ERROR_WORKLOAD like every other problem of the file (encore/encore_workload.h).
[[noreturn]] void cannot_write(const std::filesystem::path& p, const std::string& why) {
  fail("", "save_workload: cannot write " + quote(p.string()) + (why.empty() ? "" : ": " + why));
}

bool has_write(Access a) { return (static_cast<uint8_t>(a) & static_cast<uint8_t>(Access::out)) != 0; }

// A JSON number that reads back as exactly `d` (as a double): %.17g round-trips every double.
std::string real(double d, const std::string& path) {
  if (!std::isfinite(d)) fail(path, "a non-finite value cannot be written in a workload file");
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // keeps -0.0 a real
  return s;
}

bool safe_name(const std::string& n) {
  if (n.empty() || n.size() > 64 || n[0] == '.') return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

struct WBuf {
  std::string user_name;   // Buffer::name() of the storage, maybe unusable
  std::string name;        // as written
  DType dtype = DType::f32;
  size_t count = 0;
  Role role = Role::temp;
  Buffer bytes_from;       // inputs, state, const: read for the init file
  std::shared_ptr<const std::vector<unsigned char>> data;  // uploads: the snapshot
  bool written = false;
  size_t nbytes() const { return count * size(dtype); }
};

// A handle as (workload buffer, byte offset, byte length).
struct Ref {
  int buf = -1;
  uint64_t off = 0, bytes = 0;
};

class Saver {
 public:
  Saver(const ExecutionUnit& unit, const SaveOptions& opt) : unit_(unit), opt_(opt) {}

  void save(const std::filesystem::path& path) {
    std::string stem = path.stem().string();
    if (stem.empty()) stem = "workload";
    const std::filesystem::path dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    const std::string data_rel = stem + ".data";
    std::error_code ec;
    std::filesystem::create_directories(dir / data_rel, ec);
    if (ec) cannot_write(dir / data_rel, ec.message());
    dir_ = dir;
    data_rel_ = data_rel;
    classify();
    std::string items = step();
    name_buffers();
    std::string vars = variables();
    items = resolve(items);
    std::string buffers = buffer_section(dir, data_rel);
    std::string json = "{\n  \"format\": \"encore.workload/1\",\n  \"name\": " + quote(opt_.name.empty() ? stem : opt_.name) + ",\n";
    if (opt_.has_tolerance)
      json += "  \"tolerance\": {\"rtol\": " + real(opt_.rtol, "tolerance.rtol") + ", \"atol\": " + real(opt_.atol, "tolerance.atol") + "},\n";
    json += "  \"programs\": {" + programs_ + "\n  },\n";
    json += "  \"buffers\": {" + buffers + "\n  },\n";
    if (!vars.empty()) json += "  \"variables\": {" + vars + "\n  },\n";
    json += "  \"step\": [" + items + "\n  ]\n}\n";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << json;
    f.close();
    if (!f) cannot_write(path, "");
  }

 private:
  // Input slots first (each its own workload buffer), then storages in order of first use.
  void classify() {
    for (size_t s = 0; s < unit_.num_inputs(); ++s) {
      const Buffer& in = unit_.captured_input(s);
      for (size_t t = 0; t < s; ++t)
        if (in.overlaps(unit_.captured_input(t)))
          fail("", "input slots " + std::to_string(t) + " and " + std::to_string(s) + " overlap: a workload file cannot express that");
      WBuf b;
      b.user_name = in.name();
      b.dtype = in.dtype();
      b.count = in.count();
      b.role = Role::input;
      b.bytes_from = unit_.input(s);  // what the next replay reads
      slot_buf_.push_back(static_cast<int>(bufs_.size()));
      bufs_.push_back(std::move(b));
    }
    for (const Buffer& o : unit_.outputs())
      if (o) output_roots_.insert(o.base().impl());
  }

  Ref ref(const Buffer& b) {
    for (size_t s = 0; s < unit_.num_inputs(); ++s) {
      const Buffer& in = unit_.captured_input(s);
      if (in.base().impl() == b.base().impl() && b.offset() >= in.offset() && b.offset() + b.nbytes() <= in.offset() + in.nbytes())
        return {slot_buf_[s], b.offset() - in.offset(), b.nbytes()};
    }
    Buffer root = b.base();
    auto [it, fresh] = root_buf_.emplace(root.impl(), static_cast<int>(bufs_.size()));
    if (fresh) {
      WBuf w;
      w.user_name = root.name();
      w.dtype = root.dtype();
      w.count = root.count();
      if (unit_.is_fresh_output(root) && output_roots_.count(root.impl())) w.role = Role::output;
      else if (unit_.is_internal(root)) w.role = Role::temp;
      else w.role = Role::state;  // const when no item writes it (decided after the step)
      w.bytes_from = root;
      bufs_.push_back(std::move(w));
    }
    return {it->second, b.offset(), b.nbytes()};
  }

  bool whole(const Ref& r) const { return r.off == 0 && r.bytes == bufs_[r.buf].nbytes(); }

  // {"buf": ...} with explicit access, and offset/count in the buffer's elements for views.
  std::string buf_arg(const Ref& r, Access acc, const std::string& path) {
    if (has_write(acc)) bufs_[r.buf].written = true;
    std::string s = "{\"buf\": @" + std::to_string(r.buf) + "@, \"access\": \"" + encore::name(acc) + "\"";
    if (!whole(r)) {
      size_t es = size(bufs_[r.buf].dtype);
      if (r.off % es || r.bytes % es)
        fail(path, "a view at byte " + std::to_string(r.off) + " of " + std::to_string(r.bytes) + " bytes is not a whole number of " +
                       std::string(encore::name(bufs_[r.buf].dtype)) + " elements of its storage");
      s += ", \"offset\": " + std::to_string(r.off / es) + ", \"count\": " + std::to_string(r.bytes / es);
    }
    return s + "}";
  }

  std::string var_name(size_t slot) { return "@v" + std::to_string(slot) + "@"; }

  std::string size_json(const Size& s, const std::string& path) {
    if (!s.is_affine()) {
      // names inside the text are placeholders too, resolved unquoted (variables() makes them identifiers)
      return "{\"expr\": \"" + s.str([&](const Variable& v) {
        size_t slot = unit_.variable_slot(v);
        expr_slots_.insert(slot);
        return "@x" + std::to_string(slot) + "@";
      }) + "\"}";
    }
    if (!s.var()) {
      if (s.add() < 0) fail(path, "negative size " + std::to_string(s.add()));
      return std::to_string(s.add());
    }
    size_t slot = unit_.variable_slot(*s.var());
    if (s.mul() < INT32_MIN || s.mul() > INT32_MAX || s.add() < INT32_MIN || s.add() > INT32_MAX)
      fail(path, "size multiplier or offset outside 32 bits");
    std::string r = "{\"var\": " + var_name(slot);
    if (s.mul() != 1) r += ", \"mul\": " + std::to_string(s.mul());
    if (s.add() != 0) r += ", \"add\": " + std::to_string(s.add());
    return r + "}";
  }

  std::string sizes_json(const Sizes& s, const std::string& path) {
    std::string r = "[";
    for (uint8_t d = 0; d < s.n; ++d) r += (d ? ", " : "") + size_json(s.v[d], detail::index(path, d));
    return r + "]";
  }

  std::string scalar(const Arg& a, const std::string& path) {
    switch (a.dtype) {
      case DType::i8: return "{\"i8\": " + std::to_string(static_cast<int8_t>(static_cast<uint8_t>(a.bits))) + "}";
      case DType::i16: return "{\"i16\": " + std::to_string(static_cast<int16_t>(static_cast<uint16_t>(a.bits))) + "}";
      case DType::u8: return "{\"u8\": " + std::to_string(static_cast<uint8_t>(a.bits)) + "}";
      case DType::u16: return "{\"u16\": " + std::to_string(static_cast<uint16_t>(a.bits)) + "}";
      case DType::i32: return "{\"i32\": " + std::to_string(static_cast<int32_t>(static_cast<uint32_t>(a.bits))) + "}";
      case DType::u32: return "{\"u32\": " + std::to_string(static_cast<uint32_t>(a.bits)) + "}";
      case DType::i64: return "{\"i64\": " + std::to_string(static_cast<int64_t>(a.bits)) + "}";
      case DType::u64: return "{\"u64\": " + std::to_string(a.bits) + "}";
      case DType::f32: {
        float f;
        uint32_t u = static_cast<uint32_t>(a.bits);
        std::memcpy(&f, &u, 4);
        return "{\"f32\": " + real(static_cast<double>(f), path) + "}";  // the float's exact value
      }
      case DType::f64: {
        double d;
        std::memcpy(&d, &a.bits, 8);
        return "{\"f64\": " + real(d, path) + "}";
      }
      default: fail(path, "a " + std::string(encore::name(a.dtype)) + " scalar argument cannot be written in a workload file");
    }
  }

  std::string program_of(const Kernel& k) {
    Program p = k.program();
    auto key = std::make_pair(p.source(), p.options());
    auto [it, fresh] = program_names_.emplace(key, "p" + std::to_string(program_names_.size()));
    if (fresh) add_program(it->second, p);
    return it->second;
  }

  void add_program(const std::string& name, const Program& p) {
    programs_ += std::string(programs_.empty() ? "" : ",") + "\n    " + quote(name) + ": {\"source\": " + quote(p.source());
    if (!p.options().empty()) programs_ += ", \"options\": " + quote(p.options());
    programs_ += binary_json(name, p) + "}";
  }

  // The program's device binary beside the workload, with its key and checksum (nothing on NULL,
  // or where the device has no binary or the program no key). Taken once the queue is drained: on
  // PoCL a launch configuration joins the binary once its first launch has run.
  std::string binary_json(const std::string& name, const Program& p) {
    if (!opt_.binaries || p.device().is_null()) return "";
    p.device().synchronize();
    const std::vector<unsigned char> bytes = p.binary();
    const std::string key = p.binary_key();
    if (bytes.empty() || key.empty()) return "";
    const std::string rel = data_rel_ + "/" + name + ".clbin";
    std::ofstream f(dir_ / rel, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) cannot_write(dir_ / rel, "");
    return ", \"binary\": {\"file\": " + quote(rel) + ", \"key\": " + quote(key) + ", \"sum\": \"" + detail::binary_sum(bytes) + "\"}";
  }

  std::string copy_json(const Ref& dst, const Ref& src, const std::string& name, const std::string& path) {
    std::string nm = name.empty() ? "" : ", \"name\": " + qstep(name);
    if (whole(dst) && whole(src) && dst.buf != src.buf) {
      bufs_[dst.buf].written = true;
      return "{\"copy\": {\"src\": @" + std::to_string(src.buf) + "@, \"dst\": @" + std::to_string(dst.buf) + "@}" + nm + "}";
    }
    if (!copy_program_) {
      copy_program_ = true;
      add_program(kCopyProgram, unit_.devices().front().compile(kCopySource));  // (its binary has no launch yet)
    }
    return std::string("{\"launch\": \"") + kCopyProgram + "." + kCopyKernel + "\", \"args\": [" + buf_arg(src, Access::in, detail::child(path, "src")) +
           ", " + buf_arg(dst, Access::out, detail::child(path, "dst")) + "], \"global\": [" + std::to_string(dst.bytes) + "]" + nm + "}";
  }

  std::string step() {
    std::string out;
    const auto& items = unit_.items();
    for (size_t i = 0; i < items.size(); ++i) {
      const ExecItem& it = items[i];
      std::string path = detail::index("step", i);
      std::string s;
      std::shared_ptr<const std::vector<unsigned char>> it_data;
      switch (it.kind) {
        case ItemKind::kernel: {
          std::string prog = program_of(it.kernel);
          s = "{\"launch\": " + qstep(prog + "." + it.kernel.name()) + ", \"args\": [";
          for (size_t j = 0; j < it.args.size(); ++j) {
            const Arg& a = it.args[j];
            std::string ap = detail::index(detail::child(path, "args"), j);
            s += j ? ", " : "";
            switch (a.kind) {
              case Arg::Kind::buffer: s += buf_arg(ref(a.buf), a.access, ap); break;
              case Arg::Kind::scalar: s += scalar(a, ap); break;
              case Arg::Kind::variable: {
                size_t slot = unit_.variable_slot(*a.var);
                s += "{\"var\": " + var_name(slot);
                if (!a.var->is_float() && a.dtype != DType::i32) s += ", \"as\": \"" + std::string(encore::name(a.dtype)) + "\"";
                s += "}";
                break;
              }
              case Arg::Kind::local: s += "{\"local\": " + std::to_string(a.local_bytes) + "}"; break;
              case Arg::Kind::bytes: {
                // from a host input: the per-call form, with the bytes seen at capture as its one value
                static const char* hex = "0123456789abcdef";
                s += a.host_slot >= 0 ? "{\"bytes\": [\"" : "{\"bytes\": \"";
                for (unsigned char c : *a.value) {
                  s += hex[c >> 4];
                  s += hex[c & 15];
                }
                s += a.host_slot >= 0 ? "\"]}" : "\"}";
                break;
              }
            }
          }
          s += "], \"global\": " + sizes_json(it.global, detail::child(path, "global"));
          if (!it.local.empty()) s += ", \"local\": " + sizes_json(it.local, detail::child(path, "local"));
          s += ", \"name\": " + qstep(it.name.empty() ? it.kernel.name() : it.name);
          if (it.estimate.ops > 0 || it.estimate.bytes > 0)
            s += ", \"estimate\": {\"ops\": " + real(it.estimate.ops, path) + ", \"bytes\": " + real(it.estimate.bytes, path) + "}";
          s += "}";
          break;
        }
        case ItemKind::copy: s = copy_json(ref(it.dst), ref(it.src), it.name, path); break;
        case ItemKind::native:
          fail(path, "native work (" + it.describe() + ") is code outside encore: a workload file cannot hold it");
          break;
        case ItemKind::host:
        case ItemKind::branch:
        case ItemKind::loop:
          fail(path, it.describe() + ": host items, branches and loops run host code, which a workload file cannot hold "
                     "(docs/workload-format.md)");
          break;
        case ItemKind::upload:
        case ItemKind::fill: {
          // both write host bytes known at capture: a const buffer holding them, copied in
          Ref dst = ref(it.dst);
          if (it.kind == ItemKind::fill && it.data && !it.data->empty()) {
            auto bytes = std::make_shared<std::vector<unsigned char>>();
            for (uint64_t k = 0; k < dst.bytes; k += it.data->size()) bytes->insert(bytes->end(), it.data->begin(), it.data->end());
            it_data = std::move(bytes);
          } else {
            it_data = it.data;
          }
          if (!it_data || it_data->size() != dst.bytes)
            fail(path, "upload of " + std::to_string(it_data ? it_data->size() : 0) + " bytes into " + std::to_string(dst.bytes));
          WBuf w;
          const std::string w_name = std::string(it.kind == ItemKind::fill ? "fill" : "upload") + std::to_string(i);
          w.user_name = w_name;
          w.dtype = it.dst.dtype();
          w.count = it.dst.count();
          w.role = Role::const_;
          w.data = it_data;
          Ref src{static_cast<int>(bufs_.size()), 0, dst.bytes};
          bufs_.push_back(std::move(w));
          s = copy_json(dst, src, it.name.empty() ? w_name : it.name, path);
          break;
        }
      }
      out += std::string(i ? "," : "") + "\n    " + s;
    }
    for (WBuf& b : bufs_)
      if (b.role == Role::state && !b.written) b.role = Role::const_;
    return out;
  }

  // Buffer::name() where usable and unique, else b0, b1, ...; placeholders @k@ are resolved after.
  void name_buffers() {
    std::set<std::string> used;
    for (WBuf& b : bufs_)
      if (safe_name(b.user_name) && used.insert(b.user_name).second) b.name = b.user_name;
    size_t next = 0;
    for (WBuf& b : bufs_)
      while (b.name.empty()) {
        std::string n = "b" + std::to_string(next++);
        if (used.insert(n).second) b.name = n;
      }
  }

  std::string resolve(const std::string& s) const {
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '@') {
        r += s[i];
        continue;
      }
      size_t j = s.find('@', i + 1);
      std::string k = s.substr(i + 1, j - i - 1);
      r += k[0] == 'v'   ? quote(var_names_.at(std::stoul(k.substr(1))))
           : k[0] == 'x' ? var_names_.at(std::stoul(k.substr(1)))
                         : quote(bufs_.at(std::stoul(k)).name);
      i = j;
    }
    return r;
  }

  std::string buffer_section(const std::filesystem::path& dir, const std::string& data_rel) {
    std::string out;
    for (size_t k = 0; k < bufs_.size(); ++k) {
      const WBuf& b = bufs_[k];
      out += std::string(k ? "," : "") + "\n    " + quote(b.name) + ": {\"dtype\": \"" + std::string(encore::name(b.dtype)) +
             "\", \"count\": " + std::to_string(b.count) + ", \"role\": \"" + workload::name(b.role) + "\"";
      if (b.role == Role::input || b.role == Role::state || b.role == Role::const_) {
        std::vector<unsigned char> bytes;
        if (b.data) {
          bytes = *b.data;
        } else {
          bytes.resize(b.bytes_from.nbytes());
          b.bytes_from.copyout_bytes(bytes.data(), bytes.size());
        }
        if (std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == 0; })) {
          out += "}";  // all zero: the default init, no file
          continue;
        }
        std::string rel = data_rel + "/" + b.name + ".bin";
        std::ofstream f(dir / rel, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        f.close();
        if (!f) cannot_write(dir / rel, "");
        out += ", \"init\": {\"file\": " + quote(rel) + "}";
      }
      out += "}";
    }
    return out;
  }

  std::string variables() {
    std::set<std::string> used;
    var_names_.resize(unit_.num_variables());
    for (size_t s = 0; s < unit_.num_variables(); ++s) {
      const std::string& n = unit_.variable(s).name();
      if (expr_slots_.count(s) && !size_name(n)) continue;  // an expression's text can only name it by an identifier
      if (!n.empty() && used.insert(n).second) var_names_[s] = n;
    }
    size_t next = 0;
    for (size_t s = 0; s < unit_.num_variables(); ++s)
      while (var_names_[s].empty()) {
        std::string n = "v" + std::to_string(next++);
        if (used.insert(n).second) var_names_[s] = n;
      }
    std::string out;
    for (size_t s = 0; s < unit_.num_variables(); ++s) {
      const Variable& v = unit_.variable(s);
      std::string path = detail::child("variables", var_names_[s]);
      out += std::string(s ? "," : "") + "\n    " + quote(var_names_[s]) + ": {";
      if (!v.is_float()) {
        out += "\"min\": " + std::to_string(v.min()) + ", \"max\": " + std::to_string(v.max()) + ", \"values\": [" + std::to_string(unit_.variable_value(s).i) + "]";
      } else {
        out += std::string("\"type\": \"") + (v.type() == VarType::f32 ? "f32" : "f64") + "\", \"min\": " + real(v.fmin(), path) +
               ", \"max\": " + real(v.fmax(), path) + ", \"values\": [" + real(unit_.variable_value(s).f, path) + "]";
      }
      out += "}";
    }
    return out;
  }

  const ExecutionUnit& unit_;
  const SaveOptions& opt_;
  std::vector<WBuf> bufs_;
  std::vector<int> slot_buf_;
  std::unordered_map<encore::detail::BufferImpl*, int> root_buf_;
  std::unordered_set<encore::detail::BufferImpl*> output_roots_;
  std::map<std::pair<std::string, std::string>, std::string> program_names_;
  std::string programs_;
  bool copy_program_ = false;
  std::filesystem::path dir_;   // the workload file's folder
  std::string data_rel_;        // its data folder, relative to dir_
  std::vector<std::string> var_names_;
  std::set<size_t> expr_slots_;  // variables named inside expression sizes

  // A name Size::parse reads as a variable: an identifier that is not one of its functions.
  static bool size_name(const std::string& n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return n != "min" && n != "max" && n != "ceil_div" && n != "floor_div";
  }
};

}  // namespace

void save_workload(const ExecutionUnit& unit, const std::filesystem::path& path, const SaveOptions& opt) {
  if (!unit) throw ArgumentError("save_workload: empty ExecutionUnit");
  Saver s(unit, opt);
  s.save(path);
}

}  // namespace encore::workload
