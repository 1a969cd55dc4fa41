// Issue 19 item 3: Kernel::work_group_info answers the CL_KERNEL_* work-group queries on OpenCL and
// sensible values on NULL; a launch at its max_size runs, and the automatic local size keeps to it.
// Public headers only (encore/opencl.hpp for the driver's own answers).
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

const char* kSrc = R"CL(
__kernel __attribute__((reqd_work_group_size(16, 2, 1))) void wq_fixed(__global float* y) {
  y[get_global_id(1) * get_global_size(0) + get_global_id(0)] = 1.0f;
}
__kernel void wq_local(__global float* y) {
  __local float tile[256];
  tile[get_local_id(0) % 256] = (float)get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  y[get_global_id(0)] = tile[(get_local_id(0) + 1) % 256] + (float)get_local_size(0);
}
)CL";

class KernelQueries : public encore_test::DeviceTest {};

TEST_P(KernelQueries, WorkGroupInfo) {
  Program p = dev.compile(kSrc);
  Kernel fixed = p.kernel("wq_fixed"), local = p.kernel("wq_local");
  const WorkGroupInfo f = fixed.work_group_info(), l = local.work_group_info();
  EXPECT_EQ(f.compile_size, (std::array<size_t, 3>{16, 2, 1}));
  EXPECT_EQ(l.compile_size, (std::array<size_t, 3>{0, 0, 0}));
  EXPECT_GE(l.max_size, 1u);
  EXPECT_LE(l.max_size, dev.info().max_work_group_size);
  EXPECT_GE(l.preferred_multiple, 1u);
  EXPECT_LE(l.preferred_multiple, l.max_size);
  if (!is_cl()) {
    EXPECT_EQ(l.max_size, dev.info().max_work_group_size);
    EXPECT_EQ(l.local_mem_bytes, 0u);
    EXPECT_EQ(l.private_mem_bytes, 0u);
    return;
  }
  // the driver's own answers, asked directly
  cl_kernel k = nullptr;
  {
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(opencl::context(dev), 1, &kSrc, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    cl_device_id id = opencl::device_id(dev);
    ASSERT_EQ(clBuildProgram(prog, 1, &id, "", nullptr, nullptr), CL_SUCCESS);
    k = clCreateKernel(prog, "wq_local", &err);
    ASSERT_EQ(err, CL_SUCCESS);
    size_t wg = 0, mult = 0;
    cl_ulong lm = 0, pm = 0;
    clGetKernelWorkGroupInfo(k, id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr);
    clGetKernelWorkGroupInfo(k, id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult, nullptr);
    clGetKernelWorkGroupInfo(k, id, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, nullptr);
    clGetKernelWorkGroupInfo(k, id, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof pm, &pm, nullptr);
    EXPECT_EQ(l.max_size, wg);
    EXPECT_EQ(l.preferred_multiple, mult);
    EXPECT_EQ(l.local_mem_bytes, lm);
    EXPECT_EQ(l.private_mem_bytes, pm);
    EXPECT_GE(l.local_mem_bytes, 256 * sizeof(float)) << "the kernel's own __local array";
    clReleaseKernel(k);
    clReleaseProgram(prog);
  }
}

// What a port does with the answers: size work-groups from them, and they run.
TEST_P(KernelQueries, LaunchSizedFromTheAnswersRuns) {
  Program p = dev.compile(kSrc);
  Kernel local = p.kernel("wq_local");
  const WorkGroupInfo w = local.work_group_info();
  const size_t group = std::min<size_t>(w.max_size / w.preferred_multiple * w.preferred_multiple, 256);
  Buffer y = dev.alloc<float>(group * 4);
  dev.launch(local, {group * 4}, {group}, y);
  if (is_cl() && group > 1) {
    EXPECT_EQ(y.copyout<float>()[0], 1.0f + static_cast<float>(group));
  }
  dev.launch(local, {group * 4}, {}, y);  // encore's own choice keeps to max_size too
  Kernel fixed = p.kernel("wq_fixed");
  const WorkGroupInfo f = fixed.work_group_info();
  Buffer z = dev.alloc<float>(64 * 4);
  dev.launch(fixed, {64, 4}, {f.compile_size[0], f.compile_size[1]}, z);
  if (is_cl()) {
    EXPECT_EQ(z.copyout<float>(), std::vector<float>(64 * 4, 1.0f));
  }
  EXPECT_THROW(Kernel().work_group_info(), ArgumentError);
}

INSTANTIATE_TEST_SUITE_P(Devices, KernelQueries, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
