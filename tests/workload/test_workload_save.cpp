// save_workload: a captured ExecutionUnit written as an `encore.workload/1` file, parsed back,
// checked and run by the harness (bench_main, in process); its dumped state and outputs must equal
// what replaying the unit itself produces from the same initial state.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "encore/encore.hpp"
#include "test_util.hpp"
#include "encore/workload.hpp"
#include "workload_test_util.hpp"

namespace wl = encore::workload;
using encore::Buffer;
using encore::DType;

namespace {

using namespace encore_test;

std::vector<unsigned char> bytes_of(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  b.copyout_bytes(v.data(), v.size());
  return v;
}

const char* kSource = R"CL(
__kernel void scale_add(__global const float* x, __global float* t, __global const float* w, float a, int blocks) {
  size_t i = get_global_id(0);
  if (i < (size_t)blocks * 32) t[i] = x[i] * a + w[i];
}
__kernel void accum(__global const float* c, __global const float* bias, __global float* st, __global float* out, float lr) {
  size_t i = get_global_id(0);
  st[i] += lr * (c[i] + bias[i]);
  out[i] = st[i] * 2.0f - c[i];
}
__kernel void halve(__global float* v, __local float* scratch) {
  size_t i = get_global_id(0), l = get_local_id(0);
  scratch[l] = v[i] * 0.5f;
  barrier(CLK_LOCAL_MEM_FENCE);
  v[i] = scratch[l];
}
__kernel void bump(__global int* cnt, long k, ulong m) {
  cnt[get_global_id(0)] += (int)(k - (1L << 53)) + (int)(m >> 63);
}
)CL";

constexpr size_t N = 256;
const int64_t kBig = (int64_t(1) << 53) + 1;    // not a double: must be written exactly
const uint64_t kHuge = ~uint64_t(0);            // nor this

// The step: an input, a const weight, a state updated in place (whole and through a view), a
// counter state, temps (one filled by an upload), a whole-buffer copy, a copyin into a state view,
// a variable in a scalar and in a size, a float variable, __local memory, and an output.
struct Captured {
  encore::ExecutionUnit unit;
  Buffer x, w, st, cnt, out;
  encore::Variable pos{"pos", 1, 8};
  encore::Variable lr = encore::Variable::f32("lr", 0, 1);
};

Captured capture(const encore::Device& dev) {
  Captured r;
  encore::Program p = dev.compile(kSource);
  std::vector<float> xs(N), ws(N), ss(N), bias(N), patch(32);
  for (size_t i = 0; i < N; ++i) {
    xs[i] = 0.25f * static_cast<float>(i % 17);
    ws[i] = 1.0f / static_cast<float>(i + 1);
    ss[i] = static_cast<float>(i) * 0.125f;
    bias[i] = static_cast<float>(i % 5) - 2.0f;
  }
  for (size_t i = 0; i < patch.size(); ++i) patch[i] = 100.0f + static_cast<float>(i);
  r.x = dev.alloc(DType::f32, N);
  r.x.set_name("x").copyin(xs);
  r.w = dev.alloc(DType::f32, N);
  r.w.set_name("w").copyin(ws);
  r.st = dev.alloc(DType::f32, N);
  r.st.set_name("st").copyin(ss);
  r.cnt = dev.alloc(DType::i32, 32);
  r.cnt.set_name("cnt").copyin(std::vector<int32_t>(32, 7));
  r.pos.bind(8);
  r.lr.bind(0.5);

  encore::Capture cap;
  cap.add_input(r.x);
  {
    Buffer t = dev.alloc(DType::f32, N);
    t.set_name("t");
    dev.launch(p.kernel("scale_add"), {encore::Size(r.pos, 32, 0)}, {}, r.x, t, r.w, 0.1f, r.pos);
    Buffer c = dev.alloc(DType::f32, N);
    c.set_name("c");
    dev.copy(c, t);
    Buffer b = dev.alloc(DType::f32, N);
    b.copyin(bias);                              // an upload into a temp (unnamed: gets bN)
    r.st.view(64, 32).copyin(patch);             // an upload into a view of the state
    r.out = dev.alloc(DType::f32, N);
    r.out.set_name("out");
    dev.launch(p.kernel("accum"), {N}, {}, c, b, r.st, r.out, r.lr);
    dev.launch(p.kernel("halve"), {128}, {32}, r.st.view(128, 128), encore::LocalMem{32 * sizeof(float)});
    dev.launch(p.kernel("bump"), {32}, {}, r.cnt, kBig, kHuge);
  }
  cap.add_output(r.out);
  r.unit = cap.end();
  return r;
}

