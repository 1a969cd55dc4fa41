// Issue 28 item 1: the kernel reader sees the program the compiler sees. #if/#ifdef/#ifndef/#elif/
// #else/#endif/#undef and -D decide which typedefs, #defines and kernels count; macros expand in
// order with C's no-recursion rule and a budget; multi-word type spellings normalise; and whatever
// it cannot decide (a driver's predefined macro, a function-like macro in #if) is refused, never
// guessed. The differential test at the end builds a few hundred generated kernels on OpenCL and
// requires the reader's answer to equal the driver's (clGetKernelArgInfo, and sizeof checks the
// compiler evaluates) or to be "cannot read".
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/preprocessor.hpp"
#include "core/signature_parser.hpp"
#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "test_util.hpp"
#include "testing.hpp"

using namespace encore;
using encore::detail::KernelSignature;
using encore::detail::read_signatures;

namespace {

const char* kRealT = "#ifdef X\n#define real_t double\n#else\ntypedef float real_t;\n#endif\n"
                     "__kernel void scale(__global real_t* v) { size_t i = get_global_id(0); v[i] = v[i] * 2; }\n";

// One kernel's parameters read from `src`, with their pointees resolved; fails the test when unreadable.
std::vector<KernelParam> params(const std::string& src, const std::string& options = "", size_t kernel = 0) {
  auto r = read_signatures(src, {}, options);
  EXPECT_TRUE(r.ok()) << r.unreadable << "\n" << src;
  if (!r.ok() || r.kernels.size() <= kernel) return {};
  detail::resolve_pointees(r.kernels, src, {}, options, nullptr);
  return r.kernels[kernel].params;
}

std::string unreadable(const std::string& src, const std::string& options = "") {
  auto r = read_signatures(src, {}, options);
  return r.ok() ? std::string("(readable)") : r.unreadable;
}

// The program cache's include scan (include_directives): the reader's lexer, so comments and
// groups no macro can make live hide a directive; a condition on a macro does not.
TEST(ReaderPreprocessor, IncludeDirectivesSkipCommentsAndDeadGroups) {
  const std::string text =
      "#include \"a.h\"\n"                    // 1
      "// #include \"c1.h\"\n"                // 2
      "/* #include \"c2.h\"\n"                // 3
      "#include \"c3.h\" */ #include <b.h>\n" // 4: after a comment, still at the line's start
      "#if 0\n#include \"d1.h\"\n"           // 5, 6
      "#if FOO\n#include \"d2.h\"\n#endif\n" // 7-9: inside a dead group
      "#elif defined(BAR)\n#include \"e.h\"\n" // 10, 11: a macro: counted
      "#else\n#include \"f.h\"\n#endif\n"     // 12-14: live unless BAR
      "#if 1\n#else\n#include \"d3.h\"\n#endif\n" // 15-18
      "#ifdef X\n#include \"g.h\"\n#endif\n"  // 19-21
      "# \\\n include HDR\n";                   // 22-23: spliced (the directive starts on 22); computed by a macro
  const auto d = encore::detail::include_directives(text);
  std::vector<std::string> names;
  for (const auto& x : d) names.push_back(x.name + (x.quoted ? " q" : "") + (x.computed ? " c" : "") + " " + std::to_string(x.line));
  EXPECT_EQ(names, (std::vector<std::string>{"a.h q 1", "b.h 4", "e.h q 11", "f.h q 13", "g.h q 20", "HDR c 22"}));
}

// -D, -U and -I have one reader (preprocessor_options): the macros the reader defines and the
// directories the program cache searches come from the same words, split the same way. A flag
// alone takes the next word, whatever it looks like, as the driver does ("-I -DX": a directory).
TEST(ReaderPreprocessor, BuildOptionsHaveOneReader) {
  std::vector<std::string> seen;
  for (const auto& o : encore::detail::preprocessor_options("-cl-fast-relaxed-math -DA=1 -D B\t-UC -Iinc -I other -I -DX -w -D"))
    seen.push_back(std::string(1, o.flag) + ":" + o.value + "(" + o.word + ")");
  EXPECT_EQ(seen, (std::vector<std::string>{"D:A=1(-DA=1)", "D:B(B)", "U:C(-UC)", "I:inc(-Iinc)", "I:other(other)", "I:-DX(-DX)", "D:(-D)"}));
  // what the reader makes of them: -D B defines B to 1, -UC undefines C, "-I -DX" defines nothing
  EXPECT_EQ(unreadable("#if B == 1 && !defined(X)\ntypedef float t;\n#endif\n__kernel void k(__global t* p) {}\n", "-D B -I -DX"), "(readable)");
  EXPECT_NE(unreadable("#if defined(X)\ntypedef float t;\n#endif\n__kernel void k(__global t* p) {}\n", "-I -DX"), "(readable)");
}

TEST(ReaderPreprocessor, IssueExamples) {
  auto p = params(kRealT);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].type_name, "real_t*");  // the driver's name: the typedef, since X is not defined
  EXPECT_EQ(p[0].pointee, DType::f32);
  p = params(kRealT, "-DX");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].type_name, "double*");
  EXPECT_EQ(p[0].pointee, DType::f64);
  p = params("#define T double\n#undef T\ntypedef float T;\n__kernel void k(__global T* x) {}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].type_name, "T*");
  EXPECT_EQ(p[0].pointee, DType::f32);
  // -U undoes a -D, in order
  EXPECT_EQ(params(kRealT, "-DX -UX")[0].pointee, DType::f32);
  EXPECT_EQ(params(kRealT, "-UX -D X")[0].pointee, DType::f64);
}

