// Programs and kernels: compile errors with their log, kernel lookup, parameter info and access
// inference (OpenCL and the NULL device's signature parser), the in-memory and on-disk caches
// (hit, miss, corrupt entries, concurrent writers).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "encore/encore.hpp"
#include "core/checksum.hpp"
#include "core/program_cache.hpp"
#include "core/program_impl.hpp"
#include "test_util.hpp"
#include "core/recorder.hpp"
#include "testing.hpp"

using namespace encore;
using encore_test::DeviceTest;
using encore_test::LogCapture;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

// Forgets a program in the device's in-memory cache, as a new process would not have it.
void forget_in_memory(const Device& dev, const std::string& src, const std::string& opts = "") {
  detail::DeviceImpl& d = *dev.impl();
  std::lock_guard<std::mutex> lock(d.programs_mu);
  // the key holds the headers' bytes too: drop every entry of this source and these options
  std::erase_if(d.programs, [&](const auto& kv) { return kv.first.first == src && kv.first.second.rfind(opts + '\0', 0) == 0; });
}

std::string disk_path(const Device& dev, const std::string& dir, const std::string& src, const std::string& opts = "") {
  return detail::cache_path(dir, detail::cache_key_text(dev.impl()->cache_key_prefix(), src, opts));
}

// A kernel with a unique comment (a guaranteed cache miss) that writes x[i] = i * 3 + 1.
std::string unique_source(const std::string& kname) {
  return "// " + encore_test::unique_token() + "\n__kernel void " + kname +
         "(__global int* x) { int i = get_global_id(0); x[i] = i * 3 + 1; }\n";
}

void expect_kernel_works(const Device& dev, const Program& p, const std::string& kname) {
  Kernel k = p.kernel(kname);
  Buffer x = dev.alloc<int32_t>(64);
  x.copyin(std::vector<int32_t>(64, -1));
  dev.launch(k, {64}, {}, x);
  std::vector<int32_t> got = x.copyout<int32_t>();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], i * 3 + 1) << i;
}

size_t count_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// One source with every kind of parameter, for access inference.
const char* kAccessSrc = R"CL(
__kernel void acc_kinds(__global const float* a,      // in
                        __global float* const b,      // inout: the pointer is const, the data is not
                        __constant float* c,          // in
                        __global float* d,            // inout
                        __local float* scratch,       // local
                        int n,
                        unsigned int m,
                        __global const float* restrict e,  // in
                        float s,
                        long q,
                        uchar u,
                        const __global float* f,      // in
                        __global float const* g) {    // in
  b[1] = s;  // written, so inout both from the reader and from the source's body
  d[get_global_id(0)] = a[0] + b[0] + c[0] + e[0] + f[0] + g[0] + s + n + m + q + u;
}
)CL";

void check_access_kinds(const Kernel& k) {
  const auto& p = k.params();
  ASSERT_EQ(p.size(), 13u);
  const char* names[] = {"a", "b", "c", "d", "scratch", "n", "m", "e", "s", "q", "u", "f", "g"};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].name, names[i]) << i;
  Access want[] = {Access::in,   Access::inout, Access::in,   Access::inout, Access::none, Access::none, Access::none,
                   Access::in,   Access::none,  Access::none, Access::none,  Access::in,   Access::in};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].default_access(), want[i]) << "parameter " << p[i].name;
  EXPECT_EQ(p[2].space, AddressSpace::constant);
  EXPECT_EQ(p[4].space, AddressSpace::local);
  EXPECT_EQ(p[0].space, AddressSpace::global);
  for (size_t i : {0, 1, 2, 3, 4, 7, 11, 12}) {
    EXPECT_TRUE(p[i].is_pointer) << i;
    EXPECT_FALSE(p[i].scalar) << i;
  }
  EXPECT_EQ(p[5].scalar, DType::i32);
  EXPECT_EQ(p[6].scalar, DType::u32);
  EXPECT_EQ(p[8].scalar, DType::f32);
  EXPECT_EQ(p[9].scalar, DType::i64);
  EXPECT_EQ(p[10].scalar, DType::u8);
  EXPECT_EQ(p[0].type_name, "float*");
  EXPECT_EQ(p[5].type_name, "int");
  EXPECT_EQ(p[6].type_name, "uint");
  EXPECT_EQ(p[10].type_name, "uchar");
}

}  // namespace

class ProgramAll : public DeviceTest {};

TEST_P(ProgramAll, AccessInferredFromQualifiers) {
  Program p = dev.compile(kAccessSrc);
  Kernel k = p.kernel("acc_kinds");
  EXPECT_EQ(k.name(), "acc_kinds");
  EXPECT_EQ(k.device(), dev);
  EXPECT_EQ(k.program().impl(), p.impl());
  check_access_kinds(k);
}

