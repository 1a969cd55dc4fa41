/* The launch checks seen from C: a buffer whose dtype is not the kernel parameter's pointee type, and
 * launch sizes the device cannot run, are ENCORE_ERROR_INVALID_ARGUMENT before anything is enqueued,
 * eagerly and while capturing, on OpenCL and on the NULL device. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "__kernel void widen(__global const double* a, __global long* o) { size_t i = get_global_id(0); o[i] = (long)a[i]; }\n"
    "__kernel void fset(__global float* x) { x[get_global_id(0)] = 1.5f; }\n"
    "__kernel void scratch(__global float* o, __local float* s) { s[get_local_id(0)] = 2.0f; barrier(CLK_LOCAL_MEM_FENCE);"
    " o[get_global_id(0)] = s[get_local_id(0)]; }\n";

static int run_on(const char* name, encore_device dev, encore_program prog) {
  encore_kernel widen = NULL, fset = NULL, scratch = NULL;
  encore_buffer f4 = NULL, i4 = NULL, d4 = NULL, l4 = NULL, as_d = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  size_t g4 = 4, g2 = 2;
  (void)name; /* the same checks on every device */
  REQUIRE_OK(encore_kernel_create(prog, "widen", &widen));
  REQUIRE_OK(encore_kernel_create(prog, "fset", &fset));
  REQUIRE_OK(encore_kernel_create(prog, "scratch", &scratch));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 4, &f4));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, 4, &i4));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F64, 4, &d4));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I64, 4, &l4));
  {
    encore_arg wrong_a[2] = {encore_arg_buffer(f4), encore_arg_buffer(l4)};
    encore_arg wrong_o[2] = {encore_arg_buffer(d4), encore_arg_buffer(i4)};
    encore_arg right[2] = {encore_arg_buffer(d4), encore_arg_buffer(l4)};
    encore_arg int_to_float[1] = {encore_arg_buffer(i4)};
    EXPECT_ERR(encore_launch(dev, widen, &g4, NULL, 1, wrong_a, 2), ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer of f64");
    EXPECT_ERR(encore_launch(dev, widen, &g4, NULL, 1, wrong_o, 2), ENCORE_ERROR_INVALID_ARGUMENT, "long* o");
    EXPECT_ERR(encore_launch(dev, fset, &g4, NULL, 1, int_to_float, 1), ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer of f32");
    EXPECT_OK(encore_launch(dev, widen, &g4, NULL, 1, right, 2));
    /* on purpose: 4 floats are 2 doubles */
    EXPECT_ERR(encore_buffer_as(f4, ENCORE_F64, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out");
    REQUIRE_OK(encore_buffer_as(f4, ENCORE_F64, &as_d));
    {
      encore_buffer_info info;
      encore_arg as_args[2] = {encore_arg_buffer(as_d), encore_arg_buffer(l4)};
      EXPECT_OK(encore_buffer_get_info(as_d, &info));
      EXPECT_TRUE(info.dtype == ENCORE_F64 && info.count == 2 && info.nbytes == 16);
      EXPECT_OK(encore_launch(dev, widen, &g2, NULL, 1, as_args, 2));
    }
    /* while capturing: refused at the launch, nothing recorded */
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_ERR(encore_launch(dev, fset, &g4, NULL, 1, int_to_float, 1), ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer of f32");
    EXPECT_ERR(encore_capture_end(cap, &unit), ENCORE_ERROR_JIT, NULL);
    cap = NULL;
  }
  /* __local memory over the device's: refused before the enqueue (PoCL aborted the process) */
  {
    size_t g64 = 64, l64 = 64, huge_local = 100000;
    encore_arg huge[2] = {encore_arg_buffer(f4), encore_arg_local((size_t)1 << 40)};
    encore_arg max[2] = {encore_arg_buffer(f4), encore_arg_local(SIZE_MAX)};
    encore_arg fine[2] = {encore_arg_buffer(NULL), encore_arg_local(64 * sizeof(float))};
    encore_buffer o64 = NULL;
    REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 64, &o64));
    huge[0] = encore_arg_buffer(o64);
    max[0] = encore_arg_buffer(o64);
    fine[0] = encore_arg_buffer(o64);
    EXPECT_ERR(encore_launch(dev, scratch, &g64, &l64, 1, huge, 2), ENCORE_ERROR_INVALID_ARGUMENT, "CL_DEVICE_LOCAL_MEM_SIZE");
    EXPECT_ERR(encore_launch(dev, scratch, &g64, &l64, 1, max, 2), ENCORE_ERROR_INVALID_ARGUMENT, "__local memory");
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_ERR(encore_launch(dev, scratch, &g64, &l64, 1, huge, 2), ENCORE_ERROR_INVALID_ARGUMENT, "CL_DEVICE_LOCAL_MEM_SIZE");
    EXPECT_OK(encore_capture_destroy(cap));
    cap = NULL;
    /* a local size over the device's per-dimension limit */
    huge_local = 1 << 20;
    EXPECT_ERR(encore_launch(dev, scratch, &huge_local, &huge_local, 1, fine, 2), ENCORE_ERROR_INVALID_ARGUMENT,
               "CL_DEVICE_MAX_WORK_ITEM_SIZES");
    EXPECT_OK(encore_launch(dev, scratch, &g64, &l64, 1, fine, 2));
    EXPECT_OK(encore_device_synchronize(dev));
    EXPECT_OK(encore_buffer_destroy(o64));
  }
  EXPECT_OK(encore_kernel_destroy(scratch));
  EXPECT_OK(encore_buffer_destroy(as_d));
  EXPECT_OK(encore_buffer_destroy(f4));
  EXPECT_OK(encore_buffer_destroy(i4));
  EXPECT_OK(encore_buffer_destroy(d4));
  EXPECT_OK(encore_buffer_destroy(l4));
  EXPECT_OK(encore_kernel_destroy(widen));
  EXPECT_OK(encore_kernel_destroy(fset));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
