/* The C API under a careless or hostile engine (issue 17): native callbacks calling back into
 * encore, stale jit output handles, overflowing launch sizes, enum fields holding values no
 * enumerator has, huge counts, device numbers that overflow, f32 values beyond the float range, and
 * forged handles. Each check fails (or trips ASan/UBSan) without its fix. */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource = "__kernel void add1(__global int* x) { x[get_global_id(0)] += 1; }\n";

/* ---- native callbacks calling back into encore */

struct reentry {
  encore_device dev;
  encore_kernel add1;
  encore_buffer x;
  encore_unit unit; /* the unit replaying the callback (NULL while eager or capturing) */
  encore_variable flag;
  int calls;
};

static int host_noop(void* ud, encore_host_ctx c) { (void)ud, (void)c; return 0; }
static int body_noop(void* ud) { (void)ud; return 0; }
static int cond_stop(void* ud, encore_host_ctx c, int* again) { (void)ud, (void)c; *again = 0; return 0; }

/* Every encore call that would enqueue, record or run work, or change the unit that runs it, must be
 * refused from inside the callback (ENCORE_ERROR_JIT naming the native callback). */
static int native_reenters(void* ud, struct _cl_command_queue* q, struct _cl_mem* const* m, size_t n) {
  struct reentry* r = (struct reentry*)ud;
  size_t four = 4;
  encore_arg a = encore_arg_buffer(r->x);
  encore_arg in_x = encore_arg_inout(r->x);
  int host[4] = {0};
  encore_capture cap = NULL;
  (void)q, (void)m, (void)n;
  ++r->calls;
  EXPECT_ERR(encore_launch(r->dev, r->add1, &four, NULL, 1, &a, 1), ENCORE_ERROR_JIT, "native callback");
  EXPECT_ERR(encore_copy(r->dev, r->x, r->x), ENCORE_ERROR_JIT, "native callback");
  EXPECT_ERR(encore_buffer_copyin(r->x, host, sizeof host), ENCORE_ERROR_JIT, "native callback");
  EXPECT_ERR(encore_buffer_copyout(r->x, host, sizeof host), ENCORE_ERROR_JIT, "native callback");
  EXPECT_ERR(encore_enqueue_native(r->dev, native_reenters, ud, &in_x, 1, "inner"), ENCORE_ERROR_JIT, "native callback");
  EXPECT_ERR(encore_capture_begin(NULL, &cap), ENCORE_ERROR_JIT, "native callback");
  /* a host item, branch or loop added from inside would be neither recorded nor replayed */
  EXPECT_ERR(encore_host(r->dev, &r->x, 1, NULL, 0, host_noop, NULL, "inner"), ENCORE_ERROR_JIT, "cannot add a host item");
  EXPECT_ERR(encore_when(r->dev, r->flag, body_noop, NULL, NULL, "inner"), ENCORE_ERROR_JIT, "cannot add a branch");
  EXPECT_ERR(encore_repeat(r->dev, r->flag, body_noop, NULL, "inner"), ENCORE_ERROR_JIT, "cannot add a loop");
  EXPECT_ERR(encore_loop_while(r->dev, 4, &r->x, 1, body_noop, cond_stop, NULL, "inner"), ENCORE_ERROR_JIT, "cannot add a loop");
  if (r->unit) {
    EXPECT_ERR(encore_unit_free_intermediates(r->unit), ENCORE_ERROR_JIT, "native callback");
    EXPECT_ERR(encore_unit_run(r->unit, NULL, 0, NULL), ENCORE_ERROR_JIT, "native callback");
    EXPECT_ERR(encore_unit_run_and_wait(r->unit, NULL), ENCORE_ERROR_JIT, "native callback");
    EXPECT_ERR(encore_unit_bind_input(r->unit, 0, r->x), ENCORE_ERROR_JIT, "native callback");
    /* queries stay allowed */
    {
      size_t ni = 0, nv = 0;
      EXPECT_OK(encore_unit_counts(r->unit, &ni, &nv));
    }
  }
  return 0;
}