TEST_P(ProgramAll, AccessesOfARecordedLaunch) {
  Program p = dev.compile(kAccessSrc);
  Kernel k = p.kernel("acc_kinds");
  Buffer base = dev.alloc<float>(1024);
  base.copyin(std::vector<float>(1024, 0.f));
  Buffer a = base.view(0, 32), b = base.view(64, 32), d = base.view(128, 32);
  Buffer c = dev.alloc<float>(32), e = dev.alloc<float>(32), f = dev.alloc<float>(32), g = dev.alloc<float>(32);
  for (const Buffer& x : {c, e, f, g}) x.copyin(std::vector<float>(32, 0.f));
  auto recp = std::make_shared<detail::Recorder>();
  detail::Recorder& rec = *recp;
  rec.id = detail::next_capture_id();
  detail::start_recording(recp);
  try {
    dev.launch(k, {32}, {}, a, b, c, out(d), LocalMem{128}, 1, 2u, in(e), 0.5f, int64_t{3}, uint8_t{4}, f, g);
  } catch (...) {
    detail::stop_recording(&rec);
    throw;
  }
  detail::stop_recording(&rec);
  ASSERT_EQ(rec.items.size(), 1u);
  const ExecItem& it = rec.items[0];
  EXPECT_EQ(it.kind, ItemKind::kernel);
  EXPECT_EQ(it.device(), dev);
  EXPECT_TRUE(!it.uses_variables());
  auto acc = it.accesses();
  ASSERT_EQ(acc.size(), 7u);  // a b c d e f g: scalars and __local are not storage
  // over storage: views are their base's bytes
  EXPECT_EQ(acc[0].storage, base);
  EXPECT_EQ(acc[0].lo, 0u);
  EXPECT_EQ(acc[0].hi, 128u);
  EXPECT_EQ(acc[0].access, Access::in);
  EXPECT_EQ(acc[0].buf, a);
  EXPECT_EQ(acc[1].storage, base);
  EXPECT_EQ(acc[1].lo, 256u);
  EXPECT_EQ(acc[1].hi, 384u);
  EXPECT_EQ(acc[1].access, Access::inout);
  EXPECT_EQ(acc[2].storage, c);
  EXPECT_EQ(acc[2].access, Access::in);
  EXPECT_EQ(acc[3].lo, 512u);
  EXPECT_EQ(acc[3].hi, 640u);
  EXPECT_EQ(acc[3].access, Access::out) << "an explicit access wins";
  EXPECT_EQ(acc[4].access, Access::in);
  EXPECT_EQ(acc[4].storage, e);
  EXPECT_EQ(acc[5].access, Access::in);
  EXPECT_EQ(acc[6].access, Access::in);
  // the args carry their resolved access
  EXPECT_EQ(it.args[1].access, Access::inout);
  EXPECT_NE(it.describe().find("acc_kinds("), std::string::npos) << it.describe();
}

TEST_P(ProgramAll, KernelLookup) {
  Program p = dev.compile(
      "__kernel void lk_one(__global float* x) { x[0] = 1; }\n"
      "float lk_helper(float v) { return v * 2; }\n"
      "__kernel void lk_two(__global float* x, int n) { x[n] = lk_helper(x[n]); }\n");
  auto names = p.kernel_names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"lk_one", "lk_two"}));
  EXPECT_EQ(p.kernel("lk_two").params().size(), 2u);
  try {
    (void)p.kernel("lk_three");
    FAIL();
  } catch (const ArgumentError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("lk_three"), std::string::npos) << m;
    EXPECT_NE(m.find("lk_one"), std::string::npos) << m;
    EXPECT_NE(m.find("lk_two"), std::string::npos) << m;
  }
  EXPECT_EQ(p.device(), dev);
  EXPECT_EQ(p.options(), "");
}

TEST_P(ProgramAll, InMemoryCacheHit) {
  std::string src = unique_source("mem_hit");
  Program a = dev.compile(src);
  Program b = dev.compile(src);
  EXPECT_EQ(a.impl(), b.impl()) << "same (device, source, options): same program";
  Program c = dev.compile(src, "-DFOO=1");
  EXPECT_NE(a.impl(), c.impl()) << "other options: another program";
  EXPECT_EQ(c.options(), "-DFOO=1");
  EXPECT_EQ(a.source(), src);
  EXPECT_EQ(dev.compile(src, "-DFOO=1").impl(), c.impl());
  // kernels of one program are distinct handles over the same signature
  EXPECT_EQ(&a.kernel("mem_hit").params(), &b.kernel("mem_hit").params());
}

TEST_P(ProgramAll, ConcurrentCompilesOfOneSourceShareOneProgram) {
  std::string src = unique_source("conc_compile");
  std::vector<Program> got(4);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < got.size(); ++i) ts.emplace_back([&, i] { got[i] = dev.compile(src); });
  for (auto& t : ts) t.join();
  for (const Program& p : got) EXPECT_EQ(p.impl(), got[0].impl());
}

