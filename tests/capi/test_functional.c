/* The C API end to end on the default device: an explicit capture of a 2-kernel step (one input,
 * a float variable, a temporary, state), replayed with rotating inputs and chained events; the same
 * step through encore_jit; every result compared with the host. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 1000
#define NX 3

static const char* kSource =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void affine(__global const float* x, __global float* t, float a) {\n"
    "  size_t i = get_global_id(0); t[i] = x[i] * a + 1.0f; }\n"
    "__kernel void combine(__global const float* t, __global const float* x, __global float* y, __global float* acc) {\n"
    "  size_t i = get_global_id(0); y[i] = t[i] * t[i] - x[i]; acc[i] += y[i]; }\n";

typedef struct Ctx {
  encore_device dev;
  encore_kernel affine, combine;
  encore_variable a;
  encore_buffer acc; /* state: not an input, read and written by every call */
} Ctx;

/* The step as an engine would write it: y = (x*a + 1)^2 - x, acc += y. Returns y (a new handle). */
static encore_status issue_step(const Ctx* c, encore_buffer x, encore_buffer* y_out) {
  encore_buffer t = NULL, y = NULL;
  size_t n = N;
  encore_status s;
  *y_out = NULL;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, N, &t)) != ENCORE_OK) return s;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, N, &y)) != ENCORE_OK) goto done;
  {
    encore_arg a1[3] = {encore_arg_in(x), encore_arg_out(t), encore_arg_variable(c->a)};
    encore_arg a2[4] = {encore_arg_buffer(t), encore_arg_buffer(x), encore_arg_out(y), encore_arg_inout(c->acc)};
    if ((s = encore_launch(c->dev, c->affine, &n, NULL, 1, a1, 3)) != ENCORE_OK) goto done;
    if ((s = encore_launch(c->dev, c->combine, &n, NULL, 1, a2, 4)) != ENCORE_OK) goto done;
  }
  *y_out = y;
  y = NULL;
done:
  encore_buffer_destroy(t); /* a temporary: the capture keeps what it needs */
  if (y) encore_buffer_destroy(y);
  return s;
}

static void host_step(const float* x, float a, float* y, float* acc) {
  for (int i = 0; i < N; ++i) {
    float t = x[i] * a + 1.0f;
    y[i] = t * t - x[i];
    acc[i] += y[i];
  }
}

static int same(const float* got, const float* want, const char* what, int call) {
  for (int i = 0; i < N; ++i) {
    float d = fabsf(got[i] - want[i]);
    if (!(d <= 1e-5f * (1.0f + fabsf(want[i])))) {
      fprintf(stderr, "%s, call %d: element %d is %.9g, the host computed %.9g\n", what, call, i, got[i], want[i]);
      return 0;
    }
  }
  return 1;
}

static float a_of(int call) { return 0.25f * (float)(call % 7) - 0.5f; }

