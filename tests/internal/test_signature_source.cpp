// Issue 19 item 7: parameter types come from the source (one reader for NULL and OpenCL), programs
// build without -cl-kernel-arg-info, and what the reader cannot follow (a macro, an unknown typedef,
// a directive inside a signature, #if branches) is refused rather than guessed: OpenCL then asks the
// driver through a metadata build whose binary is not the one run, NULL reports a CompileError.
// (ENCORE_CHECK_SIGNATURES=1, set for the test suites, compares every program they build against
// clGetKernelArgInfo; here the same comparison runs on sources chosen to be awkward.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "core/signature_parser.hpp"
#include "testing.hpp"
#include "test_util.hpp"

using namespace encore;
using encore::detail::read_signatures;

namespace {

TEST(SignatureSource, ReadsWhatTheCompilerWouldSee) {
  const std::string src = R"CL(
#define REAL float
#define GLOBAL_CONST __global const
#define NOTHING
typedef struct { float a; int b; } pair_t;
typedef uint index_t;
__kernel void rs_a(GLOBAL_CONST REAL* x, __global REAL* NOTHING y, pair_t p, index_t n, struct tagged t) {}
__kernel void rs_b(__global DT* z) {}
)CL";
  auto r = read_signatures(src, {}, "-DDT=double");
  ASSERT_TRUE(r.ok()) << r.unreadable;
  ASSERT_EQ(r.kernels.size(), 2u);
  const auto& a = r.kernels[0].params;
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].type_name, "float*");
  EXPECT_TRUE(a[0].const_data);
  EXPECT_EQ(a[0].space, AddressSpace::global);
  EXPECT_EQ(a[1].type_name, "float*");
  EXPECT_EQ(a[1].name, "y");
  EXPECT_FALSE(a[1].const_data);
  EXPECT_EQ(a[2].type_name, "pair_t");
  EXPECT_FALSE(a[2].scalar);
  EXPECT_EQ(a[3].type_name, "index_t");
  EXPECT_EQ(a[4].type_name, "struct tagged");
  EXPECT_EQ(r.kernels[1].params[0].type_name, "double*");
  // a typedef declared differently in #if branches still names the parameter's type as the driver
  // does: readable (its pointee is left unchecked later)
  auto two = read_signatures("#if 1\ntypedef float T;\n#else\ntypedef int T;\n#endif\n__kernel void k(__global T* x) {}");
  ASSERT_TRUE(two.ok()) << two.unreadable;
  EXPECT_EQ(two.kernels[0].params[0].type_name, "T*");
}

TEST(SignatureSource, RefusesRatherThanGuesses) {
  struct Case {
    const char* src;
    const char* options;
    const char* why;
  } cases[] = {
      {"#define ARGS(t) __global t* x, int n\n__kernel void k(ARGS(float)) {}", "", "macro ARGS"},
      {"#define PTR(t) __global t*\n__kernel void k(PTR(float) x) {}", "", "macro PTR"},
      {"__kernel void k(__global mystery_t* x) {}", "", "mystery_t"},
      {"typedef __global float* gptr;\n__kernel void k(gptr x) {}", "", "pointer typedef"},
      // (issue 28: #if, #ifdef and -D are decided where they can be; conditions on what the driver
      // defines cannot be)
      {"__kernel void k(__global float* x,\n#ifdef __IMAGE_SUPPORT__\n double w\n#else\n float w\n#endif\n) {}", "", "cannot decide"},
      {"#ifdef cl_khr_fp64\n__kernel void k(__global double* x) {}\n#else\n__kernel void k(__global float* x) {}\n#endif\n", "", "cannot decide"},
      {"#ifdef __FAST_RELAXED_MATH__\ntypedef __global float* T;\n#else\ntypedef float T;\n#endif\n__kernel void k(T x) {}", "", "the type T"},
      {"#define KNAME(n) n\n__kernel void KNAME(k2)(__global float* x) {}", "", "name comes from the function-like macro KNAME"},
      {"__kernel void k(__global float* x, N_T n) {}", "-DN_T=1", "holds \"1\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    auto r = read_signatures(c.src, {}, c.options);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.unreadable.find(c.why), std::string::npos) << r.unreadable;
    EXPECT_TRUE(r.kernels.empty());
    // the NULL device has no compiler to ask: a CompileError that says why
    Device null = Device::open("NULL");
    try {
      null.compile(c.src, c.options);
      ADD_FAILURE() << "NULL compiled an unreadable program";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(c.why), std::string::npos) << e.what();
    }
  }
}

// On OpenCL: readable programs are built once, without the flag; unreadable ones get their types
// from a metadata build, and come out as the driver sees them (after the preprocessor).
TEST(SignatureSource, OpenCLFallsBackToAMetadataBuild) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir cache;  // every program below is built, not loaded
  Device dev = Device::open("CL");
  const std::string tag = "/* " + encore_test::unique_token() + " */\n";
  const uint64_t before = encore::testing::cl_metadata_builds.load();
  Program plain = dev.compile(tag + "#define REAL float\n__kernel void fb_plain(__global const REAL* x, __global float* y) { y[0] = x[0]; }");
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before) << "a readable program needs no metadata build";
  EXPECT_EQ(plain.kernel("fb_plain").params()[0].type_name, "float*");

  encore_test::LogCapture log;
  Program odd = dev.compile(tag + "#define ARGS __global const float* x, __global float* y, int n\n"
                                  "__kernel void fb_odd(ARGS) { if (get_global_id(0) < n) y[get_global_id(0)] = 2 * x[get_global_id(0)]; }\n"
                                  "#ifdef NEVER\n__kernel void fb_odd(__global int* q) {}\n#endif\n");
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before + 1);
  EXPECT_NE(log.text().find("metadata build"), std::string::npos) << log.text();
  const auto& p = odd.kernel("fb_odd").params();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].type_name, "float*");
  EXPECT_EQ(p[0].default_access(), Access::in);
  EXPECT_EQ(p[0].pointee, DType::f32);
  EXPECT_EQ(p[1].default_access(), Access::inout);
  EXPECT_EQ(p[2].scalar, DType::i32);
  // and it runs: the program that runs is the one built without the flag
  Buffer x = dev.alloc<float>(4), y = dev.alloc<float>(4);
  x.copyin(std::vector<float>{1, 2, 3, 4});
  dev.launch(odd.kernel("fb_odd"), {4}, {}, x, y, 4);
  EXPECT_EQ(y.copyout<float>(), (std::vector<float>{2, 4, 6, 8}));

  // a kernel the text does not show (from an #include the reader cannot see here): metadata build
  const std::string dir = (std::filesystem::temp_directory_path() / ("encore-sig-" + encore_test::unique_token())).string();
  std::filesystem::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir + "/k.cl").c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs("__kernel void fb_included(__global float* z) { z[0] = 1; }\n", f);
    std::fclose(f);
  }
  Program inc = dev.compile(tag + "#define FILE \"k.cl\"\n#include FILE\n__kernel void fb_main(__global float* z) { z[1] = 2; }", "-I " + dir);
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before + 2);
  EXPECT_EQ(inc.kernel("fb_included").params()[0].type_name, "float*");
  std::filesystem::remove_all(dir);
}

}  // namespace