// The issue's run: a float buffer is accepted and a double one refused without X, the reverse with
// -DX, on every device (NULL checks types too).
TEST(ReaderPreprocessor, IssueExampleOnDevices) {
  std::vector<std::string> ids{"NULL"};
  for (const auto& id : encore_test::cl_device_ids()) ids.push_back(id);
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    Device dev = Device::open(id);
    const bool f64 = dev.supports(DType::f64);
    for (const std::string opts : {"", "-DX"}) {
      if (opts == "-DX" && !f64) continue;
      Program prog = dev.compile(kRealT, opts);
      Kernel k = prog.kernel("scale");
      Buffer f = dev.alloc<float>(4);
      Buffer d = f64 ? dev.alloc<double>(4) : Buffer();
      Buffer& right = opts.empty() ? f : d;
      Buffer& wrong = opts.empty() ? d : f;
      if (opts.empty()) f.copyin(std::vector<float>{1, 2, 3, 4});
      else d.copyin(std::vector<double>{1, 2, 3, 4});
      dev.launch(k, {4}, {}, right);
      if (id != "NULL") {
        if (opts.empty()) EXPECT_EQ(f.copyout<float>(), (std::vector<float>{2, 4, 6, 8}));
        else EXPECT_EQ(d.copyout<double>(), (std::vector<double>{2, 4, 6, 8}));
      }
      if (wrong) {
        EXPECT_THROW(dev.launch(k, {4}, {}, wrong), ArgumentError);
      }
    }
  }
}

TEST(ReaderPreprocessor, NestedConditionsAndExpressions) {
  const std::string src = R"CL(
#define W 3
#if W * 2 > 10 || defined(NARROW)
  typedef char e_t;
#elif (W << 2) == 12 && !defined NARROW
#  if WIDTH + 0 >= 4u
     typedef long e_t;
#  elif WIDTH
     typedef int e_t;
#  else
     typedef short e_t;
#  endif
#else
  typedef float e_t;
#endif
__kernel void k(__global e_t* x) {}
)CL";
  EXPECT_EQ(params(src)[0].pointee, DType::i16);
  EXPECT_EQ(params(src, "-DWIDTH=2")[0].pointee, DType::i32);
  EXPECT_EQ(params(src, "-D WIDTH=7")[0].pointee, DType::i64);
  EXPECT_EQ(params(src, "-DNARROW")[0].pointee, std::nullopt);  // char*: any buffer
  EXPECT_EQ(params(src, "-DNARROW")[0].type_name, "e_t*");
}