static int test_native_reentry(encore_device dev, encore_program prog) {
  struct reentry r;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  encore_arg in_x;
  int host[4] = {0, 0, 0, 0};
  int i;
  memset(&r, 0, sizeof r);
  r.dev = dev;
  REQUIRE_OK(encore_kernel_create(prog, "add1", &r.add1));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, 4, &r.x));
  REQUIRE_OK(encore_buffer_copyin(r.x, host, sizeof host));
  REQUIRE_OK(encore_variable_create_int("flag", 0, 1, &r.flag));
  in_x = encore_arg_inout(r.x);

  /* eager */
  EXPECT_OK(encore_enqueue_native(dev, native_reenters, &r, &in_x, 1, "reenter"));
  /* captured: the callback's launch must not become an item besides the callback */
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  REQUIRE_OK(encore_capture_add_input(cap, r.x, NULL));
  EXPECT_OK(encore_enqueue_native(dev, native_reenters, &r, &in_x, 1, "reenter"));
  REQUIRE_OK(encore_capture_end(cap, &unit));
  /* replayed: the callback calls into the unit that is replaying it */
  r.unit = unit;
  for (i = 0; i < 3; ++i) EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
  EXPECT_OK(encore_unit_run_and_wait(unit, NULL));
  r.unit = NULL;
  EXPECT_TRUE(r.calls == 6);
  /* the unit is intact after the refused calls, and no launch from the callback ever ran */
  EXPECT_OK(encore_unit_free_intermediates(unit));
  EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
  EXPECT_OK(encore_buffer_copyout(r.x, host, sizeof host));
  EXPECT_TRUE(host[0] == 0 && host[3] == 0);
  {
    encore_unit_stats st;
    EXPECT_OK(encore_unit_get_stats(unit, &st));
    EXPECT_TRUE(st.items == 1); /* the native call only */
  }
  encore_unit_destroy(unit);
  encore_buffer_destroy(r.x);
  encore_kernel_destroy(r.add1);
  encore_variable_destroy(r.flag);
  return 0;
}

/* ---- jit output handles that are no longer live */

struct copy_step_data {
  encore_device dev;
  encore_buffer last_out; /* the previous call's output as the jit handed it out */
  int give_back_last;     /* hand last_out over again, without retaining it */
};

static encore_status copy_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars, size_t n_vars,
                               encore_buffer* out, size_t n_out) {
  struct copy_step_data* d = (struct copy_step_data*)ud;
  encore_buffer y = NULL;
  encore_status s;
  (void)vars, (void)n_vars, (void)n_in, (void)n_out;
  if (d->give_back_last && d->last_out) {
    out[0] = d->last_out;
    return ENCORE_OK;
  }
  if ((s = encore_buffer_alloc(d->dev, ENCORE_I32, 4, &y)) != ENCORE_OK) return s;
  if ((s = encore_copy(d->dev, y, in[0])) != ENCORE_OK) {
    encore_buffer_destroy(y);
    return s;
  }
  out[0] = y;
  return ENCORE_OK;
}

static int test_jit_outputs(encore_device dev) {
  struct copy_step_data d;
  encore_jit jit = NULL;
  encore_buffer x = NULL, y = NULL;
  encore_buffer_info info;
  encore_jit_options jo = encore_jit_options_default();
  int i;
  memset(&d, 0, sizeof d);
  d.dev = dev;
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, 4, &x));
  {
    int host[4] = {1, 2, 3, 4};
    REQUIRE_OK(encore_buffer_copyin(x, host, sizeof host));
  }
  /* the caller destroys the jit-owned output after every call: the next call must hand out a live one */
  jo.enabled = 1;
  jo.verify = 0;
  REQUIRE_OK(encore_jit_create(copy_step, &d, 1, &jo, &jit));
  for (i = 0; i < 5; ++i) {
    y = NULL;
    EXPECT_OK(encore_jit_call(jit, &x, 1, NULL, 0, &y, 1, NULL, 0, NULL));
    EXPECT_OK(encore_buffer_get_info(y, &info));
    EXPECT_OK(encore_buffer_destroy(y));
  }
  encore_jit_destroy(jit);

  /* the step hands the previous call's jit-owned output back without retaining it */
  jo.enabled = 0; /* every call runs the step */
  REQUIRE_OK(encore_jit_create(copy_step, &d, 1, &jo, &jit));
  for (i = 0; i < 3; ++i) {
    y = NULL;
    d.give_back_last = i > 0;
    EXPECT_OK(encore_jit_call(jit, &x, 1, NULL, 0, &y, 1, NULL, 0, NULL));
    EXPECT_OK(encore_buffer_get_info(y, &info));
    EXPECT_TRUE(info.count == 4);
    d.last_out = y;
  }
  encore_jit_destroy(jit);
  encore_buffer_destroy(x);
  return 0;
}

/* ---- launch sizes that overflow int64 */

