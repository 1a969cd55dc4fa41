// workload file → Workload: the schema of docs/workload-format.md, checked strictly (unknown keys, types,
// ranges, references). Checks that need a device live in validate.cpp.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "core/size_ops.hpp"
#include "workload/binary.hpp"
#include "workload/init.hpp"
#include "workload/reader.hpp"

namespace encore {

WorkloadError::WorkloadError(std::string path, const std::string& message)
    : Error((path.empty() ? std::string("top level") : path) + ": " + message), path_(std::move(path)), message_(message) {}

namespace workload {

using namespace detail;

const char* name(Role r) {
  switch (r) {
    case Role::input: return "input";
    case Role::state: return "state";
    case Role::const_: return "const";
    case Role::temp: return "temp";
    case Role::output: return "output";
  }
  return "?";
}

int Workload::find_buffer(std::string_view n) const {
  for (size_t k = 0; k < buffers.size(); ++k)
    if (buffers[k].name == n) return static_cast<int>(k);
  return -1;
}
int Workload::find_variable(std::string_view n) const {
  for (size_t k = 0; k < variables.size(); ++k)
    if (variables[k].name == n) return static_cast<int>(k);
  return -1;
}

namespace {

constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 40;  // beyond any device here; catches typos

std::string dtype_list() {
  std::string s;
  for (DType t : all_dtypes) s += (s.empty() ? "" : " ") + std::string(encore::name(t));
  return s;
}

// `rel` against the workload's folder; with a root (--root), a path that leaves it (absolute, `..`,
// or a symbolic link out) is the file's error.
std::filesystem::path resolve(const std::filesystem::path& base, const std::string& rel, const std::filesystem::path& root,
                              const std::string& path) {
  std::filesystem::path p(rel);
  p = p.is_absolute() ? p : base / p;
  if (root.empty()) return p;
  std::error_code er, ec;
  const std::filesystem::path r = std::filesystem::weakly_canonical(root, er), c = std::filesystem::weakly_canonical(p, ec);
  const std::filesystem::path inside = c.lexically_relative(r);
  if (er || ec || inside.empty() || inside.is_absolute() || *inside.begin() == "..")
    fail(path, quote(rel) + " is outside the root " + quote(root.string()) + " (--root confines the files a workload may read)");
  return p;
}

std::string read_file(const std::filesystem::path& p, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) fail(path, "cannot read " + quote(p.string()) + ": no such file");
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) fail(path, "cannot read " + quote(p.string()));
  return ss.str();
}

void check_name(const std::string& n, const std::string& path, const char* what) {
  // Buffer names become file names under --dump DIR: keep them inside it.
  if (n.empty() || n == "." || n == ".." || n.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
    fail(path, std::string("invalid ") + what + " name " + quote(n));
}

struct Parser {
  Workload w;
  std::filesystem::path root;  // --root: the folder files must lie in (empty: anywhere)

  void tolerance(const JNode& n, const std::string& path) {
    Obj o(n, path);
    w.has_tolerance = true;
    for (auto [key, dst] : {std::pair{"rtol", &w.rtol}, std::pair{"atol", &w.atol}})
      if (const JNode* v = o.opt(key)) {
        *dst = as_double(*v, o.at(key));
        if (*dst < 0) fail(o.at(key), "must not be negative");
      }
    o.done("rtol, atol");
  }

  void programs(const JNode& n, const std::string& path) {
    Obj o(n, path);
    for (const auto& [name, body] : n.members) {
      o.opt(name);
      std::string p = child(path, name);
      if (name.empty()) fail(p, "empty program name");
      Obj po(body, p);
      ProgramSpec s;
      s.name = name;
      const JNode* src = po.opt("source");
      const JNode* file = po.opt("source_file");
      if (!src == !file) fail(p, "needs exactly one of \"source\" and \"source_file\"");
      if (src) s.source = as_string(*src, po.at("source"));
      if (file) {
        s.source_file = resolve(w.base_dir, as_string(*file, po.at("source_file")), root, po.at("source_file"));
        s.source = read_file(s.source_file, po.at("source_file"));
      }
      if (const JNode* opt = po.opt("options")) s.options = as_string(*opt, po.at("options"));
      if (const JNode* bin = po.opt("binary")) {
        // read when the program is built: a missing or unfit binary is compiled from source then
        Obj bo(*bin, po.at("binary"));
        s.binary_file = resolve(w.base_dir, as_string(bo.req("file"), bo.at("file")), root, bo.at("file"));
        s.binary_key = as_string(bo.req("key"), bo.at("key"));
        s.binary_sum = as_string(bo.req("sum"), bo.at("sum"));
        if (!detail::is_binary_sum(s.binary_sum))
          fail(bo.at("sum"), "expected \"s64-\" and 16 lowercase hex digits (the binary's sum64), or 16 lowercase hex digits (its 64-bit FNV-1a), got " +
                                 quote(s.binary_sum));
        bo.done("file, key, sum");
      }
      po.done("source, source_file, options, binary");
      w.programs.push_back(std::move(s));
    }
  }

  // One init file: resolved against the workload's directory, of exactly the buffer's size.
  std::filesystem::path init_file(const BufferSpec& b, const JNode& n, const std::string& path) {
    std::filesystem::path file = resolve(w.base_dir, as_string(n, path), root, path);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) fail(path, "cannot read " + quote(file.string()) + ": no such file");
    uint64_t have = std::filesystem::file_size(file, ec);
    uint64_t want = uint64_t(b.count) * size(b.dtype);
    if (ec || have != want) fail(path, quote(file.string()) + " has " + std::to_string(have) + " bytes, the buffer " + std::to_string(want));
    return file;
  }

  void init(BufferSpec& b, const JNode& n, const std::string& path) {
    Init& in = b.init;
    if (n.kind == JNode::Kind::string) {
      if (n.str != "zeros") fail(path, "unknown init " + quote(n.str) + " (a string init must be \"zeros\")");
      in.kind = Init::Kind::zeros;
      return;
    }
    Obj o(n, path);
    int kinds = o.has("fill") + o.has("uniform") + o.has("arange") + o.has("file") + o.has("files");
    if (kinds != 1)
      fail(path, "needs exactly one of \"fill\", \"uniform\", \"arange\", \"file\", \"files\" (or the string \"zeros\")");
    if (const JNode* v = o.opt("fill")) {
      in.kind = Init::Kind::fill;
      in.fill = as_number(*v, o.at("fill"));
    } else if (const JNode* v = o.opt("uniform")) {
      in.kind = Init::Kind::uniform;
      const auto& a = as_array(*v, o.at("uniform"));
      if (a.size() != 2) fail(o.at("uniform"), "expected [lo, hi]");
      in.lo = as_double(a[0], index(o.at("uniform"), 0));
      in.hi = as_double(a[1], index(o.at("uniform"), 1));
      // the generator draws lo + (hi - lo) * u: a span beyond double's range makes every value inf or nan
      if (!std::isfinite(in.hi - in.lo))
        fail(o.at("uniform"), "hi - lo = " + std::to_string(in.hi) + " - " + std::to_string(in.lo) +
                                  " overflows a double (the values are lo + (hi - lo) * u); narrow the range");
      if (const JNode* s = o.opt("seed")) in.seed = as_int_mod64(*s, o.at("seed"));
    } else if (const JNode* v = o.opt("arange")) {
      in.kind = Init::Kind::arange;
      const auto& a = as_array(*v, o.at("arange"));
      if (a.size() != 2) fail(o.at("arange"), "expected [start, step]");
      in.start = as_number(a[0], index(o.at("arange"), 0));
      in.step = as_number(a[1], index(o.at("arange"), 1));
    } else if (const JNode* v = o.opt("file")) {
      in.kind = Init::Kind::file;
      in.files.push_back(init_file(b, *v, o.at("file")));
    } else if (const JNode* v = o.opt("files")) {
      in.kind = Init::Kind::file;
      const auto& a = as_array(*v, o.at("files"));
      if (a.empty()) fail(o.at("files"), "expected a non-empty array of file names");
      if (b.role != Role::input && a.size() > 1)
        fail(o.at("files"), "only an input rotates through several files (this buffer is " + std::string(workload::name(b.role)) + ")");
      for (size_t i = 0; i < a.size(); ++i) in.files.push_back(init_file(b, a[i], index(o.at("files"), i)));
    }
    o.done(in.kind == Init::Kind::uniform ? "uniform, seed" : "one of fill, uniform (with seed), arange, file, files");
    check_init_range(b, path);  // a value the dtype cannot hold is a file error (init.cpp)
  }

  void buffers(const JNode& n, const std::string& path) {
    Obj o(n, path);
    for (const auto& [name, body] : n.members) {
      o.opt(name);
      std::string p = child(path, name);
      check_name(name, p, "buffer");
      Obj bo(body, p);
      BufferSpec b;
      b.name = name;
      const std::string& dt = as_string(bo.req("dtype"), bo.at("dtype"));
      auto t = parse_dtype(dt);
      if (!t) fail(bo.at("dtype"), "unknown dtype " + quote(dt) + " (one of " + dtype_list() + ")");
      b.dtype = *t;
      b.count = as_uint(bo.req("count"), bo.at("count"), kMaxBufferBytes / size(b.dtype));
      if (b.count == 0) fail(bo.at("count"), "must be > 0");
      const std::string& role = as_string(bo.req("role"), bo.at("role"));
      if (role == "input") b.role = Role::input;
      else if (role == "state") b.role = Role::state;
      else if (role == "const") b.role = Role::const_;
      else if (role == "temp") b.role = Role::temp;
      else if (role == "output") b.role = Role::output;
      else fail(bo.at("role"), "unknown role " + quote(role) + " (one of input, state, const, temp, output)");
      if (const JNode* i = bo.opt("init")) {
        if (b.role == Role::temp || b.role == Role::output)
          fail(bo.at("init"), std::string("a ") + workload::name(b.role) + " buffer takes no init: its contents are undefined until an item writes it");
        init(b, *i, bo.at("init"));
      }
      bo.done("dtype, count, role, init");
      w.buffers.push_back(std::move(b));
    }
  }

  void variables(const JNode& n, const std::string& path) {
    Obj o(n, path);
    for (const auto& [name, body] : n.members) {
      o.opt(name);
      std::string p = child(path, name);
      if (name.empty()) fail(p, "empty variable name");
      Obj vo(body, p);
      VariableSpec v;
      v.name = name;
      if (const JNode* t = vo.opt("type")) {
        const std::string& s = as_string(*t, vo.at("type"));
        if (s == "int") v.type = VarType::i64;
        else if (s == "f32") v.type = VarType::f32;
        else if (s == "f64") v.type = VarType::f64;
        else fail(vo.at("type"), "unknown variable type " + quote(s) + " (one of int, f32, f64)");
      }
      const auto& vals = as_array(vo.req("values"), vo.at("values"));
      if (vals.empty()) fail(vo.at("values"), "needs at least one value");
      if (v.type == VarType::i64) {
        v.min = as_int(vo.req("min"), vo.at("min"), INT64_MIN, INT64_MAX);
        v.max = as_int(vo.req("max"), vo.at("max"), INT64_MIN, INT64_MAX);
        if (v.min > v.max) fail(vo.at("max"), "max is below min");
        for (size_t k = 0; k < vals.size(); ++k) {
          std::string vp = index(vo.at("values"), k);
          int64_t x = as_int(vals[k], vp, INT64_MIN, INT64_MAX);
          if (x < v.min || x > v.max)
            fail(vp, std::to_string(x) + " is outside the bounds [" + std::to_string(v.min) + ", " + std::to_string(v.max) + "]");
          v.ivalues.push_back(x);
        }
      } else {
        double lim = v.type == VarType::f32 ? FLT_MAX : DBL_MAX;
        if (const JNode* m = vo.opt("min")) v.fmin = as_double(*m, vo.at("min"));
        if (const JNode* m = vo.opt("max")) v.fmax = as_double(*m, vo.at("max"));
        if (v.fmin > v.fmax) fail(vo.at("max"), "max is below min");
        for (size_t k = 0; k < vals.size(); ++k) {
          std::string vp = index(vo.at("values"), k);
          double x = as_double(vals[k], vp);
          if (x < v.fmin || x > v.fmax) fail(vp, vals[k].str + " is outside the bounds [" + std::to_string(v.fmin) + ", " + std::to_string(v.fmax) + "]");
          if (std::fabs(x) > lim) fail(vp, vals[k].str + " does not fit f32");
          v.fvalues.push_back(x);
        }
      }
      vo.done("min, max, values, type");
      w.variables.push_back(std::move(v));
    }
  }

  int buffer_ref(const JNode& n, const std::string& path) {
    const std::string& s = as_string(n, path);
    int b = w.find_buffer(s);
    if (b < 0) fail(path, "unknown buffer " + quote(s));
    return b;
  }

  int variable_ref(const JNode& n, const std::string& path) {
    const std::string& s = as_string(n, path);
    int v = w.find_variable(s);
    if (v < 0) fail(path, "unknown variable " + quote(s));
    return v;
  }

  // The variables as encore::Variables, for reading and checking expression sizes.
  const std::vector<Variable>& size_vars() {
    if (size_vars_.size() != w.variables.size()) {
      size_vars_.clear();
      parsed_.clear();
      for (const VariableSpec& v : w.variables)
        size_vars_.push_back(v.type == VarType::i64 ? Variable(v.name, v.min, v.max) : Variable::f64(v.name, v.fmin, v.fmax));
    }
    return size_vars_;
  }
  std::vector<Variable> size_vars_;
  std::map<std::string, Size> parsed_;  // size expressions by text, over size_vars_

  // Call `call` binds values[call % len] of each variable.
  int64_t size_value(const SizeExpr& e, size_t call, const std::string& path) {
    if (e.expr.empty()) return e.var < 0 ? e.add : e.eval(w.variables[e.var].ivalues[call % w.variables[e.var].ivalues.size()]);
    std::vector<BoundVar> vals;
    for (int k : e.vars) {
      const VariableSpec& v = w.variables[k];
      const int64_t x = v.ivalues[call % v.ivalues.size()];
      vals.push_back(BoundVar{size_vars()[k], x, static_cast<double>(x)});
    }
    try {
      // parsed once per text: a check evaluates each expression for up to 2^20 calls
      auto it = parsed_.find(e.expr);
      if (it == parsed_.end()) it = parsed_.emplace(e.expr, Size::parse(e.expr, size_vars())).first;
      BindingScope scope(vals);
      return it->second.eval();
    } catch (const ArgumentError& err) {
      fail(path, std::string(err.what()) + " (call " + std::to_string(call) + ")");
    }
  }

  // One full cycle of the variables `e` uses.
  size_t size_cycle(const SizeExpr& e, size_t cycle) {
    if (e.var >= 0) return std::min<size_t>(std::lcm(cycle, w.variables[e.var].ivalues.size()), 1 << 20);
    for (int k : e.vars) cycle = std::min<size_t>(std::lcm(cycle, w.variables[k].ivalues.size()), 1 << 20);
    return cycle;
  }

  SizeExpr size_expr(const JNode& n, const std::string& path, bool local) {
    SizeExpr e;
    if (n.kind == JNode::Kind::number) {
      e.add = as_int(n, path, 0, INT64_MAX);
      return e;
    }
    if (n.kind != JNode::Kind::object)
      fail(path, std::string("a size is an integer, {\"var\", \"mul\", \"add\"} or {\"expr\": \"...\"}, got ") + kind_name(n.kind));
    Obj o(n, path);
    if (const JNode* x = o.opt("expr")) {
      e.expr = as_string(*x, o.at("expr"));
      o.done("expr");
      Size s;
      try {
        s = Size::parse(e.expr, size_vars());
        std::vector<Variable> used;
        s.variables(used);
        for (const Variable& v : used) e.vars.push_back(w.find_variable(v.name()));
        // what a capture refuses makes the file invalid (a float variable is refused by Size itself)
        if (!s.is_affine()) {
          Size::Range r = s.range();
          if (r.lo < (local ? 1 : 0))
            fail(o.at("expr"), "may be " + std::string(local ? "below 1" : "negative") + " (as low as " + std::to_string(r.lo) +
                                   ") for values in its variables' ranges (min, max); clamp it with max(..., " + (local ? "1" : "0") +
                                   ") or narrow the ranges");
        }
      } catch (const ArgumentError& err) {
        fail(o.at("expr"), err.what());
      }
      for (size_t call = 0, cycle = size_cycle(e, 1); call < cycle; ++call) {
        const int64_t r = size_value(e, call, o.at("expr"));
        if (r < 0) fail(o.at("expr"), "is negative (" + std::to_string(r) + ") in call " + std::to_string(call));
      }
      return e;
    }
    e.var = variable_ref(o.req("var"), o.at("var"));
    if (w.variables[e.var].type != VarType::i64)
      fail(o.at("var"), "float variable " + quote(w.variables[e.var].name) + " cannot be used in a size");
    if (const JNode* m = o.opt("mul")) e.mul = as_int(*m, o.at("mul"), INT32_MIN, INT32_MAX);
    if (const JNode* a = o.opt("add")) e.add = as_int(*a, o.at("add"), INT32_MIN, INT32_MAX);
    o.done("var, mul, add");
    for (size_t k = 0; k < w.variables[e.var].ivalues.size(); ++k) {
      int64_t v = w.variables[e.var].ivalues[k], r = 0;
      if (!encore::detail::affine_value(e.mul, v, e.add, &r))
        fail(path, "overflows with " + w.variables[e.var].name + " = " + std::to_string(v));
      if (r < 0) fail(path, "is negative (" + std::to_string(r) + ") with " + w.variables[e.var].name + " = " + std::to_string(v));
    }
    return e;
  }

  std::vector<SizeExpr> sizes(const JNode& n, const std::string& path, bool local) {
    const auto& a = as_array(n, path);
    if (a.empty() || a.size() > 3) fail(path, "needs 1 to 3 dimensions");
    std::vector<SizeExpr> r;
    for (size_t k = 0; k < a.size(); ++k) r.push_back(size_expr(a[k], index(path, k), local));
    return r;
  }

  // Every call's global size must be a multiple of its local size. Call i binds values[i % len]
  // of each variable, so checking one full cycle of the variables involved covers every call.
  void check_multiples(const ItemSpec& it, const std::string& path) {
    size_t cycle = 1;
    for (const auto* v : {&it.global, &it.local})
      for (const SizeExpr& e : *v) cycle = size_cycle(e, cycle);
    for (size_t call = 0; call < cycle; ++call)
      for (size_t d = 0; d < it.global.size(); ++d) {
        int64_t g = size_value(it.global[d], call, index(child(path, "global"), d)), l = size_value(it.local[d], call, index(child(path, "local"), d));
        if (l != 0 && g % l != 0)
          fail(index(child(path, "global"), d), "global size " + std::to_string(g) + " is not a multiple of the local size " +
                                                    std::to_string(l) + " (call " + std::to_string(call) + ")");
      }
  }

  // An argument: a buffer name, or an object whose key says its form.
  ArgSpec arg(const JNode& n, const std::string& path) {
    ArgSpec a;
    if (n.kind == JNode::Kind::string) {
      a.kind = ArgSpec::Kind::buffer;
      a.buffer = buffer_ref(n, path);
      return a;
    }
    if (n.kind != JNode::Kind::object)
      fail(path, std::string("an argument is a buffer name or an object, got ") + kind_name(n.kind));
    Obj o(n, path);
    if (o.has("buf")) buffer_arg(o, a);
    else if (o.has("var")) variable_arg(o, a, path);
    else if (o.has("bytes")) bytes_arg(o, a);
    else if (o.has("local")) local_arg(o, a);
    else scalar_arg(n, o, a, path);
    return a;
  }

  // {"buf", "access", "offset", "count"}: a view where offset or count is given.
  void buffer_arg(Obj& o, ArgSpec& a) {
    a.kind = ArgSpec::Kind::buffer;
    a.buffer = buffer_ref(o.req("buf"), o.at("buf"));
    const BufferSpec& b = w.buffers[a.buffer];
    if (const JNode* acc = o.opt("access")) {
      const std::string& s = as_string(*acc, o.at("access"));
      if (s == "in") a.access = Access::in;
      else if (s == "out") a.access = Access::out;
      else if (s == "inout") a.access = Access::inout;
      else fail(o.at("access"), "unknown access " + quote(s) + " (one of in, out, inout)");
    }
    const JNode* off = o.opt("offset");
    const JNode* cnt = o.opt("count");
    if (off) a.offset = as_uint(*off, o.at("offset"), b.count - 1);
    a.count = b.count - a.offset;
    if (cnt) {
      a.count = as_uint(*cnt, o.at("count"), b.count - a.offset);
      if (a.count == 0) fail(o.at("count"), "must be > 0");
    }
    a.view = off || cnt;
    o.done("buf, access, offset, count");
  }

  // {"var", "as"}: an int variable given "as" an integer type must fit it in every value.
  void variable_arg(Obj& o, ArgSpec& a, const std::string& path) {
    a.kind = ArgSpec::Kind::variable;
    a.variable = variable_ref(o.req("var"), o.at("var"));
    const VariableSpec& v = w.variables[a.variable];
    a.dtype = v.type == VarType::f32 ? DType::f32 : v.type == VarType::f64 ? DType::f64 : DType::i32;
    if (const JNode* as = o.opt("as")) {
      const std::string& s = as_string(*as, o.at("as"));
      auto t = parse_dtype(s);
      bool ok = v.type == VarType::i64 ? t && is_integer(*t) && *t != DType::boolean : t == a.dtype;
      if (!ok)
        fail(o.at("as"), v.type == VarType::i64 ? "an int variable is passed as an integer type (i8 .. i64, u8 .. u64), not " + quote(s)
                                                : "a float variable is passed as its own type (" + std::string(encore::name(a.dtype)) + ")");
      a.dtype = *t;
      a.as_given = true;
    }
    if (v.type == VarType::i64 && a.as_given)  // else checked against the parameter's type (validate)
      for (size_t k = 0; k < v.ivalues.size(); ++k) {
        int64_t x = v.ivalues[k];
        bool fits = true;
        switch (a.dtype) {
          case DType::i8: fits = x >= INT8_MIN && x <= INT8_MAX; break;
          case DType::i16: fits = x >= INT16_MIN && x <= INT16_MAX; break;
          case DType::i32: fits = x >= INT32_MIN && x <= INT32_MAX; break;
          case DType::u8: fits = x >= 0 && x <= UINT8_MAX; break;
          case DType::u16: fits = x >= 0 && x <= UINT16_MAX; break;
          case DType::u32: fits = x >= 0 && x <= int64_t{UINT32_MAX}; break;
          case DType::u64: fits = x >= 0; break;
          default: break;
        }
        if (!fits)
          fail(path, "variable " + quote(v.name) + " value " + std::to_string(x) + " (values[" + std::to_string(k) + "]) does not fit " +
                         std::string(encore::name(a.dtype)));
      }
    o.done("var, as");
  }

  // Hex digits, two per byte in memory order.
  static std::vector<unsigned char> hex(const JNode& node, const std::string& at) {
    const std::string& h = as_string(node, at);
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    if (h.empty() || h.size() % 2 != 0)
      fail(at, "expected an even number of hex digits (two per byte, in memory order), got " + std::to_string(h.size()));
    std::vector<unsigned char> v;
    v.reserve(h.size() / 2);
    for (size_t k = 0; k < h.size(); k += 2) {
      const int hi = nibble(h[k]), lo = nibble(h[k + 1]);
      if (hi < 0 || lo < 0) fail(at, "expected hex digits, got " + quote(h.substr(k, 2)) + " at character " + std::to_string(k));
      v.push_back(static_cast<unsigned char>(hi * 16 + lo));
    }
    return v;
  }

  // {"bytes": hex or [hex, ...]}: a by-value aggregate, one value for every call or one per call.
  void bytes_arg(Obj& o, ArgSpec& a) {
    a.kind = ArgSpec::Kind::bytes;
    const JNode& bn = o.req("bytes");
    if (bn.kind == JNode::Kind::array) {
      // the per-call form: call i passes entry i % len (replayed from a host input of the call)
      if (bn.elems.empty()) fail(o.at("bytes"), "needs at least one value (a hex string per call)");
      for (size_t k = 0; k < bn.elems.size(); ++k) {
        const std::string at = index(o.at("bytes"), k);
        a.per_call.push_back(hex(bn.elems[k], at));
        if (a.per_call.back().size() != a.per_call[0].size())
          fail(at, "has " + std::to_string(a.per_call.back().size()) + " bytes, entry 0 " + std::to_string(a.per_call[0].size()) +
                       " (every call's value has the parameter's size)");
      }
      a.bytes = a.per_call[0];
    } else {
      a.bytes = hex(bn, o.at("bytes"));
    }
    o.done("bytes");
  }

  // {"local": bytes}: __local memory.
  void local_arg(Obj& o, ArgSpec& a) {
    a.kind = ArgSpec::Kind::local;
    a.local_bytes = as_uint(o.req("local"), o.at("local"), uint64_t(1) << 31);
    if (a.local_bytes == 0) fail(o.at("local"), "must be > 0");
    o.done("local");
  }

  // {dtype: value}, the only key: the value's bits in the dtype, range-checked.
  void scalar_arg(const JNode& n, Obj& o, ArgSpec& a, const std::string& path) {
    a.kind = ArgSpec::Kind::scalar;
    static constexpr const char* kinds[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"};
    int found = 0;
    for (const char* k : kinds) found += o.has(k);
    if (found != 1 || n.members.size() != 1)
      fail(path, "unknown argument form (a buffer name, {\"buf\": ...}, {\"var\": ...}, {\"local\": bytes}, {\"bytes\": \"<hex>\" or [\"<hex>\", ...]}, or one scalar: "
                 "{\"i8\"|\"i16\"|\"i32\"|\"i64\"|\"u8\"|\"u16\"|\"u32\"|\"u64\"|\"f32\"|\"f64\": value})");
    const std::string& key = n.members[0].first;
    const JNode& v = *o.opt(key);
    std::string p = o.at(key);
    a.dtype = *parse_dtype(key);
    switch (a.dtype) {
      case DType::i8: a.bits = static_cast<uint8_t>(static_cast<int8_t>(as_int(v, p, INT8_MIN, INT8_MAX))); break;
      case DType::i16: a.bits = static_cast<uint16_t>(static_cast<int16_t>(as_int(v, p, INT16_MIN, INT16_MAX))); break;
      case DType::u8: a.bits = as_uint(v, p, UINT8_MAX); break;
      case DType::u16: a.bits = as_uint(v, p, UINT16_MAX); break;
      case DType::i32: a.bits = static_cast<uint32_t>(static_cast<int32_t>(as_int(v, p, INT32_MIN, INT32_MAX))); break;
      case DType::u32: a.bits = as_uint(v, p, UINT32_MAX); break;
      case DType::i64: a.bits = static_cast<uint64_t>(as_int(v, p, INT64_MIN, INT64_MAX)); break;
      case DType::u64: a.bits = as_uint(v, p, UINT64_MAX); break;
      case DType::f32: {
        double d = as_double(v, p);
        if (std::fabs(d) > FLT_MAX) fail(p, v.str + " does not fit f32");
        float f = static_cast<float>(d);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        a.bits = u;
        break;
      }
      default: {
        double d = as_double(v, p);
        std::memcpy(&a.bits, &d, 8);
      }
    }
  }

  ItemSpec item(const JNode& n, const std::string& path) {
    Obj o(n, path);
    ItemSpec it;
    if (o.has("launch") == o.has("copy")) fail(path, "an item needs exactly one of \"launch\" and \"copy\"");
    if (const JNode* nm = o.opt("name")) it.name = as_string(*nm, o.at("name"));
    if (const JNode* c = o.opt("copy")) {
      it.kind = ItemSpec::Kind::copy;
      Obj co(*c, o.at("copy"));
      it.src = buffer_ref(co.req("src"), co.at("src"));
      it.dst = buffer_ref(co.req("dst"), co.at("dst"));
      co.done("src, dst");
      const BufferSpec &s = w.buffers[it.src], &d = w.buffers[it.dst];
      if (it.src == it.dst) fail(o.at("copy"), "src and dst are the same buffer");
      if (d.role == Role::const_) fail(co.at("dst"), "copy into const buffer " + quote(d.name));
      if (s.count * size(s.dtype) != d.count * size(d.dtype))
        fail(o.at("copy"), "sizes differ: " + quote(s.name) + " has " + std::to_string(s.count * size(s.dtype)) + " bytes, " +
                               quote(d.name) + " " + std::to_string(d.count * size(d.dtype)));
      o.done("copy, name");
      return it;
    }
    it.kind = ItemSpec::Kind::launch;
    const std::string& target = as_string(o.req("launch"), o.at("launch"));
    size_t dot = target.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == target.size())
      fail(o.at("launch"), "expected \"program.kernel\", got " + quote(target));
    std::string prog = target.substr(0, dot);
    it.kernel = target.substr(dot + 1);
    for (size_t k = 0; k < w.programs.size(); ++k)
      if (w.programs[k].name == prog) it.program = static_cast<int>(k);
    if (it.program < 0) fail(o.at("launch"), "unknown program " + quote(prog));
    const auto& args = as_array(o.req("args"), o.at("args"));
    for (size_t k = 0; k < args.size(); ++k) it.args.push_back(arg(args[k], index(o.at("args"), k)));
    it.global = sizes(o.req("global"), o.at("global"), false);
    if (const JNode* l = o.opt("local")) {
      it.local = sizes(*l, o.at("local"), true);
      // A work-group of 0 items is meaningless (and OpenCL rejects it): local sizes must be > 0.
      for (size_t d = 0; d < it.local.size(); ++d) {
        const SizeExpr& e = it.local[d];
        for (size_t call = 0, cycle = size_cycle(e, 1); call < cycle; ++call)
          if (size_value(e, call, index(o.at("local"), d)) == 0) fail(index(o.at("local"), d), "a local size must be > 0");
      }
      if (it.local.size() != it.global.size())
        fail(o.at("local"), "has " + std::to_string(it.local.size()) + " dimensions, global " + std::to_string(it.global.size()));
      check_multiples(it, path);
    }
    if (const JNode* e = o.opt("estimate")) {
      Obj eo(*e, o.at("estimate"));
      for (auto [key, dst] : {std::pair{"ops", &it.est_ops}, std::pair{"bytes", &it.est_bytes}})
        if (const JNode* v = eo.opt(key)) {
          *dst = as_double(*v, eo.at(key));
          if (*dst < 0) fail(eo.at(key), "must not be negative");
        }
      eo.done("ops, bytes");
    }
    for (size_t k = 0; k < it.args.size(); ++k) {
      const ArgSpec& a = it.args[k];
      if (a.kind == ArgSpec::Kind::buffer && (a.access == Access::out || a.access == Access::inout) &&
          w.buffers[a.buffer].role == Role::const_)
        fail(index(o.at("args"), k), "const buffer " + quote(w.buffers[a.buffer].name) + " passed with access " + encore::name(a.access));
    }
    o.done("launch, args, global, local, name, estimate");
    return it;
  }

  void top(const JNode& root) {
    Obj o(root, "");
    const std::string& fmt = as_string(o.req("format"), "format");
    if (fmt != "encore.workload/1") fail("format", "expected \"encore.workload/1\", got " + quote(fmt));
    w.name = as_string(o.req("name"), "name");
    if (const JNode* t = o.opt("tolerance")) tolerance(*t, "tolerance");
    programs(o.req("programs"), "programs");
    buffers(o.req("buffers"), "buffers");
    if (const JNode* v = o.opt("variables")) variables(*v, "variables");
    const auto& step = as_array(o.req("step"), "step");
    if (step.empty()) fail("step", "needs at least one item");
    for (size_t k = 0; k < step.size(); ++k) w.step.push_back(item(step[k], index("step", k)));
    o.done("format, name, tolerance, programs, buffers, variables, step");
  }
};

}  // namespace