// #if arithmetic against what C says, one condition at a time.
TEST(ReaderPreprocessor, ConditionValues) {
  struct Case {
    const char* cond;
    int want;  // 1 taken, 0 not, -1 undecided
  } cases[] = {
      {"1 + 2 * 3 == 7", 1},       {"(1 + 2) * 3 == 9", 1},   {"-1 < 0", 1},           {"-1 < 0u", 0},          {"0xffffffffffffffff == -1", 1},
      {"1 ? 2 : 0", 1},            {"0 ? 1 : 0", 0},          {"0 && 1 / 0", 0},       {"1 || 1 / 0", 1},       {"1 / 0", -1},
      {"7 % 3 == 1", 1},           {"-7 / 2 == -3", 1},       {"1 << 62 > 0", 1},      {"1 << 63", -1},         {"1u << 63 > 0", 1},
      {"-8 >> 1 == -4", 1},        {"~0 == -1", 1},           {"!0", 1},               {"!5", 0},               {"'a' == 97", 1},
      {"'\\n' == 10", 1},          {"010 == 8", 1},           {"0x10 == 16", 1},       {"10UL == 10", 1},       {"5 & 3 ^ 6 | 8", 1},
      {"(2 > 1) + (1 >= 1) + (1 <= 0) == 2", 1},             {"9223372036854775807 + 1", -1},                  {"18446744073709551615", -1},
      {"UNDEFINED_THING == 0", 1}, {"defined(UNDEFINED_THING)", 0},                  {"__OPENCL_VERSION__ >= 120", -1},
      {"defined __ENDIAN_LITTLE__", -1},                     {"defined(cl_khr_fp64)", -1}, {"CL_VERSION_1_2", -1},  {"FP_FAST_FMA", -1},
      {"F(1)", -1},                 {"G(1) > 0", -1},          {"1.5 > 1", -1},         {"0b11 == 3", -1},       {"(1", -1},
      {"1 ? 2 : 3 : 4", -1},       {"1, 2", -1},              {"true", -1},            {"INT_MAX > 0", -1},     {"M_PI > 3", -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cond);
    // G is a function-like macro: its call is undecided; F is not defined, so "F(1)" is "0 (1)", a
    // syntax error the compiler reports: the reader leaves it undecided too
    const std::string src = "#define G(a) a\n#if " + std::string(c.cond) + "\ntypedef double t;\n#else\ntypedef float t;\n#endif\n__kernel void k(__global t* x) {}";
    auto r = read_signatures(src);
    if (c.want < 0) {
      EXPECT_FALSE(r.ok()) << "decided, should not be";
      EXPECT_NE(r.unreadable.find("cannot decide"), std::string::npos) << r.unreadable;
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.unreadable;
    detail::resolve_pointees(r.kernels, src, {}, "", nullptr);
    EXPECT_EQ(r.kernels[0].params[0].pointee, c.want ? DType::f64 : DType::f32);
  }
}

// A by-value struct's padding (zeroed at launch, so it cannot tell two calls apart) and arrays too
// large for any argument (their count once threw std::out_of_range out of the compile).
TEST(ReaderPreprocessor, StructPaddingAndHugeArrays) {
  using Pad = std::vector<std::pair<uint32_t, uint32_t>>;
  const std::string src =
      "typedef struct { char c; double d; short s[3]; } mixed;\n"
      "typedef struct { float3 v; int k; } with3;\n"
      "typedef struct { float a[99999999999999999999]; } huge;\n"
      "typedef struct { char c[4294967297]; } big;\n"
      "__kernel void k(mixed m, with3 w, huge h, big b, float4 f) {}";
  auto r = read_signatures(src);
  ASSERT_TRUE(r.ok()) << r.unreadable;
  ASSERT_NO_THROW(detail::resolve_pointees(r.kernels, src, {}, "", nullptr));
  const KernelSignature& k = r.kernels[0];
  EXPECT_EQ(k.params[0].value_bytes, 24u);
  EXPECT_EQ(k.params[1].value_bytes, 32u);
  EXPECT_EQ(k.params[2].value_bytes, 0u);  // cannot tell: any size is passed as given
  EXPECT_EQ(k.params[3].value_bytes, 0u);
  ASSERT_EQ(k.padding.size(), 5u);
  EXPECT_EQ(k.padding[0], (Pad{{1, 8}, {22, 24}}));
  EXPECT_EQ(k.padding[1], (Pad{{12, 16}, {20, 32}}));  // a float3's fourth lane, then the tail to 16-byte alignment
  EXPECT_TRUE(k.padding[4].empty());
}

// No clock here (CI's sanitizer builds on a loaded machine take seconds): the reader's expansion
// budget is what bounds the work, and each case below fails on its message when the budget or the
// painting is broken (volatile's threefold self-expansion would blow the budget).
TEST(ReaderPreprocessor, SelfExpandingMacrosStopAtTheBudget) {
  // painted blue: expands once, to three tokens, however often it is used
  auto p = params("#define volatile volatile volatile volatile\n"
                  "__kernel void k(__global volatile float* a, __global volatile float* b, __global volatile int* c, __global volatile uint* d) {}");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[3].type_name, "uint*");
  EXPECT_EQ(p[0].pointee, DType::f32);
  // mutual recursion stops too
  // A -> B float -> A float (A is hidden inside its own expansion): the compiler sees "A float*"
  EXPECT_NE(unreadable("#define A B float\n#define B A\n__kernel void k(__global A* a) {}").find("the type A float"), std::string::npos);
  // a chain that doubles at every step is exponential: the budget gives up, quickly
  std::string chain = "#define M0 volatile\n";
  for (int i = 1; i <= 40; ++i) chain += "#define M" + std::to_string(i) + " M" + std::to_string(i - 1) + " M" + std::to_string(i - 1) + "\n";
  const std::string why = unreadable(chain + "__kernel void k(__global M40 float* a) {}");
  EXPECT_NE(why.find("expand into more than"), std::string::npos) << why;
  // the NULL device says so at compile, without bad_alloc
  Device null = Device::open("NULL");
  EXPECT_THROW(null.compile(chain + "__kernel void k(__global M40 float* a) {}"), CompileError);
}