INSTANTIATE_TEST_SUITE_P(Devices, ProgramAll, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

class ProgramCl : public DeviceTest {};

TEST_P(ProgramCl, CompileErrorCarriesTheLog) {
  std::string src = "// " + encore_test::unique_token() +
                    "\n__kernel void broken(__global float* x) { x[0] = undeclared_thing_42 + 1; }\n";
  try {
    (void)dev.compile(src);
    FAIL() << "a broken source compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undeclared_thing_42"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("undeclared"), std::string::npos) << e.log();
    std::string m = e.what();
    EXPECT_NE(m.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << m;
    EXPECT_NE(m.find(dev.id()), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared_thing_42"), std::string::npos) << "what() includes the log";
  }
  // a failure is not cached: the same source fails again, and the device still compiles
  EXPECT_THROW((void)dev.compile(src), CompileError);
  Program ok = dev.compile(unique_source("after_error"));
  expect_kernel_works(dev, ok, "after_error");
  // bad options are a compile error too, naming the options
  try {
    (void)dev.compile(unique_source("bad_opts"), "-Dfoo=1 -cl-no-such-option");
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("-cl-no-such-option"), std::string::npos) << e.what();
  } catch (const OpenCLError& e) {
    EXPECT_EQ(e.status(), -43) << e.what();  // CL_INVALID_BUILD_OPTIONS is acceptable too
  }
}

TEST_P(ProgramCl, DiskCacheMissThenHit) {
  encore_test::ScopedCacheDir dir;
  std::string src = unique_source("disk_hit");
  Program first = dev.compile(src);
  EXPECT_FALSE(first.from_disk_cache());
  expect_kernel_works(dev, first, "disk_hit");
  dev.synchronize();  // stores binaries of programs that saw new launch configurations
  std::string path = disk_path(dev, dir.path(), src);
  ASSERT_TRUE(fs::exists(path)) << path;
  EXPECT_EQ(count_files(dir.path()), 1u) << "no temporary files left behind";

  forget_in_memory(dev, src);
  Program second = dev.compile(src);
  EXPECT_NE(second.impl(), first.impl());
  EXPECT_TRUE(second.from_disk_cache());
  ASSERT_EQ(second.kernel_names(), first.kernel_names());
  const auto& pa = first.kernel("disk_hit").params();
  const auto& pb = second.kernel("disk_hit").params();
  ASSERT_EQ(pa.size(), pb.size());
  EXPECT_EQ(pb[0].name, pa[0].name);
  EXPECT_EQ(pb[0].type_name, pa[0].type_name);
  EXPECT_EQ(pb[0].default_access(), pa[0].default_access());
  expect_kernel_works(dev, second, "disk_hit");
  EXPECT_FALSE(second.binary().empty());

  // options are part of the key: a miss
  forget_in_memory(dev, src, "-DX=2");
  EXPECT_FALSE(dev.compile(src, "-DX=2").from_disk_cache());
}

// A program from encore's disk cache and one from a saved binary get every parameter's resolved
// facts (pointee, lanes, by-value size, padding, inferred access) as the compile from source did:
// for those two the source is read beside the driver's build, not after it.
TEST_P(ProgramCl, CacheAndBinaryResolveParametersAsTheSourceCompile) {
  encore_test::ScopedCacheDir dir;
  const std::string src = "// " + encore_test::unique_token() + R"(
typedef float real;
typedef struct { float a; int b; char c; } Knobs;
__kernel void res_a(__global real* dst, __global const float4* src, __global real* unused, Knobs k, __global int* acc) {
  int i = get_global_id(0); dst[i] = src[i].x * k.a + (float)k.b; acc[0] += k.c; }
__kernel void res_b(__global uchar* bytes, __global real* y, float s) { int i = get_global_id(0); y[i] = s * (float)bytes[i]; }
)";
  auto facts = [](const Program& p) {
    std::vector<std::string> out;
    for (const std::string& k : p.kernel_names()) {
      const Kernel kern = p.kernel(k);
      const detail::KernelImpl& ki = *kern.impl();
      for (size_t i = 0; i < ki.sig->padding.size(); ++i)
        for (auto [b, e] : ki.sig->padding[i]) out.push_back(k + " pad " + std::to_string(i) + ":" + std::to_string(b) + "-" + std::to_string(e));
      for (const KernelParam& q : kern.params())
        out.push_back(k + " " + q.name + " " + q.type_name + " pointee " + (q.pointee ? std::string(encore::name(*q.pointee)) : "-") + "x" +
                      std::to_string(q.pointee_lanes) + " bytes " + std::to_string(q.value_bytes) + " access " +
                      (q.inferred_access ? encore::name(*q.inferred_access) : "-") + (q.inferred_store_only ? " store-only" : ""));
    }
    return out;
  };
  Program fresh = dev.compile(src);
  ASSERT_FALSE(fresh.from_disk_cache());
  const std::vector<std::string> want = facts(fresh);
  encore_test::expect_has(::testing::PrintToString(want), {"res_a dst real* pointee f32x1", "src float4* pointee f32x4", "unused real* pointee f32x1 bytes 0 access none",
                                                           "k Knobs pointee -x1 bytes 12", "res_a pad 3:9-12", "acc int* pointee i32x1 bytes 0 access inout",
                                                           "bytes uchar* pointee -x1 bytes 0 access in", "y real* pointee f32x1 bytes 0 access inout store-only"});
  const std::vector<unsigned char> binary = fresh.binary();
  const std::string key = fresh.binary_key();
  dev.synchronize();
  fresh = Program();
  forget_in_memory(dev, src);
  Program cached = dev.compile(src);
  ASSERT_TRUE(cached.from_disk_cache());
  EXPECT_EQ(facts(cached), want);
  cached = Program();
  forget_in_memory(dev, src);
  Program loaded = dev.compile_binary(src, "", binary, key);
  ASSERT_TRUE(loaded.from_binary());
  EXPECT_EQ(facts(loaded), want);
  loaded = Program();

  // the same where no thread can be started: the source is read at the end, on the caller's thread
  struct NoThreads {
    NoThreads() { encore::testing::fail_thread_start = true; }
    ~NoThreads() { encore::testing::fail_thread_start = false; }
  } no_threads;
  const uint64_t deferred = encore::testing::beside_deferred;
  forget_in_memory(dev, src);
  cached = dev.compile(src);
  ASSERT_TRUE(cached.from_disk_cache());
  EXPECT_EQ(facts(cached), want);
  cached = Program();
  forget_in_memory(dev, src);
  loaded = dev.compile_binary(src, "", binary, key);
  ASSERT_TRUE(loaded.from_binary());
  EXPECT_EQ(facts(loaded), want);
  EXPECT_EQ(encore::testing::beside_deferred - deferred, 2u) << "both builds read the source on the caller's thread";
}

TEST_P(ProgramCl, DiskCacheOffWithZero) {
  encore_test::ScopedCacheDir dir;
  setenv("ENCORE_CACHE", "0", 1);
  std::string src = unique_source("no_disk");
  Program p = dev.compile(src);
  expect_kernel_works(dev, p, "no_disk");
  dev.synchronize();
  p.save_cache();
  EXPECT_EQ(count_files(dir.path()), 0u);
  forget_in_memory(dev, src);
  EXPECT_FALSE(dev.compile(src).from_disk_cache());
}

TEST_P(ProgramCl, UnwritableCacheDirIsHarmless) {
  encore_test::ScopedCacheDir dir;
  setenv("ENCORE_CACHE", "/dev/null/encore-cache", 1);  // cannot be created
  std::string src = unique_source("no_dir");
  Program p = dev.compile(src);
  expect_kernel_works(dev, p, "no_dir");
  dev.synchronize();
  p.save_cache();
  forget_in_memory(dev, src);
  EXPECT_FALSE(dev.compile(src).from_disk_cache());
}

