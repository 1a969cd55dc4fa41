#include <gtest/gtest.h>

#include "encore/encore.hpp"

TEST(Smoke, OpenNull) {
  encore::Device d = encore::Device::open("NULL");
  EXPECT_TRUE(d.is_null());
}