TEST(ReaderPreprocessor, MultiWordTypes) {
  auto p = params(
      "__kernel void k(__global long int* a, __global unsigned long int* b, __global int unsigned* c, __global short int* d,\n"
      "                __global signed char* e, __global unsigned* f, __global long unsigned* g, __global unsigned short int* h,\n"
      "                long int n, unsigned long m, short unsigned s, const signed int q) {}");
  ASSERT_EQ(p.size(), 12u);
  const char* names[] = {"long*", "ulong*", "uint*", "short*", "char*", "uint*", "ulong*", "ushort*", "long", "ulong", "ushort", "int"};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].type_name, names[i]) << i;
  EXPECT_EQ(p[0].pointee, DType::i64);
  EXPECT_EQ(p[1].pointee, DType::u64);
  EXPECT_EQ(p[2].pointee, DType::u32);
  EXPECT_EQ(p[3].pointee, DType::i16);
  EXPECT_EQ(p[8].scalar, DType::i64);  // a by-value long int is a scalar
  EXPECT_EQ(p[8].value_bytes, 8u);
  EXPECT_EQ(p[10].scalar, DType::u16);
}

TEST(ReaderPreprocessor, StructLayoutsUnderConditions) {
  const std::string src = "typedef struct {\n#ifdef BIG\n  double a[4];\n#else\n  float a;\n  int b;\n#endif\n} s_t;\n"
                          "struct tagged {\n#if BIG + 0 > 1\n  long x;\n#endif\n  char c;\n};\n"
                          "__kernel void k(s_t v, struct tagged t) {}";
  auto p = params(src);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].value_bytes, 8u);
  EXPECT_EQ(p[1].value_bytes, 1u);
  p = params(src, "-DBIG=2");
  EXPECT_EQ(p[0].value_bytes, 32u);
  EXPECT_EQ(p[1].value_bytes, 16u);
  // a member under an undecided #if: the size is unknown (0), not a guess
  p = params("typedef struct {\n#ifdef cl_khr_fp64\n double a;\n#else\n float a;\n#endif\n} s_t;\n__kernel void k(s_t v) {}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].value_bytes, 0u);
}

TEST(ReaderPreprocessor, KernelsTheWayTheCompilerSeesThem) {
  // a kernel under #if 0 is not there; one spelled through a macro is; a backslash-newline inside
  // a parameter list splices the line
  auto r = read_signatures("#define KERNEL __kernel\n#define GLOBAL __global\n"
                           "#if 0\n__kernel void k(__global double* x) {}\n#endif\n"
                           "KERNEL void k(GLOBAL float* x, __glo\\\nbal int* y, unsigned \\\n int n) {}\n"
                           "#if 0\nKERNEL void gone(int a) {}\n#else\nkernel void here(int a) {}\n#endif\n");
  ASSERT_TRUE(r.ok()) << r.unreadable;
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "k");
  ASSERT_EQ(r.kernels[0].params.size(), 3u);
  EXPECT_EQ(r.kernels[0].params[0].type_name, "float*");
  EXPECT_EQ(r.kernels[0].params[1].type_name, "int*");
  EXPECT_EQ(r.kernels[0].params[1].space, AddressSpace::global);
  EXPECT_EQ(r.kernels[0].params[2].type_name, "uint");
  EXPECT_EQ(r.kernels[1].name, "here");
  // the same on the NULL device
  Program p = Device::open("NULL").compile("#if 0\n__kernel void k(__global double* x) {}\n#else\n__kernel void k(__global float* x) {}\n#endif\n");
  EXPECT_EQ(p.kernel("k").params()[0].pointee, DType::f32);
}