static int test_size_overflow(encore_device dev, encore_kernel add1, encore_buffer x) {
  encore_variable n = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  encore_arg a;
  encore_size g;
  size_t slot = 0, ni = 0, nv = 0;
  const int64_t big = (int64_t)1 << 62;
  REQUIRE_OK(encore_variable_create_int("n", 0, INT64_MAX, &n));
  a = encore_arg_buffer(x);
  /* 4 * 2^62 + 16 wraps to 16, a plausible size: it must be an error, not a launch of 16 */
  g = encore_size_affine(n, big, 16);
  REQUIRE_OK(encore_variable_bind_int(n, 4, NULL));
  EXPECT_ERR(encore_launch_sized(dev, add1, &g, NULL, 1, &a, 1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "overflows");
  g = encore_size_affine(n, 1, INT64_MAX);
  REQUIRE_OK(encore_variable_bind_int(n, 1, NULL));
  EXPECT_ERR(encore_launch_sized(dev, add1, &g, NULL, 1, &a, 1, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "overflows");

  /* captured with n = 1 (size 4); replay under n = 4 would wrap to a small size */
  g = encore_size_affine(n, big, 4 - big);
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  REQUIRE_OK(encore_launch_sized(dev, add1, &g, NULL, 1, &a, 1, NULL));
  REQUIRE_OK(encore_capture_end(cap, &unit));
  REQUIRE_OK(encore_unit_counts(unit, &ni, &nv));
  REQUIRE_OK(encore_unit_variable_slot(unit, n, &slot));
  EXPECT_ERR(encore_unit_bind_var_int(unit, slot, 4), ENCORE_ERROR_INVALID_ARGUMENT, "overflows");
  EXPECT_ERR(encore_unit_bind_var_int(unit, slot, INT64_MAX), ENCORE_ERROR_INVALID_ARGUMENT, "overflows");
  EXPECT_OK(encore_unit_bind_var_int(unit, slot, 1)); /* still usable */
  EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
  encore_unit_destroy(unit);
  encore_variable_destroy(n);
  return 0;
}

/* ---- enum fields holding values no enumerator has (UBSan must stay silent) */

static int test_bad_enums(encore_device dev, encore_kernel add1) {
  encore_variable v = NULL;
  encore_arg a;
  size_t four = 4;
  int32_t bits;
  REQUIRE_OK(encore_variable_create_int("v", 0, 10, &v));

  {
    encore_buffer y = NULL;
    EXPECT_ERR(encore_buffer_alloc(dev, (encore_dtype)-1, 4, &y), ENCORE_ERROR_INVALID_ARGUMENT, "found -1");
    EXPECT_ERR(encore_buffer_alloc(dev, (encore_dtype)INT32_MIN, 4, &y), ENCORE_ERROR_INVALID_ARGUMENT, "found -2147483648");
  }
  EXPECT_TRUE(encore_dtype_size((encore_dtype)-1) == 0);
  EXPECT_TRUE(strcmp(encore_status_name((encore_status)-1), "ENCORE_STATUS_UNKNOWN") == 0);

  /* an uninitialised kind: every bit pattern, here -1 and a large negative one */
  memset(&a, 0xff, sizeof a);
  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, 1), ENCORE_ERROR_INVALID_ARGUMENT, "found -1");
  bits = -123456;
  memcpy(&a.kind, &bits, sizeof bits);
  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, 1), ENCORE_ERROR_INVALID_ARGUMENT, "found -123456");
  a = encore_arg_variable_as(v, (encore_dtype)-3);
  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, 1), ENCORE_ERROR_INVALID_ARGUMENT, "found -3");
  a = encore_arg_variable_as(v, (encore_dtype)99);
  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, 1), ENCORE_ERROR_INVALID_ARGUMENT, "found 99");
  {
    encore_buffer adopted = NULL;
    EXPECT_ERR(encore_buffer_adopt(dev, (struct _cl_mem*)1, (encore_dtype)-7, 4, &adopted), ENCORE_ERROR_INVALID_ARGUMENT, "found -7");
  }
  encore_variable_destroy(v);
  return 0;
}

/* ---- counts and options beyond any sane value */

static encore_status noop_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars, size_t n_vars,
                               encore_buffer* out, size_t n_out) {
  (void)ud, (void)in, (void)n_in, (void)vars, (void)n_vars, (void)out, (void)n_out;
  return ENCORE_OK;
}