TEST_P(ProgramCl, CorruptEntriesRecompileWithAWarning) {
  encore_test::ScopedCacheDir dir;
  std::string src = unique_source("corrupt");
  Program first = dev.compile(src);
  first.save_cache();
  std::string path = disk_path(dev, dir.path(), src);
  ASSERT_TRUE(fs::exists(path));
  const auto full = fs::file_size(path);

  struct Case {
    const char* what;
    std::function<void()> damage;
  };
  std::vector<Case> cases = {
      {"truncated", [&] { fs::resize_file(path, full / 2); }},
      {"empty", [&] { fs::resize_file(path, 0); }},
      {"garbage", [&] {
         std::ofstream f(path, std::ios::binary | std::ios::trunc);
         for (int i = 0; i < 5000; ++i) f.put(static_cast<char>(i * 7919));
       }},
      {"one flipped byte", [&] {
         std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
         f.seekg(static_cast<std::streamoff>(full / 2));
         char c = 0;
         f.get(c);
         f.seekp(static_cast<std::streamoff>(full / 2));
         f.put(static_cast<char>(c ^ 0x5a));
       }},
      {"the top bit of the last byte before the checksum flipped", [&] {
         std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
         f.seekg(static_cast<std::streamoff>(full - 9));
         char c = 0;
         f.get(c);
         f.seekp(static_cast<std::streamoff>(full - 9));
         f.put(static_cast<char>(c ^ 0x80));
       }},
      // a well-formed entry whose binary the driver rejects
      {"bad binary", [&] {
         detail::CacheEntry e;
         e.kernels = {detail::KernelSignature{"corrupt", first.kernel("corrupt").params()}};
         e.binary.assign(4096, 0xAB);
         detail::cache_store(path, detail::cache_key_text(dev.impl()->cache_key_prefix(), src, ""), e);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // store a good entry, then damage it
    Program good = dev.compile(src);
    good.save_cache();
    ASSERT_TRUE(fs::exists(path));
    c.damage();
    forget_in_memory(dev, src);
    std::string err;
    Program p;
    {
      LogCapture logs;
      p = dev.compile(src);
      err = logs.text();
    }
    EXPECT_NE(err.find("warning"), std::string::npos) << "stderr: " << err;
    EXPECT_NE(err.find(path), std::string::npos) << "the warning names the entry: " << err;
    EXPECT_FALSE(p.from_disk_cache());
    expect_kernel_works(dev, p, "corrupt");
    // the rebuilt program replaced the bad entry: the next fresh state loads it
    p.save_cache();
    forget_in_memory(dev, src);
    LogCapture logs;
    Program again = dev.compile(src);
    // nothing but the reader's access line (ENCORE_DEBUG=1 reports each kernel's inferred access)
    std::string said = logs.text();
    if (said.find("pointer access from the source") != std::string::npos) said.erase(0, said.find('\n') + 1);
    EXPECT_EQ(said, "");
    EXPECT_TRUE(again.from_disk_cache());
    expect_kernel_works(dev, again, "corrupt");
  }
}

// An entry written by another version of the cache format (its first line names it) is a miss
// without a warning, and the rebuilt program replaces it.
TEST_P(ProgramCl, EntryOfAnotherVersionIsAQuietMiss) {
  encore_test::ScopedCacheDir dir;
  std::string src = unique_source("older");
  dev.compile(src).save_cache();
  std::string path = disk_path(dev, dir.path(), src);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  ASSERT_EQ(bytes.rfind("ENCORE-PROGRAM-CACHE-2\n", 0), 0u);
  bytes[21] = '1';  // as version 1 wrote it (its FNV-1a checksum is not recomputed: the version is read first)
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  forget_in_memory(dev, src);
  Program p;
  std::string said;
  {
    LogCapture logs;
    p = dev.compile(src);
    said = logs.text();
  }
  EXPECT_EQ(said.find("warning"), std::string::npos) << said;
  EXPECT_FALSE(p.from_disk_cache());
  expect_kernel_works(dev, p, "older");
  p.save_cache();
  forget_in_memory(dev, src);
  EXPECT_TRUE(dev.compile(src).from_disk_cache()) << "the rebuilt entry replaced it";
}

TEST_P(ProgramCl, SavedAgainAfterNewLaunchConfigurations) {
  encore_test::ScopedCacheDir dir;
  std::string src = unique_source("resave");
  Program p = dev.compile(src);
  std::string path = disk_path(dev, dir.path(), src);
  ASSERT_TRUE(fs::exists(path)) << "stored right after the build";
  fs::remove(path);
  expect_kernel_works(dev, p, "resave");  // a first launch configuration, then copyout
  dev.synchronize();
  EXPECT_TRUE(fs::exists(path)) << "stored again after the program's first launch";
  forget_in_memory(dev, src);
  Program q = dev.compile(src);
  EXPECT_TRUE(q.from_disk_cache());
  expect_kernel_works(dev, q, "resave");
}

// The value a one-item kernel of `src` writes, compiled afresh as a new process would (the program
// forgotten in memory first), and whether it came from the disk cache.
std::pair<int32_t, bool> compile_and_read(const Device& dev, const std::string& src, const std::string& opts) {
  forget_in_memory(dev, src, opts);
  Program p = dev.compile(src, opts);
  Buffer o = dev.alloc<int32_t>(1);
  dev.launch(p.kernel("inc_val"), {1}, {}, o);
  const int32_t v = o.copyout<int32_t>()[0];
  dev.synchronize();  // stores the binary with its launch configuration
  return {v, p.from_disk_cache()};
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
}

// Restores the working directory on scope exit.
struct ScopedCwd {
  fs::path old = fs::current_path();
  explicit ScopedCwd(const fs::path& p) { fs::current_path(p); }
  ~ScopedCwd() { fs::current_path(old); }
};

// Issue 16 item 5: an edited header used to load the old binary from the disk cache.
TEST_P(ProgramCl, DiskCacheSeesAnEditedHeader) {
  encore_test::ScopedCacheDir cache;
  const fs::path hdrs = fs::path(cache.path()) / "headers";
  fs::create_directories(hdrs / "sub");
  write_text(hdrs / "val.h", "#include \"sub/inner.h\"\n#define VAL (INNER + 1)\n");
  write_text(hdrs / "sub" / "inner.h", "#define INNER 10\n");
  const std::string src = "// " + encore_test::unique_token() +
                          "\n#include \"val.h\"\n__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  const std::string opts = "-I " + hdrs.string();
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(11, false));
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(11, true)) << "unchanged headers: a hit";
  write_text(hdrs / "val.h", "#include \"sub/inner.h\"\n#define VAL (INNER + 2)\n");
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(12, false)) << "the edited header is seen";
  write_text(hdrs / "sub" / "inner.h", "#define INNER 20\n");
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(22, false)) << "so is an edit two includes deep";
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(22, true));
}