// What the reader cannot decide is refused (OpenCL asks the driver, NULL says why); what an
// undecided group cannot touch stays readable.
TEST(ReaderPreprocessor, UndecidedIsRefusedNotGuessed) {
  struct Case {
    const char* src;
    const char* why;
  } cases[] = {
      {"#if __OPENCL_VERSION__ >= 200\ntypedef double r_t;\n#else\ntypedef float r_t;\n#endif\n__kernel void k(__global r_t* x) {}", "r_t"},
      {"#ifdef cl_khr_fp64\n#define R double\n#else\n#define R float\n#endif\n__kernel void k(__global R* x) {}", "macro R"},
      {"__kernel void k(__global float* x\n#if __IMAGE_SUPPORT__\n, int n\n#endif\n) {}", "#if at line 2"},
      {"#define P(t) __global t*\n__kernel void k(P(float) x) {}", "function-like macro P"},
      {"#ifndef __ENDIAN_LITTLE__\n__kernel void k(__global float* x) {}\n#endif\n", "a kernel at line 2"},
      {"#if 1\n__kernel void k(__global float* x) {}\n", "has no #endif"},
      {"#include \"nowhere.h\"\n__kernel void k(__global float* x) {}", "was not given"},
      {"#define X ## Y\n__kernel void k(__global X* x) {}", "##"},
  };
  Device null = Device::open("NULL");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    const std::string why = unreadable(c.src);
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
    if (c.why == std::string("r_t")) {  // NULL has no driver to ask: the pointee is left unchecked
      EXPECT_FALSE(null.compile(c.src).kernel("k").params()[0].pointee);
      continue;
    }
    EXPECT_THROW(null.compile(c.src), CompileError);
  }
  // on OpenCL, the driver answers
  if (encore_test::have_cl()) {
    Program p = Device::open("CL").compile(cases[0].src);
    EXPECT_EQ(p.kernel("k").params()[0].type_name, "r_t*");
  }
  // an undecided group of pragmas only: nothing depends on it, nothing to confirm
  auto r = read_signatures("#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n__kernel void k(__global float* x) {}");
  ASSERT_TRUE(r.ok()) << r.unreadable;
  EXPECT_EQ(r.kernels[0].confirm, "");
  // an undecided helper function: readable, and marked for the driver to confirm
  r = read_signatures("#if __OPENCL_VERSION__ >= 200\nfloat h(float x) { return x; }\n#endif\n__kernel void k(__global float* x) {}");
  ASSERT_TRUE(r.ok()) << r.unreadable;
  EXPECT_NE(r.kernels[0].confirm.find("was not read"), std::string::npos) << r.kernels[0].confirm;
  // a name taken as undefined: confirmed; an include guard or a default that follows at once: not
  r = read_signatures(kRealT);
  EXPECT_NE(r.kernels[0].confirm.find("takes X as undefined"), std::string::npos) << r.kernels[0].confirm;
  EXPECT_EQ(read_signatures(kRealT, {}, "-DX").kernels[0].confirm, "");
  EXPECT_EQ(read_signatures(std::string("#ifndef G_H\n#define G_H\n#ifndef TS\n#define TS 16\n#endif\n#endif\n") + kRealT, {}, "-UX").kernels[0].confirm, "");
}

// On OpenCL, a reading that rests on an assumption costs one metadata build at compile (from source
// only), and a wrong assumption is caught by it.
TEST(ReaderPreprocessor, AssumptionsAreConfirmedByTheDriver) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir cache;
  Device dev = Device::open("CL");
  const std::string tag = "/* " + encore_test::unique_token() + " */\n";
  uint64_t before = encore::testing::cl_metadata_builds.load();
  dev.compile(tag + kRealT, "-DX");
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before) << "decided by the options: no metadata build";
  dev.compile(tag + kRealT);
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before + 1) << "X taken as undefined: confirmed";
  // from the disk cache: the confirmed lists, no build at all
  Program again = dev.compile(tag + kRealT);
  EXPECT_EQ(encore::testing::cl_metadata_builds.load(), before + 1);
  EXPECT_EQ(again.kernel("scale").params()[0].pointee, DType::f32);
}