const wl::BufferSpec& buf(const wl::Workload& w, const std::string& name) {
  int b = w.find_buffer(name);
  if (b < 0) throw std::runtime_error("no buffer " + name);
  return w.buffers[static_cast<size_t>(b)];
}

// Structure every device must give.
void check_structure(const Captured& c, const wl::Workload& w) {
  EXPECT_EQ(w.name, "captured-step");
  ASSERT_EQ(w.step.size(), c.unit.items().size());  // one step item per unit item
  EXPECT_EQ(buf(w, "x").role, wl::Role::input);
  EXPECT_EQ(buf(w, "x").init.kind, wl::Init::Kind::file);
  EXPECT_EQ(buf(w, "w").role, wl::Role::const_);
  EXPECT_EQ(buf(w, "st").role, wl::Role::state);
  EXPECT_EQ(buf(w, "cnt").role, wl::Role::state);
  EXPECT_EQ(buf(w, "cnt").dtype, DType::i32);
  EXPECT_EQ(buf(w, "cnt").count, 32u);
  EXPECT_EQ(buf(w, "out").role, wl::Role::output);
  EXPECT_EQ(buf(w, "t").role, wl::Role::temp);
  EXPECT_EQ(buf(w, "c").role, wl::Role::temp);
  EXPECT_EQ(buf(w, "upload2").role, wl::Role::const_);
  EXPECT_EQ(buf(w, "upload2").count, N);
  EXPECT_EQ(buf(w, "upload3").role, wl::Role::const_);
  EXPECT_EQ(buf(w, "upload3").count, 32u);
  EXPECT_EQ(buf(w, "b0").role, wl::Role::temp);  // the unnamed bias temp

  // items: scale_add, copy, upload (copy into a whole temp), upload into a view (copy kernel),
  // accum, halve, bump
  const auto& s = w.step;
  EXPECT_EQ(s[0].kind, wl::ItemSpec::Kind::launch);
  EXPECT_EQ(s[0].kernel, "scale_add");
  EXPECT_EQ(s[0].name, "scale_add");
  ASSERT_EQ(s[0].global.size(), 1u);
  ASSERT_GE(s[0].global[0].var, 0);
  EXPECT_EQ(w.variables[static_cast<size_t>(s[0].global[0].var)].name, "pos");
  EXPECT_EQ(s[0].global[0].mul, 32);
  EXPECT_EQ(s[0].global[0].add, 0);
  ASSERT_EQ(s[0].args.size(), 5u);
  EXPECT_EQ(s[0].args[0].access, encore::Access::in);
  EXPECT_EQ(s[0].args[1].access, encore::Access::inout);
  EXPECT_EQ(s[0].args[3].kind, wl::ArgSpec::Kind::scalar);
  EXPECT_EQ(s[0].args[3].dtype, DType::f32);
  float a;
  uint32_t abits = static_cast<uint32_t>(s[0].args[3].bits);
  std::memcpy(&a, &abits, 4);
  EXPECT_EQ(a, 0.1f);  // bit-exact
  EXPECT_EQ(s[0].args[4].kind, wl::ArgSpec::Kind::variable);
  EXPECT_EQ(s[0].args[4].dtype, DType::i32);

  EXPECT_EQ(s[1].kind, wl::ItemSpec::Kind::copy);
  EXPECT_EQ(w.buffers[static_cast<size_t>(s[1].src)].name, "t");
  EXPECT_EQ(w.buffers[static_cast<size_t>(s[1].dst)].name, "c");
  EXPECT_EQ(s[2].kind, wl::ItemSpec::Kind::copy);
  EXPECT_EQ(w.buffers[static_cast<size_t>(s[2].src)].name, "upload2");
  EXPECT_EQ(s[3].kind, wl::ItemSpec::Kind::launch);  // into a view: the byte-copy kernel
  EXPECT_EQ(w.programs[static_cast<size_t>(s[3].program)].name, "encore_save");
  ASSERT_EQ(s[3].args.size(), 2u);
  EXPECT_EQ(w.buffers[static_cast<size_t>(s[3].args[0].buffer)].name, "upload3");
  EXPECT_FALSE(s[3].args[0].view);
  EXPECT_EQ(w.buffers[static_cast<size_t>(s[3].args[1].buffer)].name, "st");
  EXPECT_TRUE(s[3].args[1].view);
  EXPECT_EQ(s[3].args[1].offset, 64u);
  EXPECT_EQ(s[3].args[1].count, 32u);
  EXPECT_EQ(s[3].global[0].add, 128);  // bytes

  EXPECT_EQ(s[4].kernel, "accum");
  EXPECT_EQ(s[4].args[4].kind, wl::ArgSpec::Kind::variable);
  EXPECT_EQ(s[4].args[4].dtype, DType::f32);
  EXPECT_EQ(s[5].kernel, "halve");
  EXPECT_TRUE(s[5].args[0].view);
  EXPECT_EQ(s[5].args[0].offset, 128u);
  EXPECT_EQ(s[5].args[0].count, 128u);
  EXPECT_EQ(s[5].args[0].access, encore::Access::inout);
  EXPECT_EQ(s[5].args[1].kind, wl::ArgSpec::Kind::local);
  EXPECT_EQ(s[5].args[1].local_bytes, 128u);
  ASSERT_EQ(s[5].local.size(), 1u);
  EXPECT_EQ(s[5].local[0].add, 32);
  EXPECT_EQ(s[6].kernel, "bump");
  EXPECT_EQ(s[6].args[1].dtype, DType::i64);
  EXPECT_EQ(static_cast<int64_t>(s[6].args[1].bits), kBig);
  EXPECT_EQ(s[6].args[2].dtype, DType::u64);
  EXPECT_EQ(s[6].args[2].bits, kHuge);

  ASSERT_EQ(w.variables.size(), 2u);
  const wl::VariableSpec& pos = w.variables[static_cast<size_t>(w.find_variable("pos"))];
  EXPECT_EQ(pos.type, encore::VarType::i64);
  EXPECT_EQ(pos.min, 1);
  EXPECT_EQ(pos.max, 8);
  EXPECT_EQ(pos.ivalues, std::vector<int64_t>{8});
  const wl::VariableSpec& lr = w.variables[static_cast<size_t>(w.find_variable("lr"))];
  EXPECT_EQ(lr.type, encore::VarType::f32);
  EXPECT_EQ(lr.fvalues, std::vector<double>{0.25});  // the unit's current binding, not the captured 0.5
}


}  // namespace