// The in-memory cache too: a program still alive is not reused for the same source once a header
// it includes was edited (the old program keeps its own code), and is reused while nothing changed.
TEST_P(ProgramCl, InMemoryCacheSeesAnEditedHeader) {
  encore_test::ScopedCacheDir cache;
  const fs::path hdrs = fs::path(cache.path()) / "headers";
  fs::create_directories(hdrs);
  write_text(hdrs / "val.h", "#define VAL 31\n");
  const std::string src = "// " + encore_test::unique_token() + "\n#include \"val.h\"\n__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  const std::string opts = "-I " + hdrs.string();
  auto run = [&](const Program& p) {
    Buffer o = dev.alloc<int32_t>(1);
    dev.launch(p.kernel("inc_val"), {1}, {}, o);
    return o.copyout<int32_t>()[0];
  };
  Program first = dev.compile(src, opts);
  EXPECT_EQ(run(first), 31);
  EXPECT_EQ(dev.compile(src, opts).impl(), first.impl()) << "unchanged header: the live program is shared";
  write_text(hdrs / "val.h", "#define VAL 32\n");
  Program second = dev.compile(src, opts);
  EXPECT_NE(second.impl(), first.impl()) << "edited header: a new program";
  EXPECT_EQ(run(second), 32);
  EXPECT_EQ(run(first), 31) << "the old program keeps the code it was built from";
  EXPECT_EQ(dev.compile(src, opts).impl(), second.impl());
  write_text(hdrs / "val.h", "#define VAL 31\n");
  EXPECT_EQ(dev.compile(src, opts).impl(), first.impl()) << "the header as it was: the first program, still alive";
}

// A relative -I. names another directory from another working directory.
TEST_P(ProgramCl, RelativeIncludeDirFromTwoWorkingDirectories) {
  encore_test::ScopedCacheDir cache;
  const fs::path a = fs::path(cache.path()) / "a", b = fs::path(cache.path()) / "b";
  fs::create_directories(a / "inc");
  fs::create_directories(b / "inc");
  write_text(a / "inc" / "val.h", "#define VAL 1\n");
  write_text(b / "inc" / "val.h", "#define VAL 2\n");
  const std::string src = "// " + encore_test::unique_token() + "\n#include <val.h>\n__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  {
    ScopedCwd in_a(a);
    EXPECT_EQ(compile_and_read(dev, src, "-I./inc"), std::make_pair(1, false));
  }
  {
    ScopedCwd in_b(b);
    EXPECT_EQ(compile_and_read(dev, src, "-I./inc"), std::make_pair(2, false));
  }
  {
    ScopedCwd in_a(a);
    EXPECT_EQ(compile_and_read(dev, src, "-I./inc"), std::make_pair(1, true));
  }
}

// An include encore cannot follow (not found where the compiler looks, or computed by a macro):
// the program builds, but never goes through the disk cache, and ENCORE_DEBUG=1 says why.
TEST_P(ProgramCl, UnresolvableIncludesSkipTheDiskCache) {
  encore_test::ScopedCacheDir cache;
  write_text(fs::path(cache.path()) / "val.h", "#define VAL 5\n");
  const std::string tok = encore_test::unique_token();
  const std::string computed = "// " + tok + "\n#define HDR \"val.h\"\n#include HDR\n__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  // under a condition on a macro: counted, whatever the macro (a superset keys the cache safely)
  const std::string missing = "// " + tok + "\n#ifdef NO_SUCH_FLAG\n#include \"no_such_header.h\"\n#endif\n#define VAL 6\n"
                              "__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  const std::string opts = "-I" + cache.path();
  LogCapture logs;
  EXPECT_EQ(compile_and_read(dev, computed, opts), std::make_pair(5, false));
  EXPECT_EQ(compile_and_read(dev, computed, opts), std::make_pair(5, false));
  EXPECT_EQ(compile_and_read(dev, missing, opts), std::make_pair(6, false));
  EXPECT_EQ(compile_and_read(dev, missing, opts), std::make_pair(6, false));
  const std::string text = logs.text();
  EXPECT_NE(text.find("program not cached on disk: #include HDR (the source, line 3) is computed by a macro"), std::string::npos) << text;
  EXPECT_NE(text.find("#include \"no_such_header.h\" (the source, line 3) was not found"), std::string::npos) << text;
  EXPECT_EQ(count_files(cache.path()), 1u) << "only the header: no cache entry";
}

// The include scan reads directives with the kernel reader's lexer (core/preprocessor.hpp): an
// #include in a comment or in a group no macro can make live names no file, so the program is
// found whole and cached on disk (the scan used to count them, and skip the cache).
TEST_P(ProgramCl, IncludesInCommentsAndDeadGroupsDoNotCount) {
  encore_test::ScopedCacheDir cache;
  write_text(fs::path(cache.path()) / "val.h", "#define VAL 7\n");
  const std::string src = "// " + encore_test::unique_token() +
                          "\n// #include \"gone1.h\"\n/* a comment\n#include \"gone2.h\"\n*/\n#if 0\n#include \"gone3.h\"\n"
                          "#elif 2 > 1\n#include \"val.h\"\n#else\n#include \"gone4.h\"\n#endif\n"
                          "__kernel void inc_val(__global int* o) { o[0] = VAL; }\n";
  const std::string opts = "-I" + cache.path();
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(7, false));
  EXPECT_EQ(compile_and_read(dev, src, opts), std::make_pair(7, true)) << "every include it counts was found: cached on disk";
}

INSTANTIATE_TEST_SUITE_P(Devices, ProgramCl, ::testing::ValuesIn(encore_test::cl_params()), encore_test::param_name);