// Headers are read where they are included, with the macros defined so far; an include guard and
// a second #include of the same file are followed as the compiler follows them.
TEST(ReaderPreprocessor, HeadersInPlace) {
  encore_test::ScopedCacheDir dir;
  const std::filesystem::path d(dir.path());
  std::filesystem::create_directories(d / "sub");
  auto write = [](const std::filesystem::path& p, const std::string& text) {
    std::FILE* f = std::fopen(p.string().c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write(d / "types.h", "#ifndef TYPES_H\n#define TYPES_H\n#ifdef WIDE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
                       "#include \"sub/idx.h\"\n#endif\n");
  write(d / "sub" / "idx.h", "typedef IDX_T idx_t;\n");
  const std::string src = "// " + encore_test::unique_token() + "\n#define IDX_T long int\n#include \"types.h\"\n#include <types.h>\n"
                          "#undef IDX_T\n__kernel void hk(__global real* x, __global idx_t* i) {}\n";
  std::vector<std::string> ids{"NULL"};
  for (const auto& id : encore_test::cl_device_ids()) ids.push_back(id);
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    Device dev = Device::open(id);
    Program narrow = dev.compile(src, "-I" + dir.path());
    EXPECT_EQ(narrow.kernel("hk").params()[0].pointee, DType::f32);
    EXPECT_EQ(narrow.kernel("hk").params()[1].pointee, DType::i64);
    if (dev.supports(DType::f64)) {
      EXPECT_EQ(dev.compile(src, "-DWIDE -I " + dir.path()).kernel("hk").params()[0].pointee, DType::f64);
    }
  }
}

// ---- differential test against the driver ----

// Random programs in the shapes the issue lists: conditional typedefs and #defines, #undef,
// structs whose members depend on conditions, -D values in expressions, macros for keywords,
// self-referencing macros, multi-word types, backslash-newlines, kernels under #if 0, and
// conditions on names only the driver knows. ENCORE_TEST_READER_PROGRAMS=N runs N programs of 80
// cases (default 4).
struct Gen {
  std::mt19937 rng;
  explicit Gen(uint32_t seed) : rng(seed) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); }
  template <class T, size_t N>
  const T& of(const T (&a)[N]) {
    return a[pick(static_cast<int>(N))];
  }

  std::string atom(const std::string& s) {
    static const char* names[] = {"D1", "D2", "D3", "D4", "NOPE"};
    static const char* nums[] = {"0", "1", "2", "3", "7", "10u", "0x1f", "017", "'a'", "5L", "1ul"};
    switch (pick(6)) {
      case 0: return std::string("defined(") + of(names) + ")";
      case 1: return std::string("defined ") + of(names);
      case 2: return of(names);
      case 3: return "V" + s;
      case 4: return pick(12) == 0 ? of({"__OPENCL_VERSION__", "__ENDIAN_LITTLE__", "cl_khr_fp64", "CL_VERSION_1_2", "FP_FAST_FMA"}) : of(nums);
      default: return of(nums);
    }
  }
  std::string cond(const std::string& s, int depth = 0) {
    if (depth > 2 || pick(3) == 0) return atom(s);
    static const char* ops[] = {"+", "-", "*", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "&&", "||"};
    switch (pick(6)) {
      case 0: return "!(" + cond(s, depth + 1) + ")";
      case 1: return "(" + cond(s, depth + 1) + ") ? (" + cond(s, depth + 1) + ") : (" + cond(s, depth + 1) + ")";
      case 2: return "(" + cond(s, depth + 1) + ") / ((" + cond(s, depth + 1) + ") | 1)";
      default: {
        std::string op = of(ops);
        std::string rhs = cond(s, depth + 1);
        if (op == "<<" || op == ">>") rhs = "((" + rhs + ") & 7)";
        return "(" + cond(s, depth + 1) + ") " + op + " (" + rhs + ")";
      }
    }
  }
  std::string scalar() {
    static const char* t[] = {"float", "double", "int", "uint", "long int", "unsigned long int", "int unsigned", "short int", "signed char",
                              "unsigned", "long unsigned", "short", "ushort", "ulong", "unsigned char", "char", "long"};
    return of(t);
  }

  // One case: declarations, then one or two kernels named k<s>, k<s>b.
  std::string make(const std::string& s) {
    std::string out = "#define V" + s + " " + std::to_string(pick(4)) + "\n";
    const std::string r = "R" + s, st = "S" + s;
    switch (pick(5)) {  // the pointee type R
      case 0: out += "#ifdef D1\n#define " + r + " " + scalar() + "\n#else\ntypedef " + scalar() + " " + r + ";\n#endif\n"; break;
      case 1: out += "#define " + r + " " + scalar() + "\n#undef " + r + "\ntypedef " + scalar() + " " + r + ";\n"; break;
      case 2:
        out += "#if " + cond(s) + "\ntypedef " + scalar() + " " + r + ";\n#elif " + cond(s) + "\n#define " + r + " " + scalar() +
               "\n#else\n#  if " + cond(s) + "\n   typedef " + scalar() + " " + r + ";\n#  else\n#    define " + r + " " + scalar() + "\n#  endif\n#endif\n";
        break;
      case 3: out += "#ifndef " + r + "\n#define " + r + " " + scalar() + "\n#endif\n"; break;
      default: out += "typedef " + scalar() + " " + r + ";\n";
    }
    out += "typedef struct {\n  " + scalar() + " a;\n#if " + cond(s) + "\n  " + scalar() + " b[" + std::to_string(1 + pick(3)) + "];\n#endif\n  " + scalar() +
           " c;\n} " + st + ";\n";
    if (pick(3) == 0) out += "#define K" + s + " __kernel\n";
    else out += "#define K" + s + " kernel\n";
    if (pick(4) == 0) out += "#define volatile volatile volatile volatile\n";
    if (pick(4) == 0) out += "#if 0\n__kernel void k" + s + "(__global double* never) {}\n#endif\n";
    const std::string kw = pick(2) ? "K" + s : "__kernel";
    out += kw + " void k" + s + "(__global " + std::string(pick(2) ? "const " : "") + r + "* p,\\\n   " + st + " v, " + scalar() + " n";
    if (pick(3) == 0) out += ",\n#if " + cond(s) + "\n  __global " + scalar() + "* q\n#else\n  __global " + r + "* q\n#endif\n";
    if (pick(4) == 0) out += ", __global volatile " + scalar() + "* w";
    out += ") {}\n";
    if (pick(3) == 0) out += "#if " + cond(s) + "\n__kernel void k" + s + "b(__global " + scalar() + "* z) {}\n#endif\n";
    if (pick(8) == 0) out += "#undef volatile\n";
    return out;
  }
};

