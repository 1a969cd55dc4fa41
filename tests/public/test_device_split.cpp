// device.hpp: Device::split's bounds. Every split made lives for the whole process, so the number of
// parts is bounded; a refused split makes no sub-device and leaves the device usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"

TEST(DeviceSplit, PartsAreBounded) {
  encore::Device d = encore::Device::open("NULL");
  for (unsigned parts : {0u, encore::Device::max_split_parts + 1, 1u << 20}) {
    try {
      d.split(parts);
      ADD_FAILURE() << "split(" << parts << ") was accepted";
    } catch (const encore::ArgumentError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("NULL"), std::string::npos) << m;  // names the device
      if (parts) {
        EXPECT_NE(m.find("at most 64 parts, got " + std::to_string(parts)), std::string::npos) << m;
      }
    }
  }
  std::vector<encore::Device> most = d.split(encore::Device::max_split_parts);
  ASSERT_EQ(most.size(), encore::Device::max_split_parts);
  EXPECT_EQ(most.back().id(), "NULL." + std::to_string(encore::Device::max_split_parts - 1));
  encore::Buffer b = most.back().alloc<float>(4);  // a sub-device at the bound works
  b.copyin(std::vector<float>{1, 2, 3, 4});
  EXPECT_EQ(b.copyout<float>()[2], 3.f);
}