// Typedefs in an included header resolve like those in the source.
TEST(IncludedHeaders, AliasesInHeadersResolve) {
  encore_test::ScopedCacheDir cache;
  write_text(fs::path(cache.path()) / "types.h", "typedef double real;\n");
  std::vector<Device> devs{Device::open("NULL")};
  for (const auto& id : encore_test::cl_device_ids()) devs.push_back(Device::open(id));
  for (const Device& dev : devs) {
    Program p = dev.compile("#include \"types.h\"\n__kernel void hk(__global real* x) { x[0] = 1; }\n", "-I" + cache.path());
    EXPECT_EQ(p.kernel("hk").params()[0].pointee, DType::f64) << dev.id();
  }
}

// The NULL device compiles nothing: its "build" reads the kernel signatures.
TEST(NullProgram, NoKernelIsACompileError) {
  Device n = Device::open("NULL");
  EXPECT_THROW((void)n.compile("float f(float x) { return x; }"), CompileError);
  EXPECT_TRUE(n.compile("__kernel void nk(__global float* x) {}").binary().empty());
}

TEST(SignatureParser, TrickySources) {
  const std::string src = R"CL(
#define N 4
/* __kernel void fake_block(__global float* never) {} */
// __kernel void fake_line(__global float* never) {}
typedef float real;
float helper(__global const float* p, int i) { return p[i]; }

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void sp_first(__global const float* restrict in_x,   /* a comment, inside */
              __global float* restrict out_y,        // and a line comment
              unsigned int n,
              const int k)
{
  if (get_global_id(0) < n) out_y[get_global_id(0)] = helper(in_x, k) * N;
}

kernel void __attribute__((vec_type_hint(float4))) sp_second(global float *x,
    __constant float * c, __local   float*scratch, unsigned long big, unsigned char small, ulong u2) {
  scratch[0] = c[0]; x[0] = scratch[0] + big + small + u2;
}

__kernel void sp_void(void) { }
__kernel void sp_const_ptr(__global float * const p, __global float const * q, const __global float* r) { p[0] = q[0] + r[0]; }
)CL";
  auto sigs = detail::parse_kernel_signatures(src);
  ASSERT_EQ(sigs.size(), 4u);
  EXPECT_EQ(sigs[0].name, "sp_first");
  EXPECT_EQ(sigs[1].name, "sp_second");
  EXPECT_EQ(sigs[2].name, "sp_void");
  EXPECT_EQ(sigs[3].name, "sp_const_ptr");

  const auto& a = sigs[0].params;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].name, "in_x");
  EXPECT_EQ(a[0].type_name, "float*");
  EXPECT_EQ(a[0].default_access(), Access::in);
  EXPECT_EQ(a[1].name, "out_y");
  EXPECT_EQ(a[1].default_access(), Access::inout);
  EXPECT_EQ(a[2].name, "n");
  EXPECT_EQ(a[2].scalar, DType::u32);
  EXPECT_EQ(a[2].type_name, "uint");
  EXPECT_FALSE(a[2].is_pointer);
  EXPECT_EQ(a[3].name, "k");
  EXPECT_EQ(a[3].scalar, DType::i32);
  EXPECT_EQ(a[3].type_name, "int");

  const auto& b = sigs[1].params;
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[0].name, "x");
  EXPECT_EQ(b[0].space, AddressSpace::global);
  EXPECT_EQ(b[0].default_access(), Access::inout);
  EXPECT_EQ(b[1].name, "c");
  EXPECT_EQ(b[1].space, AddressSpace::constant);
  EXPECT_EQ(b[1].default_access(), Access::in);
  EXPECT_EQ(b[2].name, "scratch");
  EXPECT_EQ(b[2].space, AddressSpace::local);
  EXPECT_EQ(b[2].default_access(), Access::none);
  EXPECT_EQ(b[3].scalar, DType::u64);
  EXPECT_EQ(b[3].type_name, "ulong");
  EXPECT_EQ(b[4].scalar, DType::u8);
  EXPECT_EQ(b[4].type_name, "uchar");
  EXPECT_EQ(b[5].scalar, DType::u64);

  EXPECT_TRUE(sigs[2].params.empty());

  const auto& c = sigs[3].params;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].default_access(), Access::inout) << "float* const p: the data is written";
  EXPECT_EQ(c[1].default_access(), Access::in);
  EXPECT_EQ(c[2].default_access(), Access::in);
}

TEST(SignatureParser, MatchesOpenCL) {
  auto ids = encore_test::cl_device_ids();
  if (ids.empty()) GTEST_SKIP() << "no OpenCL device";
  Device cl = Device::open(ids[0]);
  auto null_sigs = detail::parse_kernel_signatures(kAccessSrc);
  ASSERT_EQ(null_sigs.size(), 1u);
  const auto& np = null_sigs[0].params;
  Program prog = cl.compile(kAccessSrc);  // params() refers into the program: keep it alive
  const auto& cp = prog.kernel("acc_kinds").params();
  ASSERT_EQ(np.size(), cp.size());
  for (size_t i = 0; i < np.size(); ++i) {
    SCOPED_TRACE(cp[i].name);
    EXPECT_EQ(np[i].name, cp[i].name);
    EXPECT_EQ(np[i].type_name, cp[i].type_name);
    EXPECT_EQ(np[i].space, cp[i].space);
    EXPECT_EQ(np[i].is_pointer, cp[i].is_pointer);
    EXPECT_EQ(np[i].scalar, cp[i].scalar);
    EXPECT_EQ(np[i].default_access(), cp[i].default_access());
  }
}

