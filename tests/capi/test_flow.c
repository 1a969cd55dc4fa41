/* Steps that decide through the C API: a jit whose step counts values on the device, reads the
 * count back in a host item that sets the next launch's size, branches on a bound variable, runs a
 * counted loop and a loop until a host condition. The same step runs through a jit and through an
 * eager jit (enabled = 0) over two copies of its state; every call's results must agree (on the
 * default device; on NULL the structure runs). Then the misuses: a context used outside its
 * function, work issued from a host function, a callback's failure. */
#include <math.h>

#include "check.h"

static const char* kSource =
    "__kernel void cf_count(__global const float* x, __global int* c, int n) {\n"
    "  int k = 0; for (int i = 0; i < n; ++i) k += x[i] > 0.0f; c[0] = k; }\n"
    "__kernel void cf_mark(__global float* y, float v) { y[get_global_id(0)] += v + (float)get_global_id(0); }\n"
    "__kernel void cf_scale(__global float* y, float s) { y[get_global_id(0)] *= s; }\n"
    "__kernel void cf_half(__global float* y, __global float* r, int n) {\n"
    "  float m = 0.0f; for (int i = 0; i < n; ++i) { y[i] *= 0.5f; m = fmax(m, fabs(y[i])); } r[0] = m; }\n";

enum { N = 32 };

typedef struct State {
  encore_device dev;
  encore_kernel count, mark, scale, half;
  encore_variable live, decay, steps;
  encore_buffer cnt, r, y; /* state of this copy */
  encore_host_ctx saved;   /* a context kept past its function (misuse) */
} State;

static int set_live(void* user, encore_host_ctx ctx) {
  State* s = (State*)user;
  int32_t k = 0;
  if (encore_host_read(ctx, 0, 0, &k, sizeof k) != ENCORE_OK) return 1;
  s->saved = ctx;
  return encore_host_set_i64(ctx, s->live, k) != ENCORE_OK;
}

static int decay_body(void* user) {
  State* s = (State*)user;
  size_t g = N;
  encore_arg a[2];
  a[0] = encore_arg_buffer(s->y);
  a[1] = encore_arg_f32(0.5f);
  return encore_launch(s->dev, s->scale, &g, NULL, 1, a, 2) != ENCORE_OK;
}

static int mark_body(void* user) {
  State* s = (State*)user;
  size_t g = N;
  encore_arg a[2];
  a[0] = encore_arg_buffer(s->y);
  a[1] = encore_arg_f32(0.25f);
  return encore_launch(s->dev, s->mark, &g, NULL, 1, a, 2) != ENCORE_OK;
}

static int half_body(void* user) {
  State* s = (State*)user;
  size_t one = 1;
  encore_arg a[3];
  a[0] = encore_arg_buffer(s->y);
  a[1] = encore_arg_buffer(s->r);
  a[2] = encore_arg_i32(N);
  return encore_launch(s->dev, s->half, &one, NULL, 1, a, 3) != ENCORE_OK;
}

static int above_tolerance(void* user, encore_host_ctx ctx, int* again) {
  float m = 0;
  (void)user;
  if (encore_host_read(ctx, 0, 0, &m, sizeof m) != ENCORE_OK) return 1;
  *again = m > 0.5f;
  return 0;
}

static encore_status step(void* user, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nvars,
                          encore_buffer* out, size_t nout) {
  State* s = (State*)user;
  size_t one = 1;
  encore_arg a[3];
  encore_size g;
  encore_status st;
  (void)nin; (void)vars; (void)nvars; (void)out; (void)nout;
  a[0] = encore_arg_buffer(in[0]);
  a[1] = encore_arg_buffer(s->cnt);
  a[2] = encore_arg_i32(N);
  if ((st = encore_launch(s->dev, s->count, &one, NULL, 1, a, 3)) != ENCORE_OK) return st;
  if ((st = encore_host(s->dev, &s->cnt, 1, &s->live, 1, set_live, s, "live")) != ENCORE_OK) return st;
  g = encore_size_affine(s->live, 1, 0);
  a[0] = encore_arg_buffer(s->y);
  a[1] = encore_arg_f32(1.0f);
  if ((st = encore_launch_sized(s->dev, s->mark, &g, NULL, 1, a, 2, "mark live")) != ENCORE_OK) return st;
  if ((st = encore_when(s->dev, s->decay, decay_body, NULL, s, "decay")) != ENCORE_OK) return st;
  if ((st = encore_repeat(s->dev, s->steps, mark_body, s, "steps")) != ENCORE_OK) return st;
  return encore_loop_while(s->dev, 64, &s->r, 1, half_body, above_tolerance, s, "halve");
}