TEST(WorkloadSave, RoundTripRunsInHarnessAndMatchesReplay) {
  if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore::Device dev = encore::Device::open("CL:0");
  Captured c = capture(dev);
  c.unit.bind_var_f(c.unit.variable_slot(c.lr), 0.25);

  std::filesystem::path dir = fresh_dir("encore_save", "cl");
  std::filesystem::path file = dir / "step.json";
  wl::save_workload(c.unit, file, {.name = "captured-step"});
  ASSERT_TRUE(std::filesystem::exists(dir / "step.data" / "st.bin"));
  wl::Workload w = wl::load(file);
  check_structure(c, w);
  EXPECT_FALSE(w.has_tolerance);
  // the init files hold the current bytes
  EXPECT_EQ(read_bytes(dir / "step.data" / "st.bin"), bytes_of(c.st));
  EXPECT_EQ(read_bytes(dir / "step.data" / "x.bin"), bytes_of(c.x));
  EXPECT_EQ(wl::initial_bytes(w, static_cast<size_t>(w.find_buffer("cnt"))), bytes_of(c.cnt));
  EXPECT_NO_THROW(wl::validate(w, dev));

  BenchRun chk = bench({"check", file.string(), "--device", dev.id()});
  ASSERT_EQ(chk.rc, 0) << chk.out << chk.err;

  // the harness: 3 compared calls from the saved state, dumped after the last jit call
  std::filesystem::path dump = dir / "dump";
  BenchRun run = bench({"run", file.string(), "--device", dev.id(), "--calls", "3", "--rotate", "1", "--dump", dump.string()});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;

  // the unit itself: 3 replays from the same state
  for (int i = 0; i < 3; ++i) c.unit();
  dev.synchronize();
  EXPECT_EQ(read_bytes(dump / "st.bin"), bytes_of(c.st));
  EXPECT_EQ(read_bytes(dump / "cnt.bin"), bytes_of(c.cnt));
  EXPECT_EQ(read_bytes(dump / "out.bin"), bytes_of(c.out));
  std::vector<int32_t> cnt = c.cnt.copyout<int32_t>();
  EXPECT_EQ(cnt[0], 7 + 4 * 2);  // capture + 3 replays, each adding 1 + 1
  // the state really moved (so the comparison means something)
  EXPECT_NE(read_bytes(dump / "st.bin"), read_bytes(dir / "step.data" / "st.bin"));
  std::filesystem::remove_all(dir);
}