// Both devices read the same pointee types (the check at launch is one for both).
TEST(SignatureParser, PointeesMatchOpenCL) {
  const std::string src = R"CL(
typedef float real;
typedef struct { int a; } S;
struct T { float b; };
__kernel void pt(__global real* a, __global const float4* b, __global S* c, __global struct T* d, __global unsigned char* e,
                 __global void* f, __constant uint* g, __global double3* h, __local float* l, __global half* i) {}
)CL";
  std::vector<Device> devs{Device::open("NULL")};
  for (const auto& id : encore_test::cl_device_ids()) devs.push_back(Device::open(id));
  const std::optional<DType> want[] = {DType::f32, DType::f32, std::nullopt, std::nullopt, std::nullopt,
                                       std::nullopt, DType::u32, DType::f64, std::nullopt, DType::f16};
  const uint8_t lanes[] = {1, 4, 1, 1, 1, 1, 1, 4, 1, 1};
  std::vector<std::string> names;
  for (const Device& dev : devs) {
    SCOPED_TRACE(dev.id());
    Program prog = dev.compile(src);
    const auto& p = prog.kernel("pt").params();
    ASSERT_EQ(p.size(), 10u);
    std::vector<std::string> n;
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(p[i].pointee, want[i]) << p[i].type_name;
      EXPECT_EQ(p[i].pointee_lanes, lanes[i]) << p[i].type_name;
      n.push_back(p[i].type_name);
    }
    if (names.empty()) names = n;
    else EXPECT_EQ(n, names) << "type names as OpenCL spells them";
  }
}

// Several writers store the same entry path at once; every load sees one complete entry.
// sum64, the checksum of cache entries and saved binaries: every single flipped bit, in each of
// its four lanes and in the bytes past the last whole 32-byte block, and every truncation changes it.
TEST(Checksum, EveryFlippedBitAndTruncationChangesTheSum) {
  std::vector<unsigned char> b(100);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 37 + 11);
  const uint64_t sum = detail::sum64(b.data(), b.size());
  for (size_t i = 0; i < b.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      b[i] ^= static_cast<unsigned char>(1u << bit);
      EXPECT_NE(detail::sum64(b.data(), b.size()), sum) << "byte " << i << " bit " << bit;
      b[i] ^= static_cast<unsigned char>(1u << bit);
    }
  for (size_t n = 0; n < b.size(); ++n) EXPECT_NE(detail::sum64(b.data(), n), sum) << "first " << n << " bytes";
  EXPECT_EQ(detail::sum64(b.data(), b.size()), sum);
}

TEST(DiskCache, ConcurrentWritersLeaveOneCompleteEntry) {
  encore_test::ScopedCacheDir dir;
  const std::string key = "concurrent-key\0with nul"s;
  const std::string path = detail::cache_path(dir.path(), key);
  constexpr int kThreads = 8, kRounds = 25;
  auto entry_for = [](int t) {
    detail::CacheEntry e;
    KernelParam p;
    p.name = "x" + std::to_string(t);
    p.type_name = "float*";
    p.is_pointer = true;
    p.space = AddressSpace::global;
    e.kernels = {detail::KernelSignature{"k" + std::to_string(t), {p}}};
    e.binary.assign(1000 + 997 * t, static_cast<unsigned char>(t + 1));  // sizes differ per writer
    return e;
  };
  std::atomic<bool> stop{false};
  std::atomic<int> loads{0}, bad{0};
  LogCapture logs;
  std::thread reader([&] {
    while (!stop) {
      if (auto e = detail::cache_load(path, key)) {
        ++loads;
        // complete and self-consistent: one writer's entry, never a mix
        int t = e->binary.empty() ? -1 : e->binary[0] - 1;
        if (t < 0 || t >= kThreads || e->binary.size() != size_t(1000 + 997 * t) || e->kernels.size() != 1 ||
            e->kernels[0].name != "k" + std::to_string(t))
          ++bad;
        for (unsigned char c : e->binary)
          if (c != e->binary[0]) {
            ++bad;
            break;
          }
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      detail::CacheEntry e = entry_for(t);
      for (int r = 0; r < kRounds; ++r) detail::cache_store(path, key, e);
    });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  std::string err = logs.text();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(err, "") << "no load saw a corrupt entry";
  auto final_entry = detail::cache_load(path, key);
  ASSERT_TRUE(final_entry);
  int t = final_entry->binary[0] - 1;
  ASSERT_GE(t, 0);
  ASSERT_LT(t, kThreads);
  EXPECT_EQ(final_entry->binary, entry_for(t).binary);
  EXPECT_EQ(final_entry->kernels[0].params[0].name, "x" + std::to_string(t));
  EXPECT_EQ(count_files(dir.path()), 1u) << "no temporary files left behind";
  // another key hashing elsewhere is a miss, and a key mismatch at the same path is a miss too
  EXPECT_FALSE(detail::cache_load(path, "another key"));
  EXPECT_TRUE(fs::exists(path)) << "a key mismatch is not corruption: the entry stays";
}

// Threads compiling one new source on distinct devices all write the same directory.
TEST(DiskCache, ConcurrentCompilesOnDistinctDevices) {
  encore_test::ScopedCacheDir dir;
  std::vector<Device> devs{Device::open("NULL")};
  for (const auto& id : encore_test::cl_device_ids()) devs.push_back(Device::open(id));
  std::string src = unique_source("conc_dev");
  std::vector<Program> got(devs.size() * 2);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < got.size(); ++i) ts.emplace_back([&, i] { got[i] = devs[i % devs.size()].compile(src); });
  for (auto& t : ts) t.join();
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i]);
    EXPECT_EQ(got[i].impl(), got[i % devs.size()].impl());
    EXPECT_EQ(got[i].device(), devs[i % devs.size()]);
  }
  for (size_t i = 1; i < devs.size(); ++i) {  // the OpenCL devices: each left a loadable entry
    std::string path = disk_path(devs[i], dir.path(), src);
    auto e = detail::cache_load(path, detail::cache_key_text(devs[i].impl()->cache_key_prefix(), src, ""));
    ASSERT_TRUE(e) << path;
    EXPECT_FALSE(e->binary.empty());
    ASSERT_EQ(e->kernels.size(), 1u);
    EXPECT_EQ(e->kernels[0].name, "conc_dev");
  }
}