static encore_status bad_status_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* vars, size_t n_vars,
                                     encore_buffer* out, size_t n_out) {
  (void)ud, (void)in, (void)n_in, (void)vars, (void)n_vars, (void)out, (void)n_out;
  return (encore_status)-1;
}

static int test_bounds(encore_device dev, encore_kernel add1, encore_buffer x) {
  encore_capture cap = NULL;
  encore_jit jit = NULL;
  encore_device nulldev = NULL;
  encore_device parts[4];
  encore_arg a;
  size_t four = 4;
  encore_unit_options uo = encore_unit_options_default();
  encore_jit_options jo = encore_jit_options_default();
  a = encore_arg_buffer(x);

  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, SIZE_MAX), ENCORE_ERROR_INVALID_ARGUMENT, "num_args");
  EXPECT_ERR(encore_launch(dev, add1, &four, NULL, 1, &a, 2), ENCORE_ERROR_INVALID_ARGUMENT, "takes 1 arguments");
  EXPECT_ERR(encore_jit_create(noop_step, NULL, SIZE_MAX, NULL, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "num_outputs");
  EXPECT_TRUE(jit == NULL);
  REQUIRE_OK(encore_device_open("NULL", &nulldev));
  EXPECT_ERR(encore_device_split(nulldev, 65536, parts), ENCORE_ERROR_INVALID_ARGUMENT, "at most 64");
  EXPECT_ERR(encore_device_split(nulldev, 65, parts), ENCORE_ERROR_INVALID_ARGUMENT, "got 65");

  uo.max_in_flight = 1u << 26;
  /* the C++ bounds (UnitOptions::validate), in the C names */
  EXPECT_ERR(encore_capture_begin(&uo, &cap), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options.max_in_flight: at most 1024");
  EXPECT_TRUE(cap == NULL);
  uo.max_in_flight = 1024; /* the bound itself is fine */
  EXPECT_OK(encore_capture_begin(&uo, &cap));
  EXPECT_OK(encore_capture_destroy(cap));
  jo.max_in_flight = 0xdeadbeefu;
  EXPECT_ERR(encore_jit_create(noop_step, NULL, 0, &jo, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "encore_jit_options.max_in_flight: at most 1024");
  EXPECT_TRUE(strstr(encore_last_error(), "::") == NULL && strstr(encore_last_error(), "unit.") == NULL);

  REQUIRE_OK(encore_jit_create(bad_status_step, NULL, 0, NULL, &jit));
  EXPECT_ERR(encore_jit_call(jit, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL), ENCORE_ERROR_UNKNOWN, "returned -1 (not an encore_status)");
  encore_jit_destroy(jit);

  encore_device_destroy(nulldev);
  return 0;
}

/* ---- device numbers that overflow, f32 values beyond the float range */

static int test_values(encore_device dev) {
  encore_device d = NULL;
  encore_variable f = NULL;
  encore_bound_var bv;
  EXPECT_ERR(encore_device_open("CL:4294967296", &d), ENCORE_ERROR_DEVICE, "out of range");
  EXPECT_TRUE(d == NULL);
  EXPECT_ERR(encore_device_open("CL:99999999999999999999", &d), ENCORE_ERROR_DEVICE, "available: NULL");
  EXPECT_ERR(encore_device_open("CL:2147483648", &d), ENCORE_ERROR_DEVICE, "out of range");

  REQUIRE_OK(encore_variable_create_f32("f", -1e300, 1e300, &f));
  EXPECT_ERR(encore_variable_bind_float(f, 1e300, &bv), ENCORE_ERROR_INVALID_ARGUMENT, "does not fit");
  EXPECT_ERR(encore_variable_bind_float(f, -1e39, &bv), ENCORE_ERROR_INVALID_ARGUMENT, "f32");
  EXPECT_OK(encore_variable_bind_float(f, 3.0e38, &bv));
  encore_variable_destroy(f);
  EXPECT_ERR(encore_variable_create_f32("g", 1e39, 1e40, &f), ENCORE_ERROR_INVALID_ARGUMENT, "f64");
  (void)dev;
  return 0;
}

/* ---- forged handles: a guessed value never works as another type's handle */

static int test_forged_handles(encore_device dev, encore_program prog, encore_kernel add1, encore_buffer buf) {
  encore_variable var = NULL;
  encore_jit jit = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  encore_event ev = NULL;
  const unsigned shift = sizeof(uintptr_t) >= 8 ? 32 : 20;
  uintptr_t gen, idx;
  encore_arg a;
  size_t four = 4;
  REQUIRE_OK(encore_variable_create_int("i", 0, 10, &var));
  REQUIRE_OK(encore_jit_create(noop_step, NULL, 0, NULL, &jit));
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  a = encore_arg_buffer(buf);
  REQUIRE_OK(encore_launch(dev, add1, &four, NULL, 1, &a, 1));
  REQUIRE_OK(encore_capture_end(cap, &unit));
  REQUIRE_OK(encore_unit_run(unit, NULL, 0, &ev));
  for (gen = 0; gen < 6; ++gen)
    for (idx = 0; idx < 600; ++idx) {
      uintptr_t h = (gen << shift) | idx;
      encore_buffer_info info;
      size_t a, b;
      uint64_t calls;
      int done;
      const char *id, *name;
      if (encore_device_info((encore_device)h, &id, &name) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)dev);
      if (encore_buffer_get_info((encore_buffer)h, &info) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)buf);
      if (encore_variable_bind_int((encore_variable)h, 0, NULL) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)var);
      if (encore_jit_calls((encore_jit)h, &calls) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)jit);
      if (encore_unit_counts((encore_unit)h, &a, &b) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)unit);
      if (encore_event_done((encore_event)h, &done) == ENCORE_OK) EXPECT_TRUE(h == (uintptr_t)ev);
    }
  /* each live handle, asked for as every other type, is INVALID_HANDLE naming both types */
  {
    size_t a, b;
    uint64_t calls;
    int done;
    encore_buffer_info info;
    EXPECT_ERR(encore_unit_counts((encore_unit)buf, &a, &b), ENCORE_ERROR_INVALID_HANDLE, "found an encore_buffer");
    EXPECT_ERR(encore_jit_calls((encore_jit)unit, &calls), ENCORE_ERROR_INVALID_HANDLE, "found an encore_unit");
    EXPECT_ERR(encore_event_done((encore_event)jit, &done), ENCORE_ERROR_INVALID_HANDLE, "found an encore_jit");
    EXPECT_ERR(encore_buffer_get_info((encore_buffer)ev, &info), ENCORE_ERROR_INVALID_HANDLE, "found an encore_event");
    EXPECT_ERR(encore_variable_bind_int((encore_variable)dev, 0, NULL), ENCORE_ERROR_INVALID_HANDLE, "found an encore_device");
    {
      encore_kernel k = NULL;
      EXPECT_ERR(encore_kernel_create((encore_program)var, "add1", &k), ENCORE_ERROR_INVALID_HANDLE, "found an encore_variable");
      EXPECT_ERR(encore_kernel_create((encore_program)unit, "add1", &k), ENCORE_ERROR_INVALID_HANDLE, "found an encore_unit");
      EXPECT_OK(encore_kernel_create(prog, "add1", &k));
      EXPECT_ERR(encore_program_destroy((encore_program)k), ENCORE_ERROR_INVALID_HANDLE, "found an encore_kernel");
      encore_kernel_destroy(k);
    }
  }
  encore_event_destroy(ev);
  encore_unit_destroy(unit);
  encore_jit_destroy(jit);
  encore_variable_destroy(var);
  return 0;
}