// A TinyJit step (closure state, a planned temp, a fresh returned output) saved after replays with
// rotating inputs: the file holds the binding the next replay would use (the last call's input and
// variable value), and the harness reproduces further replays exactly.
TEST(WorkloadSave, TinyJitUnitAfterReplays) {
  if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore::Device dev = encore::Device::open("CL:0");
  encore::Program p = dev.compile(R"CL(
__kernel void mul_t(__global const float* x, __global float* tmp, int t) { size_t i = get_global_id(0); tmp[i] = x[i] * (float)t; }
__kernel void fold(__global const float* tmp, __global float* s, __global float* y) {
  size_t i = get_global_id(0); s[i] = s[i] * 0.5f + tmp[i]; y[i] = s[i] + 1.0f;
}
)CL");
  encore::Kernel mul_t = p.kernel("mul_t"), fold = p.kernel("fold");
  Buffer state = dev.alloc(DType::f32, N);
  state.set_name("state").copyin(std::vector<float>(N, 1.0f));
  auto jit = encore::TinyJit([&](Buffer x, encore::BoundVar t) {
    Buffer tmp = dev.alloc(DType::f32, x.count());
    dev.launch(mul_t, {x.count()}, {}, x, tmp, t.var);
    Buffer y = dev.alloc(DType::f32, x.count());
    y.set_name("y");
    dev.launch(fold, {x.count()}, {}, tmp, state, y);
    return y;
  });
  encore::Variable t("t", 0, 100);
  std::vector<Buffer> xs;
  for (int k = 0; k < 2; ++k) {
    std::vector<float> v(N);
    for (size_t i = 0; i < N; ++i) v[i] = static_cast<float>(k + 1) + 0.5f * static_cast<float>(i % 7);
    xs.push_back(dev.alloc(DType::f32, N));
    xs.back().set_name("x").copyin(v);
  }
  for (int i = 0; i < 5; ++i) jit(xs[static_cast<size_t>(i % 2)], t.bind(i + 1));
  ASSERT_TRUE(jit.unit());
  std::filesystem::path dir = fresh_dir("encore_save", "jit");
  std::filesystem::path file = dir / "frame.json";
  wl::save_workload(jit.unit(), file);
  wl::Workload w = wl::load(file);
  EXPECT_EQ(w.name, "frame");
  EXPECT_EQ(buf(w, "x").role, wl::Role::input);
  EXPECT_EQ(buf(w, "state").role, wl::Role::state);
  EXPECT_EQ(buf(w, "y").role, wl::Role::output);
  EXPECT_EQ(w.buffers.size(), 4u);  // x, the planned temp, state, y
  EXPECT_EQ(w.variables.at(0).ivalues, std::vector<int64_t>{5});
  EXPECT_EQ(read_bytes(dir / "frame.data" / "x.bin"), bytes_of(xs[0]));  // the last call's input
  EXPECT_EQ(read_bytes(dir / "frame.data" / "state.bin"), bytes_of(state));

  std::filesystem::path dump = dir / "dump";
  BenchRun run = bench({"run", file.string(), "--device", dev.id(), "--calls", "4", "--rotate", "2", "--dump", dump.string()});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  Buffer y;
  for (int i = 0; i < 4; ++i) y = jit(xs[0], t.bind(5));
  EXPECT_EQ(read_bytes(dump / "state.bin"), bytes_of(state));
  EXPECT_EQ(read_bytes(dump / "y.bin"), bytes_of(y));
  std::filesystem::remove_all(dir);
}