static encore_status jit_step(void* userdata, const encore_buffer* inputs, size_t num_inputs, const encore_bound_var* vars,
                              size_t num_vars, encore_buffer* outputs, size_t num_outputs) {
  const Ctx* c = (const Ctx*)userdata;
  (void)vars; /* the step reads c->a: eager runs see the call's bound value */
  if (num_inputs != 1 || num_vars != 1 || num_outputs != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  return issue_step(c, inputs[0], &outputs[0]);
}

int main(void) {
  Ctx c;
  encore_program prog = NULL;
  encore_buffer xs[NX], y = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  encore_jit jit = NULL;
  encore_event prev = NULL;
  encore_unit_stats st;
  const char *id = NULL, *name = NULL;
  static float hx[NX][N], hy[N], hacc[N], got[N], zeros[N];
  size_t slot_x = 99, slot_a = 99, ni = 0, nv = 0;
  int call = 0;

  memset(&c, 0, sizeof c);
  if (encore_device_open(NULL, &c.dev) != ENCORE_OK) {
    printf("SKIP: no OpenCL device: %s\n", encore_last_error());
    return 77;
  }
  REQUIRE_OK(encore_device_info(c.dev, &id, &name));
  if (strcmp(id, "NULL") == 0) {
    printf("SKIP: the default device is NULL (kernels do not run)\n");
    encore_device_destroy(c.dev);
    return 77;
  }
  printf("device %s (%s), encore %s\n", id, name, encore_version());
  REQUIRE_OK(encore_program_compile(c.dev, kSource, NULL, &prog));
  REQUIRE_OK(encore_kernel_create(prog, "affine", &c.affine));
  REQUIRE_OK(encore_kernel_create(prog, "combine", &c.combine));
  REQUIRE_OK(encore_variable_create_f32("a", -10.0, 10.0, &c.a));
  REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_F32, N, &c.acc));
  REQUIRE_OK(encore_buffer_copyin(c.acc, zeros, sizeof zeros));
  for (int k = 0; k < NX; ++k) {
    for (int i = 0; i < N; ++i) hx[k][i] = (float)((i * 7 + k * 13) % 101) / 50.0f - 1.0f;
    REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_F32, N, &xs[k]));
    REQUIRE_OK(encore_buffer_copyin(xs[k], hx[k], sizeof hx[k]));
  }

  /* ---- explicit capture: call 0 eager, call 1 captured (runs too), calls 2.. replayed */
  for (call = 0; call < 12; ++call) {
    int k = call % NX;
    float a = a_of(call);
    host_step(hx[k], a, hy, hacc);
    if (call == 0) {
      REQUIRE_OK(encore_variable_bind_float(c.a, a, NULL));
      REQUIRE_OK(issue_step(&c, xs[k], &y));
      REQUIRE_OK(encore_buffer_copyout(y, got, sizeof got));
      REQUIRE_OK(encore_buffer_destroy(y));
      y = NULL;
    } else if (call == 1) {
      REQUIRE_OK(encore_capture_begin(NULL, &cap));
      REQUIRE_OK(encore_capture_add_input(cap, xs[k], &slot_x));
      REQUIRE_OK(encore_variable_bind_float(c.a, a, NULL));
      REQUIRE_OK(issue_step(&c, xs[k], &y));
      REQUIRE_OK(encore_capture_add_output(cap, y));
      REQUIRE_OK(encore_capture_end(cap, &unit));
      REQUIRE_OK(encore_unit_variable_slot(unit, c.a, &slot_a));
      REQUIRE_OK(encore_buffer_copyout(y, got, sizeof got));
    } else {
      encore_event done = NULL;
      REQUIRE_OK(encore_unit_bind_input(unit, slot_x, xs[k]));
      REQUIRE_OK(encore_unit_bind_var_float(unit, slot_a, a));
      /* each replay waits on the previous one's event (already ordered on one queue: checks the path) */
      REQUIRE_OK(encore_unit_run(unit, prev ? &prev : NULL, prev ? 1 : 0, &done));
      if (prev) REQUIRE_OK(encore_event_destroy(prev));
      prev = done;
      if (call % 3 == 0) {
        int is_done = 0;
        REQUIRE_OK(encore_event_wait(done));
        REQUIRE_OK(encore_event_done(done, &is_done));
        EXPECT_TRUE(is_done == 1);
      }
      REQUIRE_OK(encore_buffer_copyout(y, got, sizeof got)); /* the same y, overwritten in place */
    }
    EXPECT_TRUE(same(got, hy, "explicit capture: y", call));
  }
  if (prev) REQUIRE_OK(encore_event_destroy(prev));
  REQUIRE_OK(encore_buffer_copyout(c.acc, got, sizeof got));
  EXPECT_TRUE(same(got, hacc, "explicit capture: acc (state)", call));
  EXPECT_OK(encore_unit_counts(unit, &ni, &nv));
  EXPECT_TRUE(ni == 1 && nv == 1 && slot_x == 0 && slot_a == 0);
  EXPECT_OK(encore_unit_get_stats(unit, &st));
  EXPECT_TRUE(st.items == 2 && st.items_replayed == 2 && st.inputs == 1 && st.variables == 1);
  EXPECT_TRUE(st.planned_temps >= 1);
  {
    /* one chain (combine reads affine's t); the temp t alone is live at its peak */
    encore_unit_plan_stats ps = encore_unit_plan_stats_default();
    EXPECT_OK(encore_unit_get_plan_stats(unit, &ps));
    EXPECT_TRUE(ps.chains == 1 && ps.longest_chain == 2);
    EXPECT_TRUE(ps.temp_bytes_lower_bound >= N * sizeof(float) && ps.temp_bytes_lower_bound <= st.temp_bytes_planned);
  }
  {
    /* two independent launches (each its own input and output: replayed, never one-time): two
     * chains, as UnitStats::chains says */
    encore_capture two = NULL;
    encore_unit u2 = NULL;
    encore_buffer o[2] = {NULL, NULL};
    encore_unit_plan_stats ps = encore_unit_plan_stats_default();
    size_t n = N;
    REQUIRE_OK(encore_capture_begin(NULL, &two));
    for (int k = 0; k < 2; ++k) {
      encore_arg args[3];
      REQUIRE_OK(encore_capture_add_input(two, xs[k], NULL));
      REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_F32, N, &o[k]));
      args[0] = encore_arg_in(xs[k]);
      args[1] = encore_arg_out(o[k]);
      args[2] = encore_arg_f32(0.5f);
      REQUIRE_OK(encore_launch(c.dev, c.affine, &n, NULL, 1, args, 3));
      REQUIRE_OK(encore_capture_add_output(two, o[k]));
    }
    REQUIRE_OK(encore_capture_end(two, &u2));
    EXPECT_OK(encore_unit_get_plan_stats(u2, &ps));
    EXPECT_TRUE(ps.chains == 2 && ps.longest_chain == 1);
    if (ps.chains != 2 || ps.longest_chain != 1) fprintf(stderr, "chains: %zu, longest: %zu\n", ps.chains, ps.longest_chain);
    EXPECT_OK(encore_unit_destroy(u2));
    for (int k = 0; k < 2; ++k) EXPECT_OK(encore_buffer_destroy(o[k]));
  }
  {
    double seconds = -1;
    EXPECT_OK(encore_unit_run_and_wait(unit, &seconds));
    EXPECT_TRUE(seconds >= 0);
    host_step(hx[(call - 1) % NX], a_of(call - 1), hy, hacc); /* the unit's bindings are kept */
    EXPECT_OK(encore_unit_free_intermediates(unit));
  }
  {
    encore_unit twice = NULL;
    EXPECT_OK(encore_unit_concat(unit, unit, &twice));
    if (twice) {
      EXPECT_OK(encore_unit_get_stats(twice, &st));
      EXPECT_TRUE(st.items == 4);
      EXPECT_OK(encore_unit_destroy(twice));
    }
  }
  REQUIRE_OK(encore_buffer_copyout(c.acc, got, sizeof got));
  EXPECT_TRUE(same(got, hacc, "after run_and_wait: acc", call));
  EXPECT_OK(encore_unit_destroy(unit));
  EXPECT_OK(encore_buffer_destroy(y));

  /* ---- the same step through encore_jit */
  REQUIRE_OK(encore_buffer_copyin(c.acc, zeros, sizeof zeros));
  memset(hacc, 0, sizeof hacc);
  REQUIRE_OK(encore_jit_create(jit_step, &c, 1, NULL, &jit));
  {
    encore_buffer out = NULL, last_out = NULL;
    encore_jit_options o = encore_jit_options_default();
    uint64_t calls = 0;
    for (call = 0; call < 10; ++call) {
      int k = (call * 2) % NX;
      float a = a_of(call + 3);
      encore_bound_var bv;
      encore_event done = NULL;
      host_step(hx[k], a, hy, hacc);
      REQUIRE_OK(encore_variable_bind_float(c.a, a, &bv));
      REQUIRE_OK(encore_jit_call(jit, &xs[k], 1, &bv, 1, &out, 1, NULL, 0, &done));
      REQUIRE_OK(encore_event_wait(done));
      REQUIRE_OK(encore_event_destroy(done));
      REQUIRE_OK(encore_buffer_copyout(out, got, sizeof got));
      EXPECT_TRUE(same(got, hy, "jit: y", call));
      if (call >= 2 && o.enabled) EXPECT_TRUE(out == last_out); /* replay: the same buffer, the same handle */
      last_out = out;
    }
    EXPECT_OK(encore_jit_calls(jit, &calls));
    EXPECT_TRUE(calls == 10);
    if (o.enabled) {
      EXPECT_OK(encore_jit_get_stats(jit, &st));
      EXPECT_TRUE(st.items == 2 && st.inputs == 1 && st.variables == 1);
      {
        encore_unit_plan_stats ps = encore_unit_plan_stats_default();
        EXPECT_OK(encore_jit_get_plan_stats(jit, &ps));
        EXPECT_TRUE(ps.chains == 1 && ps.temp_bytes_lower_bound <= st.temp_bytes_planned);
      }
    }
  }
  REQUIRE_OK(encore_buffer_copyout(c.acc, got, sizeof got));
  EXPECT_TRUE(same(got, hacc, "jit: acc (state)", call));
  EXPECT_OK(encore_jit_destroy(jit));

  /* ---- the explicit path's capture check: a frame's dt as a plain float, compared with the
   * previous frame's capture, is refused (replay would freeze it) */
  {
    encore_unit f0 = NULL, f1 = NULL;
    encore_buffer t = NULL;
    size_t n = N;
    REQUIRE_OK(encore_buffer_alloc(c.dev, ENCORE_F32, N, &t));
    for (int frame = 0; frame < 3; ++frame) {
      float dt = frame == 2 ? 0.5f : 0.25f;
      encore_arg args[3] = {encore_arg_in(xs[0]), encore_arg_out(t), encore_arg_f32(dt)};
      REQUIRE_OK(encore_capture_begin(NULL, &cap));
      REQUIRE_OK(encore_capture_add_input(cap, xs[0], NULL));
      if (f0) REQUIRE_OK(encore_capture_check_against(cap, f0));
      REQUIRE_OK(encore_launch(c.dev, c.affine, &n, NULL, 1, args, 3));
      if (frame == 0) {
        REQUIRE_OK(encore_capture_end(cap, &f0));
      } else if (frame == 1) { /* the same dt: passes */
        EXPECT_OK(encore_capture_end(cap, &f1));
      } else {
        EXPECT_ERR(encore_capture_end(cap, &f1), ENCORE_ERROR_JIT, "must be a Variable");
      }
    }
    EXPECT_ERR(encore_capture_check_against(NULL, f0), ENCORE_ERROR_INVALID_HANDLE, "cap");
    if (f1) EXPECT_OK(encore_unit_destroy(f1));
    EXPECT_OK(encore_unit_destroy(f0));
    EXPECT_OK(encore_buffer_destroy(t));
  }

  for (int k = 0; k < NX; ++k) EXPECT_OK(encore_buffer_destroy(xs[k]));
  EXPECT_OK(encore_buffer_destroy(c.acc));
  EXPECT_OK(encore_variable_destroy(c.a));
  EXPECT_OK(encore_kernel_destroy(c.affine));
  EXPECT_OK(encore_kernel_destroy(c.combine));
  EXPECT_OK(encore_program_destroy(prog));
  EXPECT_OK(encore_device_destroy(c.dev));
  return checks_report(0);
}