int main(void) {
  encore_device dev = NULL;
  encore_program prog = NULL;
  encore_kernel add1 = NULL; /* what the sub-tests launch, on x */
  encore_buffer x = NULL;
  const char *id = NULL, *name = NULL;
  REQUIRE_OK(encore_device_open(NULL, &dev));
  REQUIRE_OK(encore_device_info(dev, &id, &name));
  REQUIRE_OK(encore_program_compile(dev, kSource, NULL, &prog));
  if (strcmp(id, "NULL") != 0) {
    if (test_native_reentry(dev, prog)) return 1;
  } else {
    printf("native callbacks need an OpenCL device: skipped on %s\n", id);
  }
  if (test_jit_outputs(dev)) return 1;
  REQUIRE_OK(encore_kernel_create(prog, "add1", &add1));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, 16, &x));
  if (test_size_overflow(dev, add1, x)) return 1;
  if (test_bad_enums(dev, add1)) return 1;
  if (test_bounds(dev, add1, x)) return 1;
  if (test_values(dev)) return 1;
  if (test_forged_handles(dev, prog, add1, x)) return 1; /* x is the one live buffer */
  EXPECT_OK(encore_buffer_destroy(x));
  EXPECT_OK(encore_kernel_destroy(add1));
  encore_program_destroy(prog);
  encore_device_destroy(dev);
  return checks_report(0);
}