// The capture's access check runs a launch a second time only for an encore::out claim the source
// does not prove: a parameter the body only stores into (KernelParam::inferred_store_only) needs no
// trial run, nor does one it never names; one it also reads (a correct claim: it reads back only
// what it wrote) and one it accumulates into (a wrong claim, refused) still get one. Replay of the
// proven ones equals eager.
TEST(AccessCheckTrials, OutProvenByTheSourceIsNotRunTwice) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open();
  Program pr = dev.compile(R"(
__kernel void twice(__global float* x, __global float* y) { int i = get_global_id(0); y[i] = x[i] * 2.0f; }
__kernel void twice_reread(__global float* x, __global float* y) { int i = get_global_id(0); y[i] = x[i]; y[i] = y[i] * 2.0f; }
__kernel void accumulate(__global float* x, __global float* y) { int i = get_global_id(0); y[i] += x[i]; }
__kernel void ignores(__global float* x, __global float* y) { }
)");
  ASSERT_TRUE(pr.kernel("twice").params()[1].inferred_store_only);
  ASSERT_FALSE(pr.kernel("twice_reread").params()[1].inferred_store_only);
  ASSERT_FALSE(pr.kernel("accumulate").params()[1].inferred_store_only);
  std::vector<float> hx(64);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = static_cast<float>(i) - 5.f;
  Buffer x = dev.alloc<float>(64), y = dev.alloc<float>(64);
  x.copyin(std::span<const float>(hx));
  auto trials = [&](const char* k, bool refused) {
    const uint64_t before = encore::testing::access_trial_runs.load();
    Capture cap;
    cap.add_input(x);
    if (refused) {
      EXPECT_THROW(dev.launch(pr.kernel(k), {64}, {}, x, encore::out(y)), JitError) << k;
    } else {
      dev.launch(pr.kernel(k), {64}, {}, x, encore::out(y));
      ExecutionUnit u = cap.end();
      y.copyin(std::vector<float>(64, 9.f));
      u();
      std::vector<float> got = y.copyout<float>();
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], hx[i] * 2.f) << k << " element " << i;
    }
    return encore::testing::access_trial_runs.load() - before;
  };
  EXPECT_EQ(trials("twice", false), 0u) << "the source proves the claim";
  EXPECT_EQ(trials("twice_reread", false), 1u) << "a parameter also read is tried";
  EXPECT_EQ(trials("accumulate", true), 1u) << "and a wrong claim is refused after its trial";
  // a parameter the body never names cannot be read either
  ASSERT_EQ(pr.kernel("ignores").params()[1].inferred_access, Access::none);
  const uint64_t before = encore::testing::access_trial_runs.load();
  {
    Capture cap;
    dev.launch(pr.kernel("ignores"), {64}, {}, x, encore::out(y));
    ExecutionUnit u = cap.end();
    u();
  }
  EXPECT_EQ(encore::testing::access_trial_runs.load() - before, 0u) << "an out on a parameter never named is proven";
}

// The NULL device runs no kernel, so no claim can be tried there: a capture on NULL neither runs a
// trial nor holds snapshots, even for claims OpenCL would refuse.
TEST(AccessCheckNull, NothingIsTried) {
  Device dev = Device::open("NULL");
  Program pr = dev.compile("__kernel void null_acc(__global float* x, __global float* y) { int i = get_global_id(0); y[i] += x[i]; }");
  Buffer x = dev.alloc<float>(64), y = dev.alloc<float>(64);
  const uint64_t trials = encore::testing::access_trial_runs.load();
  Capture cap;
  cap.add_input(x);
  dev.launch(pr.kernel("null_acc"), {64}, {}, x, encore::out(y));
  dev.launch(pr.kernel("null_acc"), {64}, {}, encore::in(y), x);
  EXPECT_EQ(detail::current_recorder()->access_checks, nullptr) << "no snapshot was taken";
  EXPECT_NO_THROW((void)cap.end());
  EXPECT_EQ(encore::testing::access_trial_runs.load(), trials);
}

// The capture's in claims are compared when the capture ends, not launch by launch: no launch waits
// for its reads while the held snapshots fit the window (64 MiB). Past it, the next checked launch
// waits for them all and compares them, so a wrong claim is refused at that launch. Either way the
// first wrong claim in launch order is the one named.
TEST(AccessCheckWindow, InClaimsAreComparedAtTheEndOrWhenTheWindowFills) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open();
  Program pr = dev.compile(R"(
__kernel void win_copy(__global float* x, __global float* y) { int i = get_global_id(0); y[i] = x[i]; }
__kernel void win_bump(__global float* x, __global float* y) { int i = get_global_id(0); y[i] += x[i]; }
)");
  Buffer x = dev.alloc<float>(64), y = dev.alloc<float>(64), z = dev.alloc<float>(64);
  x.copyin(std::vector<float>(64, 1.f));
  struct Reset {
    ~Reset() { encore::testing::access_check_window = 0; }
  } reset;
  for (size_t window : {size_t{0}, size_t{1}}) {
    encore::testing::access_check_window = window;
    const uint64_t settles = encore::testing::access_check_settles.load();
    int launched = 0;  // launches that returned
    Capture cap;
    cap.add_input(x);
    try {
      for (int i = 0; i < 8; ++i, ++launched) {
        if (i == 3) dev.launch(pr.kernel("win_bump"), {64}, {}, x, encore::in(y));  // wrong: y is written
        else if (i == 5) dev.launch(pr.kernel("win_bump"), {64}, {}, x, encore::in(z));  // wrong too, later
        else dev.launch(pr.kernel("win_copy"), {64}, {}, x, y);  // x inferred in, without const: checked
      }
      (void)cap.end();
      FAIL() << "window " << window << ": the wrong in claim was accepted";
    } catch (const JitError& e) {
      encore_test::expect_has(e.what(), {"win_bump", "argument 1", "float* y", "encore::in"});
      EXPECT_EQ(std::string(e.what()).find("float* z"), std::string::npos) << e.what();
    }
    if (window == 0) {
      EXPECT_EQ(launched, 8) << "every launch returned: the claims were compared at end()";
      EXPECT_EQ(encore::testing::access_check_settles.load() - settles, 0u) << "no launch waited for the check";
    } else {
      EXPECT_EQ(launched, 4) << "with a 1-byte window the launch after the wrong one compares it";
      EXPECT_EQ(encore::testing::access_check_settles.load() - settles, 4u) << "launches 1 to 4 each found the window full";
    }
  }
}