namespace {

// "shapes": {"n": [v0, v1, ...], ...}: set k of the workload is the document with every
// {"shape": "n", "mul": m, "add": a} replaced by the integer m·v_k + a. Substituting in the JSON
// tree keeps every other form (counts, sizes, views, scalars) exactly as it is for literals.
struct Shapes {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> values;  // [name][set]
  size_t sets = 0;
};

Shapes read_shapes(const JNode& n) {
  Shapes sh;
  Obj o(n, "shapes");
  if (n.kind != JNode::Kind::object || n.members.empty()) fail("shapes", "expected an object: shape name -> [one integer per set]");
  for (const auto& [name, body] : n.members) {
    o.opt(name);
    const std::string p = child("shapes", name);
    check_name(name, p, "shape");
    const auto& a = as_array(body, p);
    if (a.size() < 2) fail(p, "expected at least 2 values (one per set; a single size needs no shape)");
    if (sh.sets && a.size() != sh.sets)
      fail(p, "has " + std::to_string(a.size()) + " values, " + quote(sh.names.front()) + " " + std::to_string(sh.sets) + " (one per set)");
    sh.sets = a.size();
    sh.names.push_back(name);
    sh.values.emplace_back();
    for (size_t k = 0; k < a.size(); ++k) sh.values.back().push_back(as_int(a[k], index(p, k), INT32_MIN, INT32_MAX));
  }
  return sh;
}

void substitute(JNode& n, const Shapes& sh, size_t set, const std::string& path) {
  if (n.kind == JNode::Kind::array) {
    for (size_t k = 0; k < n.elems.size(); ++k) substitute(n.elems[k], sh, set, index(path, k));
    return;
  }
  if (n.kind != JNode::Kind::object) return;
  bool ref = false;
  for (const auto& m : n.members) ref |= m.first == "shape";
  if (!ref) {
    for (auto& [key, v] : n.members) substitute(v, sh, set, child(path, key));
    return;
  }
  Obj o(n, path);
  const std::string& name = as_string(o.req("shape"), o.at("shape"));
  auto it = std::find(sh.names.begin(), sh.names.end(), name);
  if (it == sh.names.end()) fail(o.at("shape"), "unknown shape " + quote(name));
  int64_t mul = 1, add = 0, r = 0;
  if (const JNode* m = o.opt("mul")) mul = as_int(*m, o.at("mul"), INT32_MIN, INT32_MAX);
  if (const JNode* a = o.opt("add")) add = as_int(*a, o.at("add"), INT32_MIN, INT32_MAX);
  o.done("shape, mul, add");
  const int64_t v = sh.values[size_t(it - sh.names.begin())][set];
  if (!encore::detail::affine_value(mul, v, add, &r))
    fail(path, "overflows with " + name + " = " + std::to_string(v));
  JNode num;
  num.kind = JNode::Kind::number;
  num.num = JNode::Num::i64;
  num.i = r;
  num.d = double(r);
  num.str = std::to_string(r);
  n = std::move(num);
}

// What must not differ between sets: one TinyJit runs them all, over one set of state buffers and
// variables, and tells the sets apart by their inputs' sizes.
void check_sets(const std::vector<Workload>& sets) {
  const Workload& a = sets.front();
  // each set's input counts, to the first set that has them: one lookup per set (a pairwise
  // comparison took minutes for 50k sets)
  std::map<std::vector<size_t>, size_t> seen;
  auto inputs_of = [&](const Workload& w) {
    std::vector<size_t> c;
    for (size_t i = 0; i < a.buffers.size(); ++i)
      if (a.buffers[i].role == Role::input) c.push_back(w.buffers[i].count);
    return c;
  };
  seen.emplace(inputs_of(a), 0);
  for (size_t k = 1; k < sets.size(); ++k) {
    const Workload& b = sets[k];
    for (size_t v = 0; v < a.variables.size(); ++v) {
      const VariableSpec &x = a.variables[v], &y = b.variables[v];
      if (x.min != y.min || x.max != y.max || x.fmin != y.fmin || x.fmax != y.fmax || x.ivalues != y.ivalues || x.fvalues != y.fvalues)
        fail(child("variables", x.name), "differs between shape sets 0 and " + std::to_string(k) + ": variables are shared by every set");
    }
    for (size_t i = 0; i < a.buffers.size(); ++i) {
      const BufferSpec &x = a.buffers[i], &y = b.buffers[i];
      if ((x.role == Role::state || x.role == Role::const_) && x.count != y.count)
        fail(child(child("buffers", x.name), "count"), std::string("a ") + workload::name(x.role) + " buffer persists across shape sets: its count " +
                                                           std::to_string(x.count) + " (set 0) cannot change (" + std::to_string(y.count) +
                                                           " in set " + std::to_string(k) + ")");
    }
    if (auto [it, fresh] = seen.emplace(inputs_of(b), k); !fresh) {
      fail("shapes", "sets " + std::to_string(it->second) + " and " + std::to_string(k) +
                         " give every input buffer the same count: a jit tells its captures apart by their inputs' sizes, "
                         "so a size that changes while the inputs keep theirs must be a variable");
    }
  }
}

Workload parse_one(const JNode& doc, const std::filesystem::path& base_dir, const std::filesystem::path& root) {
  Parser p;
  p.w.base_dir = base_dir;
  p.root = root;
  p.top(doc);
  return std::move(p.w);
}

}  // namespace

