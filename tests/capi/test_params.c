/* Issue 19 items 1 and 3 from C: encore_arg_bytes for vector and struct parameters (sizes checked,
 * eager and replay agree, the bytes are copied at the launch) and encore_kernel_work_group_info
 * (its size field, the values), on the NULL device and the default OpenCL device. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "typedef struct { float alpha; int n; } par_str;\n"
    "__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void cp_scale(__global float* y, par_str p, float4 w) {\n"
    "  int i = (int)get_global_id(0); y[i] = p.alpha * (float)i * w.y + (float)p.n; }\n";

typedef struct {
  float alpha;
  int32_t n;
} par_str;

static int run_on(const char* name, encore_device dev, encore_program prog) {
  encore_kernel k = NULL;
  encore_buffer y = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  size_t g = 16, l = 8;
  float w[4] = {0, 2, 0, 0}, w3[3] = {0, 2, 0};
  par_str p = {0.5f, 3};
  float eager[16], replay[16];
  int is_null = name && strcmp(name, "NULL") == 0;
  REQUIRE_OK(encore_kernel_create(prog, "cp_scale", &k));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 16, &y));
  {
    encore_arg args[3] = {encore_arg_buffer(y), encore_arg_bytes(&p, sizeof p), encore_arg_bytes(w, sizeof w)};
    encore_arg short_vec[3] = {encore_arg_buffer(y), encore_arg_bytes(&p, sizeof p), encore_arg_bytes(w3, sizeof w3)};
    encore_arg scalar[3] = {encore_arg_buffer(y), encore_arg_f32(1.0f), encore_arg_bytes(w, sizeof w)};
    encore_arg empty[3] = {encore_arg_buffer(y), encore_arg_bytes(&p, 0), encore_arg_bytes(w, sizeof w)};
    encore_arg null_data[3] = {encore_arg_buffer(y), encore_arg_bytes(NULL, 8), encore_arg_bytes(w, sizeof w)};
    EXPECT_ERR(encore_launch(dev, k, &g, &l, 1, short_vec, 3), ENCORE_ERROR_INVALID_ARGUMENT, "expected 16 bytes");
    EXPECT_ERR(encore_launch(dev, k, &g, &l, 1, scalar, 3), ENCORE_ERROR_INVALID_ARGUMENT, "ENCORE_ARG_BYTES");
    EXPECT_ERR(encore_launch(dev, k, &g, &l, 1, empty, 3), ENCORE_ERROR_INVALID_ARGUMENT, "value.bytes.size");
    EXPECT_ERR(encore_launch(dev, k, &g, &l, 1, null_data, 3), ENCORE_ERROR_INVALID_ARGUMENT, "value.bytes.data");
    EXPECT_OK(encore_launch(dev, k, &g, &l, 1, args, 3));
    EXPECT_OK(encore_buffer_copyout(y, eager, sizeof eager));
    if (!is_null) EXPECT_TRUE(eager[5] == 0.5f * 5 * 2 + 3);
    /* captured, then the host copies change: the unit keeps the bytes of the launch */
    memset(replay, 0, sizeof replay);
    EXPECT_OK(encore_buffer_copyin(y, replay, sizeof replay));
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_OK(encore_launch(dev, k, &g, &l, 1, args, 3));
    REQUIRE_OK(encore_capture_end(cap, &unit));
    p.alpha = 100.0f;
    w[1] = 100.0f;
    memset(replay, 0, sizeof replay);
    EXPECT_OK(encore_buffer_copyin(y, replay, sizeof replay));
    EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
    EXPECT_OK(encore_buffer_copyout(y, replay, sizeof replay));
    if (!is_null) EXPECT_TRUE(memcmp(eager, replay, sizeof eager) == 0); /* NULL runs no kernels */
    EXPECT_OK(encore_unit_destroy(unit));
  }
  {
    encore_work_group_info info;
    memset(&info, 0xff, sizeof info);
    info.size = 8;
    EXPECT_ERR(encore_kernel_work_group_info(k, &info), ENCORE_ERROR_INVALID_ARGUMENT, "out->size");
    EXPECT_ERR(encore_kernel_work_group_info(k, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out");
    info.size = sizeof info;
    EXPECT_ERR(encore_kernel_work_group_info(NULL, &info), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_OK(encore_kernel_work_group_info(k, &info));
    EXPECT_TRUE(info.size == sizeof info);
    EXPECT_TRUE(info.max_size >= 1 && info.preferred_multiple >= 1);
    EXPECT_TRUE(info.compile_size[0] == 8 && info.compile_size[1] == 1 && info.compile_size[2] == 1);
    if (is_null) EXPECT_TRUE(info.local_mem_bytes == 0 && info.private_mem_bytes == 0);
  }
  EXPECT_OK(encore_buffer_destroy(y));
  EXPECT_OK(encore_kernel_destroy(k));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
