/* Every C API function called with bad arguments: NULL, garbage, destroyed and wrong-type handles,
 * NULL out-pointers, wrong sizes, out-of-range slots and values, a kernel that does not compile.
 * Each must return the right status with an informative encore_last_error(), never crash. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define GARBAGE(T) ((T)(uintptr_t)0xdead0001u)

static const char* kSource =
    "__kernel void twice(__global const float* x, __global float* y) { size_t i = get_global_id(0); y[i] = 2.0f * x[i]; }\n";

static encore_status ok_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars, size_t n_vars,
                             encore_buffer* out, size_t n_out) {
  (void)ud, (void)vars, (void)n_vars;
  if (n_in != 1 || n_out != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  return encore_buffer_retain(in[0], &out[0]);
}
static encore_status failing_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars,
                                  size_t n_vars, encore_buffer* out, size_t n_out) {
  (void)ud, (void)in, (void)n_in, (void)vars, (void)n_vars, (void)out, (void)n_out;
  return encore_buffer_copyin(NULL, NULL, 0); /* fails: ENCORE_ERROR_INVALID_HANDLE */
}
static encore_status null_output_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars,
                                      size_t n_vars, encore_buffer* out, size_t n_out) {
  (void)ud, (void)in, (void)n_in, (void)vars, (void)n_vars, (void)out, (void)n_out;
  return ENCORE_OK;
}
static encore_status reentrant_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars,
                                    size_t n_vars, encore_buffer* out, size_t n_out) {
  encore_jit self = *(encore_jit*)ud;
  (void)n_vars, (void)n_out;
  encore_status s;
  EXPECT_ERR(encore_jit_reset(self), ENCORE_ERROR_INVALID_ARGUMENT, "from inside it");
  EXPECT_ERR(encore_jit_destroy(self), ENCORE_ERROR_INVALID_ARGUMENT, "from inside it");
  (void)encore_buffer_retain(in[0], &out[0]);
  s = encore_jit_call(self, in, n_in, vars, 0, NULL, 0, NULL, 0, NULL);
  return s == ENCORE_OK ? ENCORE_ERROR_UNKNOWN : s; /* must have been refused */
}

static int native_ok(void* u, struct _cl_command_queue* q, struct _cl_mem* const* m, size_t n) {
  (void)u, (void)q, (void)m, (void)n;
  return 0;
}
static int native_fails(void* u, struct _cl_command_queue* q, struct _cl_mem* const* m, size_t n) {
  (void)u, (void)q, (void)m, (void)n;
  return 7;
}

