// The C option structs' size field (src/capi/sized.hpp): a caller built against an older header
// passes its smaller struct and gets the defaults for the fields it lacks; a size no release had
// is an ArgumentError naming the struct and the init function.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "capi/sized.hpp"

namespace {

// Two releases of one option struct: v2 appended a field after v1's end.
struct OptV1 {
  size_t size;
  int a;
  int b;
};
struct OptV2 {
  size_t size;
  int a;
  int b;
  unsigned c;
  double d;
};
static_assert(sizeof(OptV1) <= offsetof(OptV2, c));
constexpr size_t kSizes[] = {sizeof(OptV1), sizeof(OptV2)};
constexpr OptV2 kDefaults{sizeof(OptV2), 1, 2, 3, 4.5};

std::string message(const auto& f) {
  try {
    f();
  } catch (const encore::ArgumentError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(CapiSized, AnOlderCallerGetsTheDefaultsOfTheNewFields) {
  OptV1 old{sizeof(OptV1), 10, 20};
  OptV2 got = encore::capi::read_sized(reinterpret_cast<const OptV2*>(&old), kSizes, kDefaults, "opt_t");
  EXPECT_EQ(got.size, sizeof(OptV2));
  EXPECT_EQ(got.a, 10);
  EXPECT_EQ(got.b, 20);
  EXPECT_EQ(got.c, 3u);
  EXPECT_EQ(got.d, 4.5);
  OptV2 now{sizeof(OptV2), 7, 8, 9, 1.25};
  got = encore::capi::read_sized(&now, kSizes, kDefaults, "opt_t");
  EXPECT_EQ(got.c, 9u);
  EXPECT_EQ(got.d, 1.25);
  EXPECT_EQ(encore::capi::read_sized<OptV2>(nullptr, kSizes, kDefaults, "opt_t").a, 1) << "NULL: the defaults";
}

TEST(CapiSized, InitWritesOnlyTheCallersBytes) {
  struct {
    OptV1 v1;
    unsigned char guard[32];
  } old;
  std::memset(&old, 0xee, sizeof old);
  encore::capi::write_sized(reinterpret_cast<OptV2*>(&old.v1), sizeof(OptV1), kSizes, kDefaults, "opt_t");
  EXPECT_EQ(old.v1.size, sizeof(OptV1));
  EXPECT_EQ(old.v1.a, 1);
  EXPECT_EQ(old.v1.b, 2);
  for (unsigned char g : old.guard) ASSERT_EQ(g, 0xee) << "init wrote past the caller's struct";
}

TEST(CapiSized, AnUnknownSizeIsAClearError) {
  for (size_t bad : {size_t{0}, size_t{3}, sizeof(OptV1) + 1, sizeof(OptV2) + 8, ~size_t{0}}) {
    OptV2 o = kDefaults;
    o.size = bad;
    std::string m = message([&] { encore::capi::read_sized(&o, kSizes, kDefaults, "opt_t"); });
    EXPECT_NE(m.find("opt_t.size is " + std::to_string(bad)), std::string::npos) << m;
    EXPECT_NE(m.find("expected sizeof(opt_t) = " + std::to_string(sizeof(OptV2))), std::string::npos) << m;
    EXPECT_NE(m.find("earlier release's: " + std::to_string(sizeof(OptV1))), std::string::npos) << m;
    EXPECT_NE(m.find("opt_t_init"), std::string::npos) << m;
    EXPECT_NE(message([&] { encore::capi::write_sized(&o, bad, kSizes, kDefaults, "opt_t"); }), "(no error)");
  }
}
