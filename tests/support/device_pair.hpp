#pragma once
// The two devices that the two-device tests (test_property, test_multi_device) spread work over,
// chosen by ENCORE_TEST_DEVICE_SPLIT:
//   pair   the first two devices of Device::list() (POCL_DEVICES="pthread pthread" gives two PoCL
//          devices in one platform, sharing the platform's context)
//   sub    Device::open("CL").split(2): two sub-devices of one device, in a context of their own
//   unset  pair where two devices exist, else sub where the default OpenCL device splits, else none
// Public API only: both test binaries include it.
#include <cstdlib>
#include <string>
#include <vector>

#include "encore/device.hpp"
#include "encore/error.hpp"

namespace encore_test {

struct DevicePair {
  std::vector<encore::Device> devs;  // two devices, or empty
  std::string how;                   // "pair CL:0 + CL:1", "sub CL:0.0 + CL:0.1"
  std::string skip;                  // why there is no pair (the test skips)
  std::string error;                 // the env var asks for what cannot be had (the test fails)
};

// Decided once per process; the devices live as long as the process (sub-devices are never
// released during static destruction).
inline const DevicePair& device_pair() {
  static const DevicePair* pair = [] {
    auto* r = new DevicePair;
    const char* env = std::getenv("ENCORE_TEST_DEVICE_SPLIT");
    const bool asked = env && *env;
    std::string mode = asked ? env : "";
    const std::vector<encore::DeviceInfo> list = encore::Device::list();
    if (!asked) mode = list.size() >= 2 ? "pair" : "sub";
    std::string& why = asked ? r->error : r->skip;
    if (mode == "pair") {
      if (list.size() < 2) {
        why = "ENCORE_TEST_DEVICE_SPLIT=pair needs two OpenCL devices, found " + std::to_string(list.size()) +
              " (POCL_DEVICES=\"pthread pthread\" gives two)";
        return r;
      }
      r->devs = {encore::Device::open(list[0].id), encore::Device::open(list[1].id)};
    } else if (mode == "sub") {
      if (list.empty()) {
        why = "no OpenCL device to split";
        return r;
      }
      try {
        r->devs = encore::Device::open("CL").split(2);
      } catch (const encore::Error& e) {
        why = std::string("the default OpenCL device does not split in two: ") + e.what();
        return r;
      }
    } else {
      r->error = "ENCORE_TEST_DEVICE_SPLIT must be pair or sub, not \"" + mode + "\"";
      return r;
    }
    r->how = mode + " " + r->devs[0].id() + " + " + r->devs[1].id();
    return r;
  }();
  return *pair;
}

}  // namespace encore_test