Workload parse(std::string_view json, const std::filesystem::path& base_dir, const std::filesystem::path& files_root) {
  JNode root = parse_json(json);
  auto shapes = std::find_if(root.members.begin(), root.members.end(), [](const auto& m) { return m.first == "shapes"; });
  if (root.kind != JNode::Kind::object || shapes == root.members.end()) return parse_one(root, base_dir, files_root);
  const Shapes sh = read_shapes(shapes->second);
  root.members.erase(shapes);
  std::vector<Workload> sets;
  for (size_t k = 0; k < sh.sets; ++k) {
    JNode doc = root;
    try {
      substitute(doc, sh, k, "");
      sets.push_back(parse_one(doc, base_dir, files_root));
    } catch (const WorkloadError& e) {
      std::string where = "shape set " + std::to_string(k) + " (";
      for (size_t i = 0; i < sh.names.size(); ++i) where += (i ? ", " : "") + sh.names[i] + " = " + std::to_string(sh.values[i][k]);
      throw WorkloadError(e.path(), e.message() + " [in " + where + ")]");
    }
  }
  check_sets(sets);
  Workload w = sets.front();
  w.shape_names = sh.names;
  w.shape_values = sh.values;
  w.sets = std::move(sets);
  return w;
}

Workload load(const std::filesystem::path& file, const std::filesystem::path& root) {
  std::string text = read_file(file, "");
  return parse(text, file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path(), root);
}

}  // namespace workload
}  // namespace encore