TEST(WorkloadSave, NullDeviceRoundTrip) {
  encore::Device dev = encore::Device::open("NULL");
  Captured c = capture(dev);
  c.unit.bind_var_f(c.unit.variable_slot(c.lr), 0.25);
  std::filesystem::path dir = fresh_dir("encore_save", "null");
  std::filesystem::path file = dir / "step.json";
  wl::save_workload(c.unit, file, {.name = "captured-step", .has_tolerance = true, .rtol = 1e-6, .atol = 0.5});
  wl::Workload w = wl::load(file);
  check_structure(c, w);
  EXPECT_TRUE(w.has_tolerance);
  EXPECT_EQ(w.rtol, 1e-6);
  EXPECT_EQ(w.atol, 0.5);
  // saving again over the same files gives the same document
  std::vector<unsigned char> first = read_bytes(file);
  wl::save_workload(c.unit, file, {.name = "captured-step", .has_tolerance = true, .rtol = 1e-6, .atol = 0.5});
  EXPECT_EQ(read_bytes(file), first);
  BenchRun chk = bench({"check", file.string(), "--device", "NULL"});
  EXPECT_EQ(chk.rc, 0) << chk.out << chk.err;
  BenchRun run = bench({"run", file.string(), "--device", "NULL", "--calls", "2", "--rotate", "1"});
  EXPECT_EQ(run.rc, 0) << run.out << run.err;
  std::filesystem::remove_all(dir);
}

TEST(WorkloadSave, NamesAreMadeValidAndUnique) {
  encore::Device dev = encore::Device::open("NULL");
  encore::Program p = dev.compile("__kernel void twice(__global const float* a, __global float* b) { b[0] = a[0] * 2; }");
  Buffer a = dev.alloc(DType::f32, 4), b = dev.alloc(DType::f32, 4), d = dev.alloc(DType::f32, 4);
  a.set_name("../evil");
  b.set_name("same");
  d.set_name("same");
  encore::Capture cap;
  cap.add_input(a);
  dev.launch_args(p.kernel("twice"), {1}, {}, {a, b}, "first@step");
  dev.launch(p.kernel("twice"), {1}, {}, b, d);
  encore::ExecutionUnit unit = cap.end();
  std::filesystem::path dir = fresh_dir("encore_save", "names");
  wl::save_workload(unit, dir / "n.json");
  wl::Workload w = wl::load(dir / "n.json");
  ASSERT_EQ(w.buffers.size(), 3u);
  EXPECT_EQ(w.name, "n");
  EXPECT_EQ(w.buffers[0].name, "b0");  // "../evil" is not a usable file name
  EXPECT_EQ(w.buffers[0].role, wl::Role::input);
  EXPECT_EQ(w.buffers[1].name, "same");
  EXPECT_EQ(w.buffers[2].name, "b1");
  EXPECT_EQ(w.step[0].name, "first@step");
  std::filesystem::remove_all(dir);
}

TEST(WorkloadSave, UnsupportedScalarTypeIsAWorkloadError) {
  encore::Device dev = encore::Device::open("NULL");
  // (every integer scalar can be written; a by-value half cannot)
  encore::Program p = dev.compile("__kernel void addc(__global half* a, half k) { a[0] += k; }");
  Buffer a = dev.alloc(DType::f16, 4);
  encore::Capture cap;
  cap.add_input(a);
  dev.launch(p.kernel("addc"), {1}, {}, a, encore::half{0x3c00});
  encore::ExecutionUnit unit = cap.end();
  std::filesystem::path dir = fresh_dir("encore_save", "unsupported");
  try {
    wl::save_workload(unit, dir / "u.json");
    FAIL() << "expected a WorkloadError";
  } catch (const encore::WorkloadError& e) {
    EXPECT_EQ(e.path(), "step[0].args[1]");
  }
  std::filesystem::remove_all(dir);
}
