// Copies between devices by variant (CopyPath, src/exec/enqueue.hpp): on one queue, between two
// queues of one context (peer), between host memories (NULL devices) and through host memory
// (staged). A step that copies across and back is run eagerly and replayed on every pair reachable
// here, bit for bit; the variant each bound copy replays with is the one chosen at bind and stays
// so; a staged replay makes exactly its two transfers; errors name the buffers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "fault_device.hpp"
#include "test_util.hpp"
#include "unit/unit.hpp"

namespace {

using encore::Buffer;
using encore::Capture;
using encore::Device;
using encore::ExecutionUnit;
using encore::detail::CopyPath;

constexpr size_t kN = 256;  // the fills' views start at multiples of 128 bytes (PoCL's sub-buffer rule)

struct Outs {
  Buffer y, z;
};

// x (on s) -> t on s, partly overwritten; y on d <- t; y's tail overwritten on d; z on s <- y.
Outs step(const Device& s, const Device& d, const Buffer& x) {
  Buffer t = s.alloc<float>(kN);
  s.copy(t, x);
  s.fill(t.view(0, 32), 7.0f);
  Buffer y = d.alloc<float>(kN);
  d.copy(y, t);
  d.fill(y.view(kN - 32, 32), -1.0f);
  Buffer z = s.alloc<float>(kN);
  s.copy(z, y);
  return {y, z};
}

std::vector<float> expected(const std::vector<float>& x) {
  std::vector<float> y = x;
  for (size_t i = 0; i < 32; ++i) y[i] = 7.0f;
  for (size_t i = kN - 32; i < kN; ++i) y[i] = -1.0f;
  return y;
}

std::vector<float> values(float base) {
  std::vector<float> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = base + 0.25f * static_cast<float>(i);
  return v;
}

// The variants of the unit's bound copies, in bound order.
std::vector<CopyPath> bound_paths(const ExecutionUnit& u) {
  std::vector<CopyPath> out;
  const auto& impl = encore::detail::UnitImpl::of(u);
  if (!impl.bound) return out;
  for (const auto& x : impl.bound->items)
    if (auto p = encore::detail::bound_copy_path(x)) out.push_back(*p);
  return out;
}

std::string names(const std::vector<CopyPath>& ps) {
  std::string s;
  for (CopyPath p : ps) s += std::string(s.empty() ? "" : " ") + encore::detail::name(p);
  return s;
}

// The step eagerly and replayed over (s, d), whose cross-device copies take `want`.
void check_pair(const Device& s, const Device& d, CopyPath want) {
  SCOPED_TRACE(s.id() + " -> " + d.id());
  EXPECT_EQ(encore::detail::copy_path(*d.impl(), *s.impl()), want);
  EXPECT_EQ(encore::detail::copy_path(*s.impl(), *d.impl()), want);

  Buffer x = s.alloc<float>(kN);
  x.copyin(values(1.0f));
  Capture cap;
  cap.add_input(x);
  Outs o = step(s, d, x);
  cap.add_output(o.y);
  cap.add_output(o.z);
  ExecutionUnit u = cap.end();
  EXPECT_EQ(o.y.copyout<float>(), expected(values(1.0f))) << "eager, during the capture";
  EXPECT_EQ(o.z.copyout<float>(), expected(values(1.0f)));

  const std::vector<CopyPath> at_bind = bound_paths(u);
  ASSERT_EQ(names(at_bind), names({CopyPath::queue, want, want})) << "t <- x on one queue, then across and back";
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("replay " + std::to_string(call));
    Buffer xi = s.alloc<float>(kN);
    xi.copyin(values(10.0f * static_cast<float>(call + 2)));
    u.bind_input(0, xi);
    u();
    Outs eager = step(s, d, xi);
    const std::vector<float> ry = u.outputs()[0].copyout<float>(), rz = u.outputs()[1].copyout<float>();
    EXPECT_EQ(ry, eager.y.copyout<float>()) << "replay == eager";
    EXPECT_EQ(rz, eager.z.copyout<float>());
    EXPECT_EQ(ry, expected(values(10.0f * static_cast<float>(call + 2))));
    EXPECT_EQ(rz, ry);
    EXPECT_EQ(names(bound_paths(u)), names(at_bind)) << "the variants are the ones chosen at bind";
  }
  // staging is made at bind for host-staged copies only
  const size_t staged = static_cast<size_t>(want == CopyPath::staged) * 2;
  EXPECT_EQ(encore::detail::UnitImpl::of(u).bound->staging.size(), staged);
}

TEST(CopyVariants, OneQueue) {
  Device n = Device::open("NULL");
  check_pair(n, n, CopyPath::queue);
}

