/* Messages a C caller reads name the C API (issue 26 item 6): each row triggers one error whose
 * library message gives C++ advice (buf.as(DType::f32), jit(..., v.bind(value)),
 * JitOptions::capture.check_closure, CaptureOptions::allow_copyout, std::span, Capture::end:) and
 * checks that encore_last_error() carries the C name instead and no C++ spelling. On the NULL device
 * (the checks run before any kernel would). C11. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "__kernel void scale(__global float* x, float a) { x[get_global_id(0)] *= a; }\n"
    "__kernel void vec(__global float* x, float4 v) { x[get_global_id(0)] = v.x; }\n"
    "__kernel void loc(__global float* x, __local float* t) { t[0] = x[0]; x[0] = t[0]; }\n"
    "__kernel void seti(__global int* x, int k) { x[get_global_id(0)] = k; }\n";

typedef struct {
  encore_device dev;
  encore_program prog;
  encore_kernel scale, vec, loc, seti;
  encore_buffer f, i;      /* f32[8], i32[8] */
  encore_variable n, lr;   /* an int and a float variable */
  int counter;             /* steps: a value that changes every call */
  float host[8];           /* steps: host data that changes every call */
} Ctx;

static Ctx c;

static encore_arg buf_arg(encore_buffer b) {
  encore_arg a;
  memset(&a, 0, sizeof a);
  a.kind = ENCORE_ARG_BUFFER;
  a.value.buffer = b;
  return a;
}

static encore_status launch2(encore_kernel k, encore_arg a0, encore_arg a1) {
  encore_arg args[2];
  size_t g = 8;
  args[0] = a0;
  args[1] = a1;
  return encore_launch(c.dev, k, &g, NULL, 1, args, 2);
}

/* ---- the triggers: each returns the failing call's status */

static encore_arg f32_arg(float f) {
  encore_arg a;
  memset(&a, 0, sizeof a);
  a.kind = ENCORE_ARG_F32;
  a.value.f32 = f;
  return a;
}

static encore_arg var_arg(encore_variable v, encore_dtype as) {
  encore_arg a;
  memset(&a, 0, sizeof a);
  a.kind = ENCORE_ARG_VARIABLE;
  a.value.variable.var = v;
  a.value.variable.as = as;
  return a;
}

static encore_status wrong_buffer_type(void) { return launch2(c.scale, buf_arg(c.i), f32_arg(2.f)); }
static encore_status int_variable_for_float(void) { return launch2(c.scale, buf_arg(c.f), var_arg(c.n, ENCORE_DTYPE_DEFAULT)); }
static encore_status variable_with_as(void) { return launch2(c.seti, buf_arg(c.i), var_arg(c.n, ENCORE_I64)); }
static encore_status scalar_for_vector(void) { return launch2(c.vec, buf_arg(c.f), f32_arg(0.f)); }
static encore_status buffer_for_local(void) { return launch2(c.loc, buf_arg(c.f), buf_arg(c.f)); }

static encore_status copyout_in_capture(void) {
  encore_capture cap = NULL;
  float out[8];
  encore_status s;
  if (encore_capture_begin(NULL, &cap) != ENCORE_OK) return ENCORE_OK;
  s = encore_buffer_copyout(c.f, out, sizeof out);
  encore_capture_destroy(cap);
  return s;
}

static encore_status read_async_in_capture(void) {
  encore_capture cap = NULL;
  encore_event ev = NULL;
  float out[8];
  encore_status s;
  if (encore_capture_begin(NULL, &cap) != ENCORE_OK) return ENCORE_OK;
  s = encore_buffer_read_async(c.f, 0, out, 8, &ev);
  encore_capture_destroy(cap);
  return s;
}

static encore_status empty_capture(void) {
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  if (encore_capture_begin(NULL, &cap) != ENCORE_OK) return ENCORE_OK;
  return encore_capture_end(cap, &unit);
}