static int make_state(State* s, encore_device dev, encore_program prog, encore_variable live, encore_variable decay,
                      encore_variable steps) {
  float zeros[N] = {0};
  memset(s, 0, sizeof *s);
  s->dev = dev;
  s->live = live;
  s->decay = decay;
  s->steps = steps;
  if (encore_kernel_create(prog, "cf_count", &s->count) || encore_kernel_create(prog, "cf_mark", &s->mark) ||
      encore_kernel_create(prog, "cf_scale", &s->scale) || encore_kernel_create(prog, "cf_half", &s->half) ||
      encore_buffer_alloc(dev, ENCORE_I32, 1, &s->cnt) || encore_buffer_alloc(dev, ENCORE_F32, 1, &s->r) ||
      encore_buffer_alloc(dev, ENCORE_F32, N, &s->y))
    return 1;
  {
    int32_t c0 = 0;
    float r0 = 0;
    if (encore_buffer_copyin(s->cnt, &c0, sizeof c0) || encore_buffer_copyin(s->r, &r0, sizeof r0)) return 1;
  }
  return encore_buffer_copyin(s->y, zeros, sizeof zeros) != ENCORE_OK;
}

static void free_state(State* s) {
  encore_kernel_destroy(s->count);
  encore_kernel_destroy(s->mark);
  encore_kernel_destroy(s->scale);
  encore_kernel_destroy(s->half);
  encore_buffer_destroy(s->cnt);
  encore_buffer_destroy(s->r);
  encore_buffer_destroy(s->y);
}

static int launches_inside(void* user, encore_host_ctx ctx) {
  State* s = (State*)user;
  (void)ctx;
  return mark_body(s);
}

static int run_on(const char* name, encore_device dev, encore_program prog) {
  encore_variable live, decay, steps;
  State a, b;
  encore_jit ja, jb;
  encore_jit_options eager = encore_jit_options_default();
  int is_null = name && strcmp(name, "NULL") == 0, call;
  REQUIRE_OK(encore_variable_create_int("live", 0, N, &live));
  REQUIRE_OK(encore_variable_create_int("decay", 0, 1, &decay));
  REQUIRE_OK(encore_variable_create_int("steps", 0, 3, &steps));
  REQUIRE_OK(make_state(&a, dev, prog, live, decay, steps));
  REQUIRE_OK(make_state(&b, dev, prog, live, decay, steps));
  eager.enabled = 0;
  REQUIRE_OK(encore_jit_create(step, &a, 0, NULL, &ja));
  REQUIRE_OK(encore_jit_create(step, &b, 0, &eager, &jb));
  for (call = 0; call < 12; ++call) {
    float x[N], ya[N], yb[N];
    encore_buffer xb;
    encore_bound_var v[2];
    int i;
    for (i = 0; i < N; ++i) x[i] = (float)((i * 7 + call * 13) % 17) - 8.0f + 0.5f * (float)call;
    REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, N, &xb));
    REQUIRE_OK(encore_buffer_copyin(xb, x, sizeof x));
    REQUIRE_OK(encore_variable_bind_int(decay, call % 4 == 0, &v[0]));
    REQUIRE_OK(encore_variable_bind_int(steps, call % 3, &v[1]));
    EXPECT_OK(encore_jit_call(ja, &xb, 1, v, 2, NULL, 0, NULL, 0, NULL));
    EXPECT_OK(encore_jit_call(jb, &xb, 1, v, 2, NULL, 0, NULL, 0, NULL));
    REQUIRE_OK(encore_buffer_copyout(a.y, ya, sizeof ya));
    REQUIRE_OK(encore_buffer_copyout(b.y, yb, sizeof yb));
    if (!is_null) EXPECT_TRUE(memcmp(ya, yb, sizeof ya) == 0);
    encore_buffer_destroy(xb);
  }
  /* a context kept past its host function is refused, never read */
  EXPECT_ERR(encore_host_set_i64(a.saved, live, 1), ENCORE_ERROR_INVALID_ARGUMENT, "not the context of a host function");
  EXPECT_ERR(encore_host_read(NULL, 0, 0, NULL, 0), ENCORE_ERROR_INVALID_ARGUMENT, "not the context");
  /* a host function that issues work: the launch inside is refused, and so the host item fails */
  EXPECT_ERR(encore_host(dev, &a.cnt, 1, NULL, 0, launches_inside, &a, "bad"), ENCORE_ERROR_JIT, "host function bad returned 1");
  /* arguments */
  EXPECT_ERR(encore_host(dev, NULL, 1, NULL, 0, set_live, &a, "x"), ENCORE_ERROR_INVALID_ARGUMENT, "reads is NULL");
  EXPECT_ERR(encore_repeat(dev, steps, NULL, &a, "x"), ENCORE_ERROR_INVALID_ARGUMENT, "body is NULL");
  EXPECT_ERR(encore_loop_while(dev, 0, &a.r, 1, half_body, above_tolerance, &a, "x"), ENCORE_ERROR_INVALID_ARGUMENT,
             "max_iterations must be >= 1");
  EXPECT_ERR(encore_select(dev, steps, NULL, 0, &a, "x"), ENCORE_ERROR_INVALID_ARGUMENT, "at least one alternative");
  encore_jit_destroy(ja);
  encore_jit_destroy(jb);
  free_state(&a);
  free_state(&b);
  encore_variable_destroy(live);
  encore_variable_destroy(decay);
  encore_variable_destroy(steps);
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