TEST(CopyVariants, HostMemoryBetweenNullDevices) {
  std::vector<Device> parts = Device::open("NULL").split(2);
  check_pair(parts[0], parts[1], CopyPath::host);
  check_pair(parts[1], Device::open("NULL"), CopyPath::host);
}

TEST(CopyVariants, StagedBetweenNullAndOpenCL) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device n = Device::open("NULL"), c = Device::open("CL");
  check_pair(n, c, CopyPath::staged);
  check_pair(c, n, CopyPath::staged);
}

TEST(CopyVariants, PeerBetweenSubDevicesOfOneContext) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  std::vector<Device> parts;
  try {
    parts = Device::open("CL").split(2);
  } catch (const encore::DeviceError& e) {
    GTEST_SKIP() << "the OpenCL device does not split: " << e.what();
  }
  check_pair(parts[0], parts[1], CopyPath::peer);
  check_pair(parts[1], parts[0], CopyPath::peer);
}

TEST(CopyVariants, PeerBetweenDevicesOfOnePlatform) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  const std::vector<encore::DeviceInfo> list = Device::list();
  if (list.size() < 2) GTEST_SKIP() << "one OpenCL device (POCL_DEVICES=\"pthread pthread\" gives two)";
  Device a = Device::open(list[0].id), b = Device::open(list[1].id);
  if (a.info().platform != b.info().platform) GTEST_SKIP() << "the first two devices are of two platforms";
  check_pair(a, b, CopyPath::peer);
}

// A device with a context of its own (an adopted queue's) and one of the platform's: staged.
TEST(CopyVariants, StagedBetweenContexts) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device c = Device::open("CL");
  std::vector<Device> parts;
  try {
    parts = c.split(2);
  } catch (const encore::DeviceError& e) {
    GTEST_SKIP() << "the OpenCL device does not split: " << e.what();
  }
  check_pair(c, parts[0], CopyPath::staged);  // the split's context is its own
}

// Fault devices have host memory inside but do not say so: staged, each transfer a counted call.
TEST(CopyVariants, StagedReplayMakesItsTwoTransfersOnly) {
  auto ctl = std::make_shared<encore_test::FaultControl>();
  Device a = encore_test::open_fault_device(ctl), b = encore_test::open_fault_device(ctl);
  check_pair(a, b, CopyPath::staged);

  Buffer x = a.alloc<float>(kN);
  x.copyin(values(3.0f));
  Capture cap;
  cap.add_input(x);
  Buffer y = b.alloc<float>(kN);
  b.copy(y, x);
  cap.add_output(y);
  ExecutionUnit u = cap.end();
  u();
  for (int i = 0; i < 3; ++i) {
    ctl->calls = 0;
    u();
    EXPECT_EQ(ctl->calls.load(), 2) << "one read on the source, one write on the destination: nothing decided per replay";
  }
  // a fault in the staged copy's write: reported, and the unit replays correctly after it
  x.copyin(values(5.0f));
  ctl->arm(1);
  try {
    u();
    ADD_FAILURE() << "the injected fault did not surface";
  } catch (const encore::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("write"), std::string::npos) << e.what();
  }
  ctl->disarm();
  u();
  EXPECT_EQ(u.outputs()[0].copyout<float>(), values(5.0f));
}

// The argument errors of a copy between devices name both buffers, on every variant.
TEST(CopyVariants, ErrorsNameTheBuffers) {
  std::vector<std::pair<Device, Device>> pairs;
  std::vector<Device> np = Device::open("NULL").split(2);
  pairs.emplace_back(np[0], np[1]);
  if (encore_test::have_cl()) pairs.emplace_back(Device::open("NULL"), Device::open("CL"));
  for (auto& [s, d] : pairs) {
    SCOPED_TRACE(s.id() + " -> " + d.id());
    Buffer x = s.alloc<float>(kN), small = d.alloc<float>(kN / 2);
    try {
      d.copy(small, x);
      ADD_FAILURE() << "sizes differ";
    } catch (const encore::ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(small.describe()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(x.describe()), std::string::npos) << e.what();
    }
    Buffer y = d.alloc<float>(kN);
    try {
      s.copy(y, x);  // the destination is on d: d.copy(y, x) it is
      ADD_FAILURE() << "destination on another device";
    } catch (const encore::ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(y.describe()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(s.id()), std::string::npos) << e.what();
    }
    // still usable after the errors
    x.copyin(values(2.0f));
    d.copy(y, x);
    EXPECT_EQ(y.copyout<float>(), values(2.0f));
  }
}

}  // namespace