struct DriverArg {
  std::string type_name;
  cl_kernel_arg_address_qualifier space = 0;
  cl_kernel_arg_type_qualifier quals = 0;
};

// The driver's parameter lists, and the build log when the build failed.
std::map<std::string, std::vector<DriverArg>> driver_answer(const Device& dev, const std::string& src, const std::string& options, std::string& log) {
  std::map<std::string, std::vector<DriverArg>> out;
  cl_int err = CL_SUCCESS;
  const char* text = src.c_str();
  const size_t len = src.size();
  cl_device_id id = encore::opencl::device_id(dev);
  cl_program prog = clCreateProgramWithSource(encore::opencl::context(dev), 1, &text, &len, &err);
  if (err != CL_SUCCESS) return out;
  if (clBuildProgram(prog, 1, &id, (options + " -cl-kernel-arg-info").c_str(), nullptr, nullptr) != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    log.assign(n, '\0');
    clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    clReleaseProgram(prog);
    return out;
  }
  cl_uint nk = 0;
  clCreateKernelsInProgram(prog, 0, nullptr, &nk);
  std::vector<cl_kernel> ks(nk);
  clCreateKernelsInProgram(prog, nk, ks.data(), nullptr);
  auto str = [](auto get) {
    size_t n = 0;
    get(0, nullptr, &n);
    std::string s(n, '\0');
    get(n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  };
  for (cl_kernel k : ks) {
    const std::string name = str([&](size_t n, void* v, size_t* r) { clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, v, r); });
    cl_uint na = 0;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof na, &na, nullptr);
    for (cl_uint i = 0; i < na; ++i) {
      DriverArg a;
      a.type_name = str([&](size_t n, void* v, size_t* r) { clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, n, v, r); });
      clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof a.space, &a.space, nullptr);
      clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof a.quals, &a.quals, nullptr);
      out[name].push_back(a);
    }
    clReleaseKernel(k);
  }
  clReleaseProgram(prog);
  return out;
}

// A compile-time check that `type` is what the reader resolved: its size, and for scalars the very
// type (clang's __builtin_types_compatible_p). An array of size -1 fails the build.
std::string size_check(const std::string& name, const std::string& type, size_t bytes, std::optional<DType> scalar) {
  std::string c = "sizeof(" + type + ") == " + std::to_string(bytes);
  if (scalar) {
    static const std::pair<DType, const char*> names[] = {{DType::f32, "float"}, {DType::f64, "double"}, {DType::i32, "int"},   {DType::u32, "uint"},
                                                          {DType::i64, "long"},  {DType::u64, "ulong"},  {DType::i16, "short"}, {DType::u16, "ushort"},
                                                          {DType::i8, "char"},   {DType::u8, "uchar"},   {DType::f16, "half"}};
    for (auto& [d, n] : names)
      if (d == *scalar) c += " && (__builtin_types_compatible_p(" + type + ", " + n + ")" + (d == DType::i8 ? " || __builtin_types_compatible_p(" + type + ", signed char))" : ")");
  }
  return "typedef char " + name + "[(" + c + ") ? 1 : -1];\n";
}

// The differential test's size checks can fail: a wrong answer fails the build. (Its own test, so
// the build failure it provokes is the only one Oclgrind's API check may see here.)
TEST(ReaderPreprocessor, SizeCheckFailsTheBuildOnAWrongAnswer) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open("CL");
  std::string log;
  EXPECT_TRUE(driver_answer(dev, "typedef float f_t;\n" + size_check("chk", "f_t", 4, DType::i32) + "__kernel void k(__global f_t* x) {}", "", log).empty());
  EXPECT_FALSE(driver_answer(dev, "typedef float f_t;\n" + size_check("chk", "f_t", 4, DType::f32) + "__kernel void k(__global f_t* x) {}", "", log).empty()) << log;
}

