// Issue 18 item 8: a copyout is a host read and nothing more. Program binaries that saw a new
// launch configuration go to the disk cache at Device::synchronize, when the program is dropped,
// or at exit, never from inside Buffer::copyout.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include "encore/encore.hpp"
#include "core/program_cache.hpp"
#include "test_util.hpp"

using namespace encore;
namespace fs = std::filesystem;

namespace {

std::string entry_path(const Device& dev, const std::string& dir, const std::string& src) {
  return detail::cache_path(dir, detail::cache_key_text(dev.impl()->cache_key_prefix(), src, ""));
}

void forget_in_memory(const Device& dev, const std::string& src) {
  detail::DeviceImpl& d = *dev.impl();
  std::lock_guard<std::mutex> lock(d.programs_mu);
  std::erase_if(d.programs, [&](const auto& kv) { return kv.first.first == src; });  // (the key holds the headers' bytes too)
}

std::string fresh_source() {
  return "// " + encore_test::unique_token() + "\n__kernel void co_fill(__global int* x) { x[get_global_id(0)] = 5; }\n";
}

// A first launch configuration (the program is then dirty), read back with copyout.
void launch_and_read(const Device& dev, const Program& p) {
  Buffer x = dev.alloc<int32_t>(32);
  dev.launch(p.kernel("co_fill"), {32}, {}, x);
  EXPECT_EQ(x.copyout<int32_t>(), std::vector<int32_t>(32, 5));
}

}  // namespace

TEST(CopyoutCache, CopyoutWritesNoProgramBinary) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir dir;
  Device dev = Device::open();
  const std::string src = fresh_source();
  Program p = dev.compile(src);
  const std::string path = entry_path(dev, dir.path(), src);
  ASSERT_TRUE(fs::exists(path)) << "stored right after the build";
  fs::remove(path);
  launch_and_read(dev, p);
  EXPECT_FALSE(fs::exists(path)) << "copyout stored the program binary";
  dev.synchronize();
  EXPECT_TRUE(fs::exists(path)) << "synchronize stores the programs that saw new launch configurations";
}

TEST(CopyoutCache, ADroppedProgramIsStored) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore_test::ScopedCacheDir dir;
  Device dev = Device::open();
  const std::string src = fresh_source();
  const std::string path = entry_path(dev, dir.path(), src);
  {
    Program p = dev.compile(src);
    fs::remove(path);
    launch_and_read(dev, p);
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_TRUE(fs::exists(path)) << "the last handle's release stores a program with new launch configurations";
  forget_in_memory(dev, src);
  Program again = dev.compile(src);
  EXPECT_TRUE(again.from_disk_cache());
  launch_and_read(dev, again);
}
