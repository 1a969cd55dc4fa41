#pragma once
// Queue creation by the device's OpenCL version. Header-only over <CL/cl.h> alone, so the tests,
// benches and examples that make queues of their own share it with the library.
#include <CL/cl.h>

#include <cstdlib>

namespace encore::cl {

// "OpenCL M.N ..." (CL_PLATFORM_VERSION, CL_DEVICE_VERSION) as 10 * M + N; 0 when unreadable.
inline int parse_version(const char* s) {
  const char* p = s;
  while (*p && (*p < '0' || *p > '9')) ++p;
  char* end = nullptr;
  long major = std::strtol(p, &end, 10);
  if (end == p || *end != '.') return 0;
  long minor = std::strtol(end + 1, nullptr, 10);
  return static_cast<int>(10 * major + minor);
}

// The OpenCL version whose entry points may be called for `dev`: the lower of its platform's
// (which dispatches the call) and its own.
inline int api_version(cl_device_id dev) {
  char buf[256] = {};
  cl_platform_id plat = nullptr;
  int dv = clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof buf - 1, buf, nullptr) == CL_SUCCESS ? parse_version(buf) : 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, nullptr) != CL_SUCCESS) return dv;
  char pbuf[256] = {};
  int pv = clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof pbuf - 1, pbuf, nullptr) == CL_SUCCESS ? parse_version(pbuf) : 0;
  return pv < dv ? pv : dv;
}

// An in-order queue through the entry point the device's version offers. On a 1.2 platform the
// ICD loader has no clCreateCommandQueueWithProperties to dispatch to and spins forever in it, so
// below 2.0 this calls clCreateCommandQueue (deprecated from 2.0 on, present in 1.x). Every queue
// encore, its tests and its benches make comes from here; tests/lint/check_cl_version.py fails the
// tests when a call above OpenCL 1.2 appears anywhere else.
inline cl_command_queue create_queue(cl_context ctx, cl_device_id dev, cl_command_queue_properties props, cl_int* err) {
  if (api_version(dev) >= 20) {
    const cl_queue_properties p[] = {CL_QUEUE_PROPERTIES, static_cast<cl_queue_properties>(props), 0};
    return clCreateCommandQueueWithProperties(ctx, dev, props ? p : nullptr, err);
  }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return clCreateCommandQueue(ctx, dev, props, err);
#pragma GCC diagnostic pop
}

}  // namespace encore::cl