TEST(ReaderPreprocessor, DifferentialAgainstTheDriver) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open("CL");
  if (!dev.supports(DType::f64)) GTEST_SKIP() << "the generated kernels use double";
  // ENCORE_TEST_READER_PROGRAMS=N: a longer run (seeds 1234 on; each program is 80 cases)
  const char* env = std::getenv("ENCORE_TEST_READER_PROGRAMS");
  const int programs = env && *env ? std::atoi(env) : 4, per_program = 80;
  int decided = 0, undecided = 0, checks = 0;
  for (int prog = 0; prog < programs; ++prog) {
    Gen g(1234u + static_cast<uint32_t>(prog));
    std::string options;
    if (g.pick(2)) options += " -DD1";
    if (g.pick(2)) options += " -DD2=" + std::to_string(g.pick(5));
    if (g.pick(2)) options += " -D D3=" + std::to_string(g.pick(3));
    options += " -DD4=" + std::to_string(g.pick(4) - 1);
    std::string src = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n", checks_src;
    std::vector<std::string> cases;
    for (int c = 0; c < per_program; ++c) {
      cases.push_back(g.make("_" + std::to_string(prog) + "_" + std::to_string(c)));
      src += cases.back();
    }
    // the reader reads each case alone (so one undecided case leaves the others readable)
    std::vector<std::vector<KernelSignature>> read(cases.size());
    for (size_t c = 0; c < cases.size(); ++c) {
      auto r = read_signatures(cases[c], {}, options);
      if (!r.ok()) {
        ++undecided;
        continue;
      }
      ++decided;
      detail::resolve_pointees(r.kernels, cases[c], {}, options, nullptr);
      for (const KernelSignature& k : r.kernels)
        for (size_t i = 0; i < k.params.size(); ++i) {
          const KernelParam& p = k.params[i];
          const std::string name = "chk_" + k.name + "_" + std::to_string(i);
          const std::string t = p.is_pointer ? p.type_name.substr(0, p.type_name.size() - 1) : p.type_name;
          if (p.is_pointer && p.pointee && p.pointee_lanes == 1) checks_src += size_check(name, t, size(*p.pointee), p.pointee), ++checks;
          if (!p.is_pointer && p.value_bytes) checks_src += size_check(name, t, p.value_bytes, p.scalar), ++checks;
        }
      read[c] = std::move(r.kernels);
    }
    std::string log;
    auto truth = driver_answer(dev, src + checks_src, options, log);
    ASSERT_FALSE(truth.empty()) << "the build failed (a size check is the reader's mistake):\n" << log.substr(0, 4000);
    for (size_t c = 0; c < cases.size(); ++c) {
      if (read[c].empty() && !truth.count("k_" + std::to_string(prog) + "_" + std::to_string(c))) continue;
      if (read[c].empty()) continue;  // undecided
      SCOPED_TRACE(cases[c] + "\noptions:" + options);
      // every kernel the driver has from this case, the reader has, and the reverse
      const std::string stem = "k_" + std::to_string(prog) + "_" + std::to_string(c);
      for (const std::string& name : {stem, stem + "b"}) {
        bool in_read = false;
        for (const KernelSignature& k : read[c]) in_read = in_read || k.name == name;
        EXPECT_EQ(in_read, truth.count(name) > 0) << name;
      }
      for (const KernelSignature& k : read[c]) {
        auto it = truth.find(k.name);
        if (it == truth.end()) continue;
        ASSERT_EQ(k.params.size(), it->second.size()) << k.name;
        for (size_t i = 0; i < k.params.size(); ++i) {
          const KernelParam& p = k.params[i];
          const DriverArg& d = it->second[i];
          EXPECT_EQ(p.type_name, d.type_name) << k.name << " parameter " << i;
          EXPECT_EQ(p.space == AddressSpace::global, d.space == CL_KERNEL_ARG_ADDRESS_GLOBAL) << k.name << " parameter " << i;
          if (p.is_pointer) {
            EXPECT_EQ(p.const_data, (d.quals & CL_KERNEL_ARG_TYPE_CONST) != 0) << k.name << " parameter " << i;
          }
        }
      }
    }
  }
  // the test means something only if most cases are decided
  EXPECT_GT(decided, undecided * 3) << decided << " decided, " << undecided << " undecided";
  EXPECT_GT(checks, 200);
  std::printf("[ differential ] %d cases decided, %d undecided, %d size checks\n", decided, undecided, checks);
}

}  // namespace