int main(void) {
  encore_device dev = NULL, nulldev = NULL;
  encore_buffer x = NULL, y = NULL, small = NULL, dead_buf = NULL;
  encore_program prog = NULL;
  encore_kernel twice = NULL;
  encore_variable n_var = NULL, f_var = NULL, unused_var = NULL;
  encore_unit unit = NULL;
  encore_capture cap = NULL;
  encore_jit jit = NULL;
  encore_event ev = NULL;
  size_t slot = 0, n1 = 0, n2 = 0;
  float host[64] = {0};
  const char *id = NULL, *name = NULL;
  encore_buffer_info info;
  encore_unit_stats stats;
  encore_bound_var bv;
  int done = 0;
  uint64_t calls = 0;

  /* ---- status, errors, version */
  EXPECT_TRUE(strcmp(encore_status_name(ENCORE_ERROR_COMPILE), "ENCORE_ERROR_COMPILE") == 0);
  EXPECT_TRUE(strcmp(encore_status_name((encore_status)99), "ENCORE_STATUS_UNKNOWN") == 0);
  EXPECT_TRUE(encore_version() != NULL && strchr(encore_version(), '.') != NULL);
  EXPECT_TRUE(encore_dtype_size(ENCORE_F64) == 8 && encore_dtype_size(ENCORE_DTYPE_DEFAULT) == 0 &&
              encore_dtype_size((encore_dtype)99) == 0);
  EXPECT_TRUE(encore_last_error() != NULL);

  /* ---- devices */
  EXPECT_ERR(encore_device_open(NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_device_open("NO_SUCH_DEVICE", &dev), ENCORE_ERROR_DEVICE, "NO_SUCH_DEVICE");
  EXPECT_TRUE(dev == NULL);
  EXPECT_ERR(encore_device_open("CL:999", &dev), ENCORE_ERROR_DEVICE, NULL);
  REQUIRE_OK(encore_device_open("NULL", &nulldev));
  if (encore_device_open(NULL, &dev) != ENCORE_OK) {
    fprintf(stderr, "no OpenCL device (%s): the bad-argument checks run on the NULL device\n", encore_last_error());
    REQUIRE_OK(encore_device_open("NULL", &dev));
  }
  EXPECT_ERR(encore_device_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, "NULL encore_device");
  EXPECT_ERR(encore_device_destroy(GARBAGE(encore_device)), ENCORE_ERROR_INVALID_HANDLE, "never created by encore");
  EXPECT_ERR(encore_device_info(NULL, &id, &name), ENCORE_ERROR_INVALID_HANDLE, "dev");
  EXPECT_ERR(encore_device_info(dev, NULL, &name), ENCORE_ERROR_INVALID_ARGUMENT, "id is NULL");
  EXPECT_ERR(encore_device_info(dev, &id, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_OK(encore_device_info(dev, &id, &name));
  EXPECT_ERR(encore_device_synchronize(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_device_synchronize(GARBAGE(encore_device)), ENCORE_ERROR_INVALID_HANDLE, NULL);
  {
    encore_device parts[3] = {NULL, NULL, NULL};
    EXPECT_ERR(encore_device_split(NULL, 2, parts), ENCORE_ERROR_INVALID_HANDLE, "dev");
    EXPECT_ERR(encore_device_split(nulldev, 2, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_device_split(nulldev, 0, parts), ENCORE_ERROR_INVALID_ARGUMENT, "at least 1");
    EXPECT_ERR(encore_device_split(dev, 1000, parts), ENCORE_ERROR_INVALID_ARGUMENT, "at most 64 sub-devices, got 1000");
    if (strcmp(id, "NULL") != 0) {
      /* 64 parts: more than this machine's compute units (a DeviceError naming them), else made */
      encore_device many[64] = {NULL};
      encore_status st = encore_device_split(dev, 64, many);
      if (st == ENCORE_OK) {
        for (int i = 0; i < 64; ++i) EXPECT_OK(encore_device_destroy(many[i]));
      } else {
        EXPECT_ERR(encore_device_split(dev, 64, many), ENCORE_ERROR_DEVICE, "more parts than compute units");
        EXPECT_TRUE(many[0] == NULL);
      }
    }
    EXPECT_TRUE(parts[0] == NULL); /* nothing made on failure */
    REQUIRE_OK(encore_device_split(nulldev, 3, parts));
    const char *part_id = NULL, *part_name = NULL; /* valid while parts[2] lives */
    EXPECT_OK(encore_device_info(parts[2], &part_id, &part_name));
    EXPECT_TRUE(strcmp(part_id, "NULL.2") == 0);
    for (int i = 0; i < 3; ++i) EXPECT_OK(encore_device_destroy(parts[i]));
  }

  /* ---- buffers */
  EXPECT_ERR(encore_buffer_alloc(NULL, ENCORE_F32, 64, &x), ENCORE_ERROR_INVALID_HANDLE, "dev");
  EXPECT_ERR(encore_buffer_alloc(dev, (encore_dtype)42, 64, &x), ENCORE_ERROR_INVALID_ARGUMENT, "found 42");
  EXPECT_ERR(encore_buffer_alloc(dev, ENCORE_DTYPE_DEFAULT, 64, &x), ENCORE_ERROR_INVALID_ARGUMENT, "dtype");
  EXPECT_ERR(encore_buffer_alloc(dev, ENCORE_F32, 64, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 64, &x));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 64, &y));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 8, &small));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 8, &dead_buf));
  REQUIRE_OK(encore_buffer_destroy(dead_buf));
  /* wrong-type and destroyed handles, for every kind of call */
  EXPECT_ERR(encore_device_synchronize((encore_device)x), ENCORE_ERROR_INVALID_HANDLE,
             "expected an encore_device handle, found an encore_buffer");
  EXPECT_ERR(encore_buffer_touch(dead_buf), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  EXPECT_ERR(encore_buffer_destroy(dead_buf), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  {
    encore_buffer v = x;
    EXPECT_ERR(encore_buffer_view(NULL, 0, 1, &v), ENCORE_ERROR_INVALID_HANDLE, "buf");
    EXPECT_TRUE(v == NULL); /* out is cleared on failure */
  }
  EXPECT_ERR(encore_buffer_view(x, 0, 1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  {
    encore_buffer v = NULL;
    EXPECT_ERR(encore_buffer_view(x, 60, 8, &v), ENCORE_ERROR_INVALID_ARGUMENT, NULL);
    EXPECT_TRUE(v == NULL);
    EXPECT_ERR(encore_buffer_retain(NULL, &v), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_buffer_retain(x, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  }
  EXPECT_ERR(encore_buffer_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_get_info(NULL, &info), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_get_info(x, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_OK(encore_buffer_get_info(x, &info));
  EXPECT_TRUE(info.dtype == ENCORE_F32 && info.count == 64 && info.nbytes == 256 && !info.is_view);
  EXPECT_ERR(encore_buffer_copyin(NULL, host, sizeof host), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_copyin(x, host, 100), ENCORE_ERROR_INVALID_ARGUMENT, "expected 256");
  EXPECT_ERR(encore_buffer_copyin(x, host, 100), ENCORE_ERROR_INVALID_ARGUMENT, "found 100");
  EXPECT_ERR(encore_buffer_copyin(x, NULL, 256), ENCORE_ERROR_INVALID_ARGUMENT, "src is NULL");
  EXPECT_OK(encore_buffer_copyin(x, host, sizeof host));
  EXPECT_ERR(encore_buffer_copyout(NULL, host, sizeof host), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_copyout(x, host, 255), ENCORE_ERROR_INVALID_ARGUMENT, "expected 256");
  EXPECT_ERR(encore_buffer_copyout(x, NULL, 256), ENCORE_ERROR_INVALID_ARGUMENT, "dst is NULL");
  EXPECT_ERR(encore_buffer_touch(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_set_name(NULL, "x"), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_buffer_set_name(x, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_OK(encore_buffer_set_name(x, "x"));

  /* ---- programs and kernels */
  EXPECT_ERR(encore_program_compile(NULL, kSource, NULL, &prog), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_program_compile(dev, NULL, NULL, &prog), ENCORE_ERROR_INVALID_ARGUMENT, "source is NULL");
  EXPECT_ERR(encore_program_compile(dev, kSource, NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  if (strcmp(id, "NULL") != 0) {
    EXPECT_ERR(encore_program_compile(dev, "__kernel void broken(__global float* x) { x[0] = undeclared_name; }", NULL, &prog),
               ENCORE_ERROR_COMPILE, "undeclared_name");
    EXPECT_ERR(encore_program_compile(dev, "__kernel void broken(__global float* x) { x[0] = undeclared_name; }", NULL, &prog),
               ENCORE_ERROR_COMPILE, "build log");
    EXPECT_TRUE(prog == NULL);
  }
  REQUIRE_OK(encore_program_compile(dev, kSource, NULL, &prog));
  EXPECT_ERR(encore_program_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_program_destroy((encore_program)dev), ENCORE_ERROR_INVALID_HANDLE, "found an encore_device");
  EXPECT_ERR(encore_kernel_create(NULL, "twice", &twice), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_kernel_create(prog, NULL, &twice), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERR(encore_kernel_create(prog, "twice", NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_kernel_create(prog, "thrice", &twice), ENCORE_ERROR_INVALID_ARGUMENT, "twice"); /* names what exists */
  REQUIRE_OK(encore_kernel_create(prog, "twice", &twice));
  EXPECT_ERR(encore_kernel_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);

  /* ---- variables */
  EXPECT_ERR(encore_variable_create_int(NULL, 0, 10, &n_var), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERR(encore_variable_create_int("n", 0, 10, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_variable_create_int("n", 10, 0, &n_var), ENCORE_ERROR_INVALID_ARGUMENT, "min 10 > max 0");
  EXPECT_ERR(encore_variable_create_f32(NULL, 0, 1, &f_var), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERR(encore_variable_create_f32("f", 0, 1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_variable_create_f64(NULL, 0, 1, &f_var), ENCORE_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERR(encore_variable_create_f64("f", 0, 1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  REQUIRE_OK(encore_variable_create_int("n", 1, 64, &n_var));
  REQUIRE_OK(encore_variable_create_f32("f", 0.0, 1.0, &f_var));
  REQUIRE_OK(encore_variable_create_f64("unused", 0.0, 1.0, &unused_var));
  EXPECT_ERR(encore_variable_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_variable_bind_int(NULL, 1, &bv), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_variable_bind_int(n_var, 65, &bv), ENCORE_ERROR_INVALID_ARGUMENT, "outside its bounds");
  EXPECT_OK(encore_variable_bind_int(n_var, 64, NULL)); /* out is optional */
  EXPECT_ERR(encore_variable_bind_float(NULL, 0.5, &bv), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_variable_bind_float(f_var, 2.0, &bv), ENCORE_ERROR_INVALID_ARGUMENT, "\"f\"");
  EXPECT_ERR(encore_variable_bind_float(n_var, 1.5, &bv), ENCORE_ERROR_INVALID_ARGUMENT, "integer variable");

  /* ---- launches and copies */
  {
    size_t g = 64, g3[3] = {64, 1, 1};
    encore_arg args[2] = {encore_arg_buffer(x), encore_arg_buffer(y)};
    encore_arg bad_kind[2] = {encore_arg_buffer(x), encore_arg_buffer(y)};
    encore_arg null_buf[2] = {encore_arg_buffer(x), encore_arg_buffer(NULL)};
    encore_size gs = encore_size_of(64), fs = encore_size_affine(f_var, 1, 0), ns = encore_size_affine(n_var, 1, 0);
    bad_kind[1].kind = (encore_arg_kind)77;
    EXPECT_ERR(encore_launch(NULL, twice, &g, NULL, 1, args, 2), ENCORE_ERROR_INVALID_HANDLE, "dev");
    EXPECT_ERR(encore_launch(dev, NULL, &g, NULL, 1, args, 2), ENCORE_ERROR_INVALID_HANDLE, "kernel");
    EXPECT_ERR(encore_launch(dev, (encore_kernel)prog, &g, NULL, 1, args, 2), ENCORE_ERROR_INVALID_HANDLE, "found an encore_program");
    EXPECT_ERR(encore_launch(dev, twice, &g, NULL, 0, args, 2), ENCORE_ERROR_INVALID_ARGUMENT, "expected 1, 2 or 3");
    EXPECT_ERR(encore_launch(dev, twice, g3, NULL, 4, args, 2), ENCORE_ERROR_INVALID_ARGUMENT, "found 4");
    EXPECT_ERR(encore_launch(dev, twice, NULL, NULL, 1, args, 2), ENCORE_ERROR_INVALID_ARGUMENT, "global is NULL");
    EXPECT_ERR(encore_launch(dev, twice, &g, NULL, 1, NULL, 2), ENCORE_ERROR_INVALID_ARGUMENT, "args");
    EXPECT_ERR(encore_launch(dev, twice, &g, NULL, 1, bad_kind, 2), ENCORE_ERROR_INVALID_ARGUMENT, "args[1].kind");
    EXPECT_ERR(encore_launch(dev, twice, &g, NULL, 1, null_buf, 2), ENCORE_ERROR_INVALID_HANDLE, "args[1]");
    EXPECT_ERR(encore_launch(dev, twice, &g, NULL, 1, args, 1), ENCORE_ERROR_INVALID_ARGUMENT, NULL); /* too few */
    EXPECT_OK(encore_launch(dev, twice, &g, NULL, 1, args, 2));
    EXPECT_ERR(encore_launch_sized(NULL, twice, &gs, NULL, 1, args, 2, NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_launch_sized(dev, twice, NULL, NULL, 1, args, 2, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "global is NULL");
    EXPECT_ERR(encore_launch_sized(dev, twice, &fs, NULL, 1, args, 2, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "float variable");
    EXPECT_ERR(encore_launch_sized(dev, twice, &gs, NULL, 5, args, 2, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "found 5");
    EXPECT_OK(encore_launch_sized(dev, twice, &ns, NULL, 1, args, 2, "twice_n"));
  }
  EXPECT_ERR(encore_copy(NULL, y, x), ENCORE_ERROR_INVALID_HANDLE, "dev");
  EXPECT_ERR(encore_copy(dev, NULL, x), ENCORE_ERROR_INVALID_HANDLE, "dst");
  EXPECT_ERR(encore_copy(dev, y, NULL), ENCORE_ERROR_INVALID_HANDLE, "src");
  EXPECT_ERR(encore_copy(dev, y, small), ENCORE_ERROR_INVALID_ARGUMENT, NULL);
  EXPECT_OK(encore_copy(dev, y, x));

  /* ---- capture and units */
  {
    encore_unit_options o = encore_unit_options_default();
    EXPECT_TRUE(o.size == sizeof o && o.prune == 1 && o.plan == 1 && o.allow_copyout == 0 && o.max_in_flight == 3 &&
                o.min_items_in_flight == 64);
  }
  EXPECT_ERR(encore_capture_begin(NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_capture_add_input(NULL, x, &slot), ENCORE_ERROR_INVALID_HANDLE, "cap");
  EXPECT_ERR(encore_capture_add_output(NULL, y), ENCORE_ERROR_INVALID_HANDLE, "cap");
  EXPECT_ERR(encore_capture_end(NULL, &unit), ENCORE_ERROR_INVALID_HANDLE, "cap");
  EXPECT_ERR(encore_capture_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  EXPECT_ERR(encore_capture_end(cap, &unit), ENCORE_ERROR_JIT, NULL); /* nothing recorded; consumes cap */
  EXPECT_ERR(encore_capture_destroy(cap), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  EXPECT_ERR(encore_capture_end(cap, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_capture_destroy(cap), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  EXPECT_OK(encore_capture_destroy(cap)); /* abandons */
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  EXPECT_ERR(encore_capture_add_input(cap, NULL, &slot), ENCORE_ERROR_INVALID_HANDLE, "buf");
  EXPECT_ERR(encore_capture_add_output(cap, NULL), ENCORE_ERROR_INVALID_HANDLE, "buf");
  REQUIRE_OK(encore_capture_add_input(cap, x, &slot));
  EXPECT_TRUE(slot == 0);
  {
    encore_size ns = encore_size_affine(n_var, 1, 0);
    encore_arg args[2] = {encore_arg_buffer(x), encore_arg_buffer(y)};
    REQUIRE_OK(encore_variable_bind_int(n_var, 64, NULL));
    REQUIRE_OK(encore_launch_sized(dev, twice, &ns, NULL, 1, args, 2, NULL));
  }
  REQUIRE_OK(encore_capture_add_output(cap, y));
  REQUIRE_OK(encore_capture_end(cap, &unit));
  EXPECT_ERR(encore_unit_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_counts(NULL, &n1, &n2), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_counts(unit, NULL, &n2), ENCORE_ERROR_INVALID_ARGUMENT, "num_inputs is NULL");
  EXPECT_ERR(encore_unit_counts(unit, &n1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "num_variables is NULL");
  EXPECT_OK(encore_unit_counts(unit, &n1, &n2));
  EXPECT_TRUE(n1 == 1 && n2 == 1);
  EXPECT_ERR(encore_unit_variable_slot(NULL, n_var, &slot), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_variable_slot(unit, NULL, &slot), ENCORE_ERROR_INVALID_HANDLE, "var");
  EXPECT_ERR(encore_unit_variable_slot(unit, n_var, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "slot is NULL");
  EXPECT_ERR(encore_unit_variable_slot(unit, unused_var, &slot), ENCORE_ERROR_JIT, "unused");
  EXPECT_OK(encore_unit_variable_slot(unit, n_var, &slot));
  EXPECT_ERR(encore_unit_bind_input(NULL, 0, x), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_bind_input(unit, 1, x), ENCORE_ERROR_INVALID_ARGUMENT, "slot 1 is out of range");
  EXPECT_ERR(encore_unit_bind_input(unit, 0, NULL), ENCORE_ERROR_INVALID_HANDLE, "buf");
  EXPECT_ERR(encore_unit_bind_input(unit, 0, small), ENCORE_ERROR_JIT, NULL); /* 8 elements, captured 64 */
  EXPECT_ERR(encore_unit_bind_var_int(NULL, 0, 3), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_bind_var_int(unit, 7, 3), ENCORE_ERROR_INVALID_ARGUMENT, "slot 7 is out of range");
  EXPECT_ERR(encore_unit_bind_var_int(unit, 0, 65), ENCORE_ERROR_JIT, "outside its bounds [1, 64]");
  EXPECT_ERR(encore_unit_bind_var_float(NULL, 0, 0.5), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_bind_var_float(unit, 9, 0.5), ENCORE_ERROR_INVALID_ARGUMENT, "slot 9 is out of range");
  EXPECT_ERR(encore_unit_run(NULL, NULL, 0, &ev), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_run(unit, NULL, 1, &ev), ENCORE_ERROR_INVALID_ARGUMENT, "wait_list");
  {
    encore_event bad[2] = {NULL, GARBAGE(encore_event)};
    EXPECT_ERR(encore_unit_run(unit, bad, 2, &ev), ENCORE_ERROR_INVALID_HANDLE, "wait_list[0]");
    EXPECT_ERR(encore_unit_run(unit, bad + 1, 1, &ev), ENCORE_ERROR_INVALID_HANDLE, "wait_list[0]");
    EXPECT_TRUE(ev == NULL);
  }
  EXPECT_ERR(encore_unit_run_and_wait(NULL, NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_OK(encore_unit_run_and_wait(unit, NULL));
  EXPECT_ERR(encore_unit_free_intermediates(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_get_stats(NULL, &stats), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_unit_get_stats(unit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  {
    encore_unit_plan_stats ps = encore_unit_plan_stats_default();
    EXPECT_ERR(encore_unit_get_plan_stats(NULL, &ps), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_unit_get_plan_stats(unit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    ps.size = 3; /* not a size this struct ever had: refused, nothing written past it */
    ps.chains = 77;
    EXPECT_ERR(encore_unit_get_plan_stats(unit, &ps), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_plan_stats.size is 3");
    EXPECT_TRUE(ps.size == 3 && ps.chains == 77);
    ps = encore_unit_plan_stats_default();
    EXPECT_OK(encore_unit_get_plan_stats(unit, &ps));
    EXPECT_TRUE(ps.size == sizeof ps && ps.chains >= 1 && ps.longest_chain >= 1);
    /* a caller built against the first release's struct (no longest_chain): filled up to its size */
    ps = encore_unit_plan_stats_default();
    ps.size = offsetof(encore_unit_plan_stats, longest_chain);
    ps.longest_chain = 77;
    EXPECT_OK(encore_unit_get_plan_stats(unit, &ps));
    EXPECT_TRUE(ps.size == offsetof(encore_unit_plan_stats, longest_chain) && ps.chains >= 1 && ps.longest_chain == 77);
  }
  {
    encore_unit both = NULL;
    EXPECT_ERR(encore_unit_concat(NULL, unit, &both), ENCORE_ERROR_INVALID_HANDLE, "a");
    EXPECT_ERR(encore_unit_concat(unit, NULL, &both), ENCORE_ERROR_INVALID_HANDLE, "b");
    EXPECT_ERR(encore_unit_concat(unit, unit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  }

  /* ---- events */
  EXPECT_ERR(encore_event_wait(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_event_done(NULL, &done), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_event_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_ERR(encore_event_wait((encore_event)unit), ENCORE_ERROR_INVALID_HANDLE, "found an encore_unit");
  REQUIRE_OK(encore_unit_run(unit, NULL, 0, &ev));
  EXPECT_ERR(encore_event_done(ev, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "done is NULL");
  EXPECT_OK(encore_event_wait(ev));
  EXPECT_OK(encore_event_done(ev, &done));
  EXPECT_TRUE(done == 1);
  EXPECT_OK(encore_event_destroy(ev));
  EXPECT_ERR(encore_event_wait(ev), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  EXPECT_ERR(encore_event_destroy(ev), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");

  /* ---- jit */
  {
    encore_jit_options o = encore_jit_options_default(), neg = o;
    encore_buffer outs[1] = {NULL}, two[2] = {NULL, NULL};
    encore_bound_var bad_var;
    neg.verify = -1;
    EXPECT_ERR(encore_jit_create(NULL, NULL, 1, NULL, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "fn is NULL");
    EXPECT_ERR(encore_jit_create(ok_step, NULL, 1, NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_jit_create(ok_step, NULL, 1, &neg, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "verify");
    neg = o;
    neg.max_units = 0;
    EXPECT_ERR(encore_jit_create(ok_step, NULL, 1, &neg, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "max_units");
    neg.max_units = 100000;
    EXPECT_ERR(encore_jit_create(ok_step, NULL, 1, &neg, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "max_units");
    /* UINT32_MAX wrapped max_units + 1 to 0 inside TinyJit; JitOptions::validate refuses it, in C names */
    neg.max_units = UINT32_MAX;
    EXPECT_ERR(encore_jit_create(ok_step, NULL, 1, &neg, &jit), ENCORE_ERROR_INVALID_ARGUMENT,
               "encore_jit_options.max_units: expected 1 to 1024 units (one per input signature), found 4294967295");
    EXPECT_TRUE(strstr(encore_last_error(), "JitOptions") == NULL);
    neg.max_units = 1024; /* the bound itself is fine */
    REQUIRE_OK(encore_jit_create(ok_step, NULL, 1, &neg, &jit));
    EXPECT_OK(encore_jit_destroy(jit));
    EXPECT_TRUE(o.size == sizeof o && o.max_units == 8 && o.check_closure == 1 && o.min_items_in_flight == 64);
    REQUIRE_OK(encore_jit_create(ok_step, NULL, 1, NULL, &jit));
    EXPECT_ERR(encore_jit_destroy(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_jit_call(NULL, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_jit_call(jit, NULL, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "inputs");
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 1, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "vars");
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, two, 2, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "expected 1");
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 3, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "wait_list");
    EXPECT_ERR(encore_jit_call(jit, &dead_buf, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_HANDLE, "inputs[0]");
    bad_var.var = n_var, bad_var.i = 1000, bad_var.f = 0;
    EXPECT_ERR(encore_jit_call(jit, &x, 1, &bad_var, 1, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "outside its bounds");
    bad_var.var = NULL;
    EXPECT_ERR(encore_jit_call(jit, &x, 1, &bad_var, 1, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_HANDLE, "vars[0]");
    EXPECT_ERR(encore_jit_calls(NULL, &calls), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_jit_calls(jit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "calls is NULL");
    EXPECT_OK(encore_jit_calls(jit, &calls));
    EXPECT_TRUE(calls == 0);
    EXPECT_ERR(encore_jit_get_stats(NULL, &stats), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_jit_get_stats(jit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_jit_get_stats(jit, &stats), ENCORE_ERROR_JIT, "no captured unit yet");
    {
      encore_unit_plan_stats ps = encore_unit_plan_stats_default();
      EXPECT_ERR(encore_jit_get_plan_stats(NULL, &ps), ENCORE_ERROR_INVALID_HANDLE, NULL);
      EXPECT_ERR(encore_jit_get_plan_stats(jit, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
      EXPECT_ERR(encore_jit_get_plan_stats(jit, &ps), ENCORE_ERROR_JIT, "no captured unit yet");
    }
    EXPECT_OK(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL));
    EXPECT_TRUE(outs[0] != NULL && outs[0] != x);
    EXPECT_ERR(encore_jit_reset(NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_OK(encore_jit_reset(jit));
    EXPECT_OK(encore_jit_destroy(jit));
    EXPECT_ERR(encore_jit_destroy(jit), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
    EXPECT_ERR(encore_buffer_touch(outs[0]), ENCORE_ERROR_INVALID_HANDLE, "already destroyed"); /* the jit owned it */

    REQUIRE_OK(encore_jit_create(failing_step, NULL, 1, NULL, &jit));
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_HANDLE,
               "step callback returned ENCORE_ERROR_INVALID_HANDLE");
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_HANDLE,
               "encore_buffer_copyin: buf is a NULL encore_buffer");
    EXPECT_OK(encore_jit_destroy(jit));
    REQUIRE_OK(encore_jit_create(null_output_step, NULL, 1, NULL, &jit));
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT,
               "outputs[0] was left NULL");
    EXPECT_OK(encore_jit_destroy(jit));
    REQUIRE_OK(encore_jit_create(reentrant_step, &jit, 1, NULL, &jit));
    EXPECT_ERR(encore_jit_call(jit, &x, 1, NULL, 0, outs, 1, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT,
               "cannot be called from inside it");
    EXPECT_OK(encore_jit_destroy(jit));
    (void)o;
  }

  /* ---- OpenCL interop (pointers only: this test includes no OpenCL header) */
  {
    struct _cl_context* ctx = NULL;
    struct _cl_mem* mem = NULL;
    struct _cl_event* cev = NULL;
    encore_device d2 = NULL;
    encore_buffer b2 = NULL;
    EXPECT_ERR(encore_device_adopt_queue(NULL, &d2), ENCORE_ERROR_INVALID_ARGUMENT, "queue is NULL");
    EXPECT_ERR(encore_device_adopt_queue((struct _cl_command_queue*)&ctx, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_device_native(NULL, &ctx, NULL, NULL), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_device_native(dev, NULL, NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "all NULL");
    EXPECT_ERR(encore_device_native(nulldev, &ctx, NULL, NULL), ENCORE_ERROR_DEVICE, "not an OpenCL device");
    EXPECT_ERR(encore_buffer_adopt(NULL, mem, ENCORE_F32, 4, &b2), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_buffer_adopt(dev, NULL, ENCORE_F32, 4, &b2), ENCORE_ERROR_INVALID_ARGUMENT, "mem is NULL");
    EXPECT_ERR(encore_buffer_adopt(dev, (struct _cl_mem*)&ctx, ENCORE_F32, 4, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_buffer_native(NULL, &mem), ENCORE_ERROR_INVALID_HANDLE, NULL);
    EXPECT_ERR(encore_buffer_native(x, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_event_adopt(NULL, cev, &ev), ENCORE_ERROR_INVALID_HANDLE, "dev");
    EXPECT_ERR(encore_event_adopt(dev, NULL, &ev), ENCORE_ERROR_INVALID_ARGUMENT, "event is NULL");
    EXPECT_ERR(encore_event_adopt(dev, (struct _cl_event*)&ctx, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_ERR(encore_event_native(NULL, &cev), ENCORE_ERROR_INVALID_HANDLE, NULL);
    {
      encore_arg in_x = encore_arg_in(x), plain_x = encore_arg_buffer(x), num = encore_arg_i32(3);
      EXPECT_ERR(encore_enqueue_native(NULL, native_ok, NULL, &in_x, 1, "n"), ENCORE_ERROR_INVALID_HANDLE, "dev");
      EXPECT_ERR(encore_enqueue_native(dev, NULL, NULL, &in_x, 1, "n"), ENCORE_ERROR_INVALID_ARGUMENT, "fn is NULL");
      EXPECT_ERR(encore_enqueue_native(dev, native_ok, NULL, NULL, 1, "n"), ENCORE_ERROR_INVALID_ARGUMENT, "buffers is NULL");
      EXPECT_ERR(encore_enqueue_native(dev, native_ok, NULL, &plain_x, 1, "n"), ENCORE_ERROR_INVALID_ARGUMENT, "state its access");
      EXPECT_ERR(encore_enqueue_native(dev, native_ok, NULL, &num, 1, "n"), ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer");
      EXPECT_ERR(encore_enqueue_native(nulldev, native_ok, NULL, NULL, 0, "n"), ENCORE_ERROR_DEVICE, "not an OpenCL device");
      EXPECT_ERR(encore_enqueue_native(dev, native_fails, NULL, &in_x, 1, "boom"), ENCORE_ERROR_DEVICE, "boom returned 7");
      EXPECT_OK(encore_enqueue_native(dev, native_ok, NULL, &in_x, 1, NULL));
    }
    REQUIRE_OK(encore_unit_run(unit, NULL, 0, &ev));
    EXPECT_ERR(encore_event_native(ev, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_OK(encore_event_destroy(ev));
  }

  /* everything created above is destroyed exactly once (ASan's leak check sees the rest) */
  EXPECT_OK(encore_unit_free_intermediates(unit));
  EXPECT_OK(encore_unit_destroy(unit));
  EXPECT_OK(encore_variable_destroy(n_var));
  EXPECT_OK(encore_variable_destroy(f_var));
  EXPECT_OK(encore_variable_destroy(unused_var));
  EXPECT_OK(encore_kernel_destroy(twice));
  EXPECT_OK(encore_program_destroy(prog));
  EXPECT_OK(encore_buffer_destroy(x));
  EXPECT_OK(encore_buffer_destroy(y));
  EXPECT_OK(encore_buffer_destroy(small));
  EXPECT_OK(encore_device_destroy(dev));
  EXPECT_OK(encore_device_destroy(nulldev));
  EXPECT_ERR(encore_device_destroy(dev), ENCORE_ERROR_INVALID_HANDLE, "already destroyed");
  return checks_report(0);
}
