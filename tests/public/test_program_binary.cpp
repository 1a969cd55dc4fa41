// Device::compile_binary: a program built from a saved binary without compiling where the key
// (device, driver, options, source) fits; compiled from source otherwise, never from a binary made
// for something else.
#include <gtest/gtest.h>

#include "encore/encore.hpp"
#include "test_util.hpp"

TEST(ProgramBinary, UsedOnlyWhereTheKeyFits) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir cache;
  encore::Device dev = encore::Device::open("CL:0");
  const std::string src = "__kernel void pb_twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }\n";
  std::vector<unsigned char> bin;
  std::string key;
  {
    encore::Program p = dev.compile(src, "-DUNUSED=1");
    encore::Buffer x = dev.alloc<float>(64);
    x.copyin(std::vector<float>(64, 1.5f));
    dev.launch(p.kernel("pb_twice"), {64}, {}, x);
    dev.synchronize();
    bin = p.binary();
    key = p.binary_key();
    EXPECT_EQ(key, dev.binary_key(src, "-DUNUSED=1"));
    EXPECT_NE(key, dev.binary_key(src, "-DUNUSED=2")) << "the options are part of the key";
    EXPECT_NE(key, dev.binary_key(src + "\n", "-DUNUSED=1")) << "so is the source";
  }  // let go of the program: a live one would be shared instead
  encore::Program q = dev.compile_binary(src, "-DUNUSED=1", bin, key);
  EXPECT_TRUE(q.from_binary());
  encore::Buffer x = dev.alloc<float>(64);
  x.copyin(std::vector<float>(64, 1.5f));
  dev.launch(q.kernel("pb_twice"), {64}, {}, x);
  EXPECT_EQ(x.copyout<float>(), std::vector<float>(64, 3.0f));

  encore_test::LogCapture log;
  encore::Program r = dev.compile_binary(src, "-DUNUSED=2", bin, key);  // another option set: the key differs
  EXPECT_FALSE(r.from_binary());
  EXPECT_NE(log.text().find("saved binary not used, compiling from source: it was built for"), std::string::npos) << log.text();
  encore::Program s = dev.compile_binary(src + " ", "", std::vector<unsigned char>(512, 0x11), dev.binary_key(src + " ", ""));
  EXPECT_FALSE(s.from_binary()) << "bytes the driver rejects are compiled from source";
  EXPECT_NE(log.text().find("the driver rejected it"), std::string::npos) << log.text();
}

// A program whose parameter lists the kernel reader cannot read (here a kernel under a driver's
// macro) builds from source, with a metadata build for its types: its binary, which fits the key,
// is not used, since a program built from a binary takes its parameter types from the source (read
// beside the driver's build of the binary, whose result is then dropped).
TEST(ProgramBinary, SourceTheReaderCannotReadIsCompiledFromSource) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir cache;
  encore::Device dev = encore::Device::open("CL:0");
  const std::string src = "#ifdef cl_khr_fp64\n__kernel void pb_macro(__global float* x, int n) { if (get_global_id(0) < n) x[get_global_id(0)] += 1.0f; }\n"
                          "#else\n__kernel void pb_macro(__global float* x, int n) { if (get_global_id(0) < n) x[get_global_id(0)] += 1.0f; }\n#endif\n";
  std::vector<unsigned char> bin;
  std::string key;
  {
    encore::Program p = dev.compile(src);
    bin = p.binary();
    key = p.binary_key();
  }
  ASSERT_FALSE(bin.empty());
  encore_test::LogCapture log;
  encore::Program q = dev.compile_binary(src, "", bin, key);
  EXPECT_FALSE(q.from_binary());
  EXPECT_NE(log.text().find("saved binary not used, compiling from source: "), std::string::npos) << log.text();
  EXPECT_NE(log.text().find(", and a program built from a binary takes its parameter types from the source"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find("the driver rejected it"), std::string::npos) << log.text();
  // and the program from source runs with the driver's parameter types
  const auto& params = q.kernel("pb_macro").params();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].type_name, "float*");
  encore::Buffer x = dev.alloc<float>(8);
  x.copyin(std::vector<float>(8, 1.0f));
  dev.launch(q.kernel("pb_macro"), {8}, {}, x, 6);
  EXPECT_EQ(x.copyout<float>(), (std::vector<float>{2, 2, 2, 2, 2, 2, 1, 1}));
}

TEST(ProgramBinary, NullDeviceCompilesAsUsual) {
  encore::Device dev = encore::Device::open("NULL");
  const std::string src = "__kernel void pb_null(__global float* x) {}\n";
  encore::Program p = dev.compile_binary(src, "", {}, "");
  EXPECT_FALSE(p.from_binary());
  EXPECT_EQ(p.kernel_names(), std::vector<std::string>{"pb_null"});
}
