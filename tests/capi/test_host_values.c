/* Host values and types from C: a typed scalar (encore_arg_u64, _i32, ...) converts to the kernel
 * parameter's integer type when it fits, and is ENCORE_ERROR_INVALID_ARGUMENT naming the parameter,
 * the value and the range when it does not; an integer variable passed with encore_arg_variable
 * takes a long / ulong parameter's type, eagerly and on replay, where encore_unit_bind_var_int
 * reaches the kernel; ENCORE_BOOL and ENCORE_BF16 buffers carry their bytes; f16 support is
 * asked with encore_device_supports. On the NULL device and on the default (OpenCL) device. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "__kernel void hvc_put(__global long* o, int a, ulong b, short c) { o[0] = a; o[1] = (long)b; o[2] = c; }\n"
    "__kernel void hvc_wide(__global long* o, long v, ulong u) { o[get_global_id(0)] = v + (long)u; }\n"
    "__kernel void hvc_bf16(__global const ushort* x, __global float* o) { size_t i = get_global_id(0); o[i] = as_float((uint)x[i] << 16); }\n"
    "__kernel void hvc_flags(__global const uchar* f, __global int* o) { size_t i = get_global_id(0); o[i] = f[i] ? 3 : 4; }\n";

static int run_on(const char* name, encore_device dev, encore_program prog) {
  encore_kernel put = NULL, wide = NULL, bf = NULL, flags = NULL;
  encore_buffer o = NULL, bits = NULL, fo = NULL, fl = NULL, io = NULL;
  encore_variable v = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  const char *id = NULL, *dev_name = NULL;
  int cl, fp16 = -1;
  size_t g1 = 1, g2 = 2, slot = 99;
  int64_t got[3];
  (void)name; /* the same checks on every device */
  REQUIRE_OK(encore_device_info(dev, &id, &dev_name));
  cl = strncmp(id, "CL", 2) == 0;
  REQUIRE_OK(encore_kernel_create(prog, "hvc_put", &put));
  REQUIRE_OK(encore_kernel_create(prog, "hvc_wide", &wide));
  REQUIRE_OK(encore_kernel_create(prog, "hvc_bf16", &bf));
  REQUIRE_OK(encore_kernel_create(prog, "hvc_flags", &flags));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I64, 3, &o));

  /* typed host scalars convert when they fit */
  {
    encore_arg args[4] = {encore_arg_buffer(o), encore_arg_u64(12), encore_arg_i32(7), encore_arg_i64(-3)};
    EXPECT_OK(encore_launch(dev, put, &g1, NULL, 1, args, 4));
    if (cl) {
      EXPECT_OK(encore_buffer_copyout(o, got, sizeof got));
      EXPECT_TRUE(got[0] == 12 && got[1] == 7 && got[2] == -3);
    }
  }
  /* and name the parameter, the value and the range when they do not */
  {
    encore_arg big[4] = {encore_arg_buffer(o), encore_arg_u64((uint64_t)1 << 40), encore_arg_i32(0), encore_arg_i32(0)};
    encore_arg neg[4] = {encore_arg_buffer(o), encore_arg_i32(0), encore_arg_i32(-1), encore_arg_i32(0)};
    encore_arg wide_short[4] = {encore_arg_buffer(o), encore_arg_i32(0), encore_arg_i32(0), encore_arg_i32(70000)};
    encore_arg flt[4] = {encore_arg_buffer(o), encore_arg_f32(1.5f), encore_arg_i32(0), encore_arg_i32(0)};
    EXPECT_ERR(encore_launch(dev, put, &g1, NULL, 1, big, 4), ENCORE_ERROR_INVALID_ARGUMENT, "1099511627776");
    EXPECT_ERR(encore_launch(dev, put, &g1, NULL, 1, big, 4), ENCORE_ERROR_INVALID_ARGUMENT, "i32 holds -2147483648 to 2147483647");
    EXPECT_ERR(encore_launch(dev, put, &g1, NULL, 1, neg, 4), ENCORE_ERROR_INVALID_ARGUMENT, "ulong b");
    EXPECT_ERR(encore_launch(dev, put, &g1, NULL, 1, wide_short, 4), ENCORE_ERROR_INVALID_ARGUMENT, "i16 holds -32768 to 32767");
    EXPECT_ERR(encore_launch(dev, put, &g1, NULL, 1, flt, 4), ENCORE_ERROR_INVALID_ARGUMENT, "expected i32, got f32");
  }

  /* an int variable widens to long and ulong; the unit's bound value reaches the kernel */
  REQUIRE_OK(encore_variable_create_int("v", 0, (int64_t)1 << 50, &v));
  REQUIRE_OK(encore_variable_bind_int(v, 5, NULL));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I64, 2, &io));
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  REQUIRE_OK(encore_capture_add_input(cap, io, NULL));
  {
    encore_arg args[3] = {encore_arg_buffer(io), encore_arg_variable(v), encore_arg_variable(v)};
    encore_arg as_int[3] = {encore_arg_buffer(io), encore_arg_variable_as(v, ENCORE_I32), encore_arg_variable(v)};
    EXPECT_ERR(encore_launch(dev, wide, &g2, NULL, 1, as_int, 3), ENCORE_ERROR_INVALID_ARGUMENT, "value.variable.as = ENCORE_I32 given");
    {
      encore_arg as_bool[3] = {encore_arg_buffer(io), encore_arg_variable_as(v, ENCORE_BOOL), encore_arg_variable(v)};
      EXPECT_ERR(encore_launch(dev, wide, &g2, NULL, 1, as_bool, 3), ENCORE_ERROR_INVALID_ARGUMENT, "cannot be passed as bool");
    }
    EXPECT_OK(encore_launch(dev, wide, &g2, NULL, 1, args, 3));
  }
  REQUIRE_OK(encore_capture_end(cap, &unit));
  REQUIRE_OK(encore_unit_variable_slot(unit, v, &slot));
  {
    const int64_t vals[3] = {(int64_t)1 << 40, 3, (int64_t)1 << 49};
    int i;
    for (i = 0; i < 3; ++i) {
      EXPECT_OK(encore_unit_bind_var_int(unit, slot, vals[i]));
      EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
      if (cl) {
        EXPECT_OK(encore_buffer_copyout(io, got, 2 * sizeof(int64_t)));
        EXPECT_TRUE(got[0] == 2 * vals[i] && got[1] == 2 * vals[i]);
      }
    }
  }

  /* bool and bf16 buffers */
  EXPECT_TRUE(encore_dtype_size(ENCORE_BOOL) == 1 && encore_dtype_size(ENCORE_BF16) == 2);
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_BF16, 2, &bits));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 2, &fo));
  {
    const uint16_t h[2] = {0x3f80, 0xc0a0}; /* 1.0, -5.0 */
    float f[2] = {0, 0};
    encore_buffer_info info;
    encore_arg args[2] = {encore_arg_buffer(bits), encore_arg_buffer(fo)};
    encore_arg wrong[2] = {encore_arg_buffer(fo), encore_arg_buffer(fo)};
    EXPECT_OK(encore_buffer_get_info(bits, &info));
    EXPECT_TRUE(info.dtype == ENCORE_BF16 && info.nbytes == 4);
    EXPECT_OK(encore_buffer_copyin(bits, h, sizeof h));
    EXPECT_OK(encore_launch(dev, bf, &g2, NULL, 1, args, 2));
    EXPECT_ERR(encore_launch(dev, bf, &g2, NULL, 1, wrong, 2), ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer of u16");
    if (cl) {
      EXPECT_OK(encore_buffer_copyout(fo, f, sizeof f));
      EXPECT_TRUE(f[0] == 1.0f && f[1] == -5.0f);
    }
  }
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_BOOL, 2, &fl));
  {
    const uint8_t b[2] = {1, 0};
    int32_t r[2] = {0, 0};
    encore_buffer ri = NULL;
    REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, 2, &ri));
    {
      encore_arg args[2] = {encore_arg_buffer(fl), encore_arg_buffer(ri)};
      EXPECT_OK(encore_buffer_copyin(fl, b, sizeof b));
      EXPECT_OK(encore_launch(dev, flags, &g2, NULL, 1, args, 2));
      if (cl) {
        EXPECT_OK(encore_buffer_copyout(ri, r, sizeof r));
        EXPECT_TRUE(r[0] == 3 && r[1] == 4);
      }
    }
    EXPECT_OK(encore_buffer_destroy(ri));
  }

  /* f16 support is the device's: the NULL device has it, PoCL 3.1's CPU device does not */
  EXPECT_OK(encore_device_supports(dev, ENCORE_F16, &fp16));
  EXPECT_TRUE(fp16 == 0 || fp16 == 1);
  if (!cl) EXPECT_TRUE(fp16 == 1);
  EXPECT_OK(encore_device_supports(dev, ENCORE_BF16, &fp16));
  EXPECT_TRUE(fp16 == 1);
  EXPECT_ERR(encore_device_supports(dev, (encore_dtype)99, &fp16), ENCORE_ERROR_INVALID_ARGUMENT, "found 99");
  EXPECT_ERR(encore_device_supports(dev, ENCORE_F16, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out");

  encore_unit_destroy(unit);
  encore_variable_destroy(v);
  encore_buffer_destroy(fl);
  encore_buffer_destroy(fo);
  encore_buffer_destroy(bits);
  encore_buffer_destroy(io);
  encore_buffer_destroy(o);
  encore_kernel_destroy(flags);
  encore_kernel_destroy(bf);
  encore_kernel_destroy(wide);
  encore_kernel_destroy(put);
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
