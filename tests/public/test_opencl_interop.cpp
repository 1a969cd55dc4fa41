// encore/opencl.hpp: adopting an engine's queue and buffers, handing native handles back.
#include <gtest/gtest.h>

#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"
#include "encore/opencl.hpp"
#include "../../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone

namespace {

// An engine's own OpenCL setup, made with the C API only.
struct Engine {
  cl_context ctx = nullptr;
  cl_device_id dev = nullptr;
  cl_command_queue q = nullptr;
  bool ok = false;
  explicit Engine(cl_command_queue_properties props = 0) {
    cl_platform_id p;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &p, &n) != CL_SUCCESS || n == 0) return;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, &n) != CL_SUCCESS || n == 0) return;
    cl_int err;
    ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    q = encore::cl::create_queue(ctx, dev, props, &err);
    ok = err == CL_SUCCESS;
  }
  ~Engine() {
    if (q) clReleaseCommandQueue(q);
    if (ctx) clReleaseContext(ctx);
  }
};

TEST(OpenCLInterop, AdoptedQueueAndBufferRunEncoreWork) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL";
  Engine e;
  ASSERT_TRUE(e.ok);
  cl_int err;
  cl_mem mem = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, 64 * sizeof(float), nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  std::vector<float> host(64);
  for (int i = 0; i < 64; ++i) host[i] = float(i);
  ASSERT_EQ(clEnqueueWriteBuffer(e.q, mem, CL_TRUE, 0, 256, host.data(), 0, nullptr, nullptr), CL_SUCCESS);
  {
    encore::Device dev = encore::opencl::adopt(e.q);
    EXPECT_EQ(encore::opencl::queue(dev), e.q);
    EXPECT_EQ(encore::opencl::context(dev), e.ctx);
    EXPECT_EQ(encore::opencl::device_id(dev), e.dev);
    encore::Buffer b = encore::opencl::adopt(dev, mem, encore::DType::f32, 64);
    EXPECT_EQ(encore::opencl::native(b), mem);
    encore::Kernel k = dev.compile("__kernel void twice_it(__global float* x) { x[get_global_id(0)] *= 2.0f; }").kernel("twice_it");
    uint64_t v0 = b.version();
    dev.launch(k, {64}, {}, b);
    EXPECT_GT(b.version(), v0);
    // the engine reads the result through its own handle and queue
    std::vector<float> out(64);
    ASSERT_EQ(clEnqueueReadBuffer(e.q, mem, CL_TRUE, 0, 256, out.data(), 0, nullptr, nullptr), CL_SUCCESS);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], 2.0f * i);
    // an engine write through its handle: touch() tells encore, and a unit whose pruned one-time
    // work reads the adopted buffer re-runs it
    encore::Kernel cp = dev.compile("__kernel void copy_it(__global const float* a, __global float* b) { b[get_global_id(0)] = a[get_global_id(0)]; }")
                            .kernel("copy_it");
    encore::Buffer table = dev.alloc<float>(64), res = dev.alloc<float>(64);
    encore::Capture cap;
    dev.launch(cp, {64}, {}, b, encore::out(table));  // one-time: reads only the adopted buffer
    dev.launch(cp, {64}, {}, table, encore::out(res));
    dev.launch(k, {64}, {}, res);                     // replayed: res = 2 * table
    encore::ExecutionUnit unit = cap.end();
    ASSERT_EQ(unit.stats().items_pruned, 1u);
    std::vector<float> fresh(64, 3.0f);
    ASSERT_EQ(clEnqueueWriteBuffer(e.q, mem, CL_TRUE, 0, 256, fresh.data(), 0, nullptr, nullptr), CL_SUCCESS);
    unit();  // the engine's write is invisible to encore until touch()
    EXPECT_EQ(res.copyout<float>()[1], 4.0f) << "table still holds 2i";
    b.touch();
    unit();
    EXPECT_EQ(res.copyout<float>(), std::vector<float>(64, 6.0f)) << "touch() must make the unit rebuild the table from the new bytes";
    // an encore-made buffer handed to raw OpenCL
    encore::Buffer own = dev.alloc<float>(64);
    own.copyin(host);
    std::vector<float> back(64);
    ASSERT_EQ(clEnqueueReadBuffer(e.q, encore::opencl::native(own), CL_TRUE, 0, 256, back.data(), 0, nullptr, nullptr), CL_SUCCESS);
    EXPECT_EQ(back, host);
  }
  // encore released only its own reference: the engine's buffer is still valid
  cl_uint refs = 0;
  ASSERT_EQ(clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, nullptr), CL_SUCCESS);
  EXPECT_EQ(refs, 1u);
  clReleaseMemObject(mem);
}

TEST(OpenCLInterop, RejectsWhatCannotWork) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL";
  EXPECT_THROW(encore::opencl::adopt(nullptr), encore::ArgumentError);
  encore::Device null = encore::Device::open("NULL");
  EXPECT_THROW(encore::opencl::queue(null), encore::DeviceError);
  Engine e;
  ASSERT_TRUE(e.ok);
  encore::Device dev = encore::opencl::adopt(e.q);
  cl_int err;
  cl_mem small = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, 16, nullptr, &err);
  EXPECT_THROW(encore::opencl::adopt(dev, small, encore::DType::f32, 8), encore::ArgumentError);  // 32 B > 16 B
  clReleaseMemObject(small);
  Engine ooo(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  if (ooo.ok) {
    EXPECT_THROW(encore::opencl::adopt(ooo.q), encore::DeviceError);
  }
}

}  // namespace