static encore_status capture_in_capture(void) {
  encore_capture a = NULL, b = NULL;
  encore_status s;
  if (encore_capture_begin(NULL, &a) != ENCORE_OK) return ENCORE_OK;
  s = encore_capture_begin(NULL, &b);
  encore_capture_destroy(a);
  return s;
}

static encore_status view_too_far(void) {
  encore_buffer v = NULL;
  return encore_buffer_view(c.f, 100, 4, &v);
}

static encore_status as_uneven(void) {
  encore_buffer three = NULL, v = NULL;
  encore_status s;
  if (encore_buffer_alloc(c.dev, ENCORE_F32, 3, &three) != ENCORE_OK) return ENCORE_OK;
  s = encore_buffer_as(three, ENCORE_F64, &v);
  encore_buffer_destroy(three);
  return s;
}

static encore_status split_none(void) {
  encore_device parts[1];
  return encore_device_split(c.dev, 0, parts);
}

/* A jit whose step uses a float variable the call does not pass. */
static encore_status step_unpassed_var(void* u, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nv,
                                       encore_buffer* out, size_t nout) {
  (void)u, (void)vars, (void)nv, (void)out, (void)nout;
  if (nin != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  return launch2(c.scale, buf_arg(in[0]), var_arg(c.lr, ENCORE_DTYPE_DEFAULT));
}

/* A jit whose step passes a host value that changes every call as a kernel scalar. */
static encore_status step_changing_scalar(void* u, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nv,
                                          encore_buffer* out, size_t nout) {
  encore_arg a;
  (void)u, (void)vars, (void)nv, (void)out, (void)nout;
  if (nin != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  memset(&a, 0, sizeof a);
  a.kind = ENCORE_ARG_I32;
  a.value.i32 = c.counter++;
  return launch2(c.seti, buf_arg(in[0]), a);
}

/* A jit whose step writes host data that changes every call (not a host input). */
static encore_status step_changing_write(void* u, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nv,
                                         encore_buffer* out, size_t nout) {
  (void)u, (void)vars, (void)nv, (void)out, (void)nout;
  if (nin != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  c.host[0] = (float)c.counter++;
  return encore_buffer_write(in[0], 0, c.host, 8);
}

/* Calls 0 and 1 of a jit over `fn` with input `in`: the status of the first failing call. */
static encore_status two_calls(encore_step_fn fn, encore_buffer in) {
  encore_jit jit = NULL;
  encore_status s = ENCORE_OK;
  int k;
  if (encore_jit_create(fn, NULL, 0, NULL, &jit) != ENCORE_OK) return ENCORE_OK;
  for (k = 0; k < 2 && s == ENCORE_OK; ++k) s = encore_jit_call(jit, &in, 1, NULL, 0, NULL, 0, NULL, 0, NULL);
  encore_jit_destroy(jit); /* succeeds: the message of the failed call stays */
  return s;
}

static encore_status jit_unpassed_var(void) { return two_calls(step_unpassed_var, c.f); }
static encore_status jit_changing_scalar(void) { return two_calls(step_changing_scalar, c.i); }
static encore_status jit_changing_write(void) { return two_calls(step_changing_write, c.f); }

typedef struct {
  const char* what;
  encore_status (*trigger)(void);
  encore_status want;
  const char* c_name;  /* the message must contain this */
} Row;

static const Row kRows[] = {
    {"a buffer of another element type", wrong_buffer_type, ENCORE_ERROR_INVALID_ARGUMENT, "encore_buffer_as(buf, ENCORE_F32"},
    {"an integer variable for a float parameter", int_variable_for_float, ENCORE_ERROR_INVALID_ARGUMENT, "encore_variable_create_f32"},
    {"a variable passed with as", variable_with_as, ENCORE_ERROR_INVALID_ARGUMENT, "value.variable.as = ENCORE_I64"},
    {"a scalar for a float4", scalar_for_vector, ENCORE_ERROR_INVALID_ARGUMENT, "ENCORE_ARG_BYTES"},
    {"a buffer for __local memory", buffer_for_local, ENCORE_ERROR_INVALID_ARGUMENT, "ENCORE_ARG_LOCAL_BYTES"},
    {"a copyout inside a capture", copyout_in_capture, ENCORE_ERROR_JIT, "allow_copyout in the encore_unit_options"},
    {"an asynchronous read inside a capture", read_async_in_capture, ENCORE_ERROR_JIT, "encore_buffer_read_async: a read of"},
    {"a capture without work", empty_capture, ENCORE_ERROR_JIT, "encore_capture_end: no device work"},
    {"a capture inside a capture", capture_in_capture, ENCORE_ERROR_JIT, "another capture (encore_capture_begin"},
    {"a view past the end", view_too_far, ENCORE_ERROR_INVALID_ARGUMENT, "encore_buffer_view: element offset"},
    {"a reinterpretation that does not divide", as_uneven, ENCORE_ERROR_INVALID_ARGUMENT, "encore_buffer_as: f32[3]"},
    {"a split into no parts", split_none, ENCORE_ERROR_INVALID_ARGUMENT, "encore_device_split: parts must be at least 1"},
    {"a variable the jit call did not pass", jit_unpassed_var, ENCORE_ERROR_JIT, "in the vars of encore_jit_call (encore_variable_bind_int"},
    {"a kernel scalar that changes between calls 0 and 1", jit_changing_scalar, ENCORE_ERROR_JIT,
     "check_closure = 0 in its encore_jit_options"},
    {"host bytes that change between calls 0 and 1", jit_changing_write, ENCORE_ERROR_JIT, "encore_jit_call_hosts"},
};

/* Spellings only C++ has. */
static const char* kCxx[] = {"::", ".bind(", "std::span", "std::", "DType", ".as(", "Capture::end", "JitOptions", "CaptureOptions"};

int main(void) {
  size_t r, k;
  memset(&c, 0, sizeof c);
  REQUIRE_OK(encore_device_open("NULL", &c.dev));
  REQUIRE_OK(encore_program_compile(c.dev, kSource, NULL, &c.prog));
  REQUIRE_OK(encore_kernel_create(c.prog, "scale", &c.scale));
  REQUIRE_OK(encore_kernel_create(c.prog, "vec", &c.vec));
  REQUIRE_OK(encore_kernel_create(c.prog, "loc", &c.loc));
  REQUIRE_OK(encore_kernel_create(c.prog, "seti", &c.seti));
  REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_F32, 8, &c.f));
  REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_I32, 8, &c.i));
  REQUIRE_OK(encore_variable_create_int("n", 0, 100, &c.n));
  REQUIRE_OK(encore_variable_create_f32("lr", 0.0, 1.0, &c.lr));
  for (r = 0; r < sizeof kRows / sizeof kRows[0]; ++r) {
    const Row* row = &kRows[r];
    encore_status got = row->trigger();
    const char* msg = encore_last_error();
    int ok = got == row->want && strstr(msg, row->c_name) != NULL;
    for (k = 0; k < sizeof kCxx / sizeof kCxx[0]; ++k)
      if (strstr(msg, kCxx[k])) ok = 0;
    if (ok) {
      ++checks_passed;
      continue;
    }
    ++checks_failed;
    fprintf(stderr, "FAILED %s: expected %s naming \"%s\" and no C++ spelling, got %s\n  last error: %s\n", row->what,
            encore_status_name(row->want), row->c_name, encore_status_name(got), msg);
  }
  EXPECT_OK(encore_variable_destroy(c.lr));
  EXPECT_OK(encore_variable_destroy(c.n));
  EXPECT_OK(encore_buffer_destroy(c.i));
  EXPECT_OK(encore_buffer_destroy(c.f));
  EXPECT_OK(encore_kernel_destroy(c.seti));
  EXPECT_OK(encore_kernel_destroy(c.loc));
  EXPECT_OK(encore_kernel_destroy(c.vec));
  EXPECT_OK(encore_kernel_destroy(c.scale));
  EXPECT_OK(encore_program_destroy(c.prog));
  EXPECT_OK(encore_device_destroy(c.dev));
  return checks_report(0);
}
