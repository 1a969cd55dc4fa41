/* The per-call form of a by-value struct in C (encore_arg_bytes_from): its bytes come from a host
 * input (the hosts of encore_jit_call_hosts, encore_capture_add_host_input), and every replay
 * passes that call's bytes, equal to eager over many calls; a wrong size and memory outside every
 * host input are refused; a frozen copy is still caught by the capture check, whose message names
 * the per-call form. On NULL (kernels compute nothing there: values checked on OpenCL only) and,
 * when present, the default OpenCL device. C11. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 64

static const char* kSource =
    "typedef struct { float alpha; int n; } par_str;\n"
    "__kernel void pc_fill(__global float* y, par_str p) { int i = (int)get_global_id(0); y[i] = p.alpha * (float)i + (float)p.n; }\n";

typedef struct {
  float alpha;
  int32_t n;
} ParStr;

typedef struct {
  encore_device dev;
  encore_kernel fill;
  const ParStr* params; /* this call's host input: the step reads it through userdata */
} Ctx;

static ParStr par(int call) {
  ParStr p;
  p.alpha = 0.5f + 0.25f * (float)call;
  p.n = 3 * call - 7;
  return p;
}

/* y[i] == p.alpha * i + p.n for every i (exact in float for these values) */
static int holds(encore_buffer y, ParStr p) {
  float got[N];
  int i, ok = 1;
  if (encore_buffer_copyout(y, got, sizeof got) != ENCORE_OK) return 0;
  for (i = 0; i < N; ++i) ok &= got[i] == p.alpha * (float)i + (float)p.n;
  return ok;
}

static encore_status launch_fill(encore_device dev, encore_kernel k, encore_buffer y, encore_arg by_value) {
  size_t n = N;
  encore_arg args[2];
  args[0] = encore_arg_out(y);
  args[1] = by_value;
  return encore_launch(dev, k, &n, NULL, 1, args, 2);
}

/* outputs[0] <- pc_fill with this call's struct */
static encore_status step(void* userdata, const encore_buffer* inputs, size_t num_inputs, const encore_bound_var* vars,
                          size_t num_vars, encore_buffer* outputs, size_t num_outputs) {
  Ctx* c = (Ctx*)userdata;
  encore_status s;
  (void)inputs, (void)vars;
  if (num_inputs != 0 || num_vars != 0 || num_outputs != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, N, &outputs[0])) != ENCORE_OK) return s;
  return launch_fill(c->dev, c->fill, outputs[0], encore_arg_bytes_from(c->params, sizeof *c->params));
}

static int run_on(const char* name, encore_device dev, encore_program prog) {
  const char *id = NULL, *dev_name = NULL;
  int cl;
  encore_kernel fill = NULL;
  encore_buffer y = NULL, out = NULL;
  int call, ok = 1;
  (void)name;
  REQUIRE_OK(encore_device_info(dev, &id, &dev_name));
  cl = strcmp(id, "NULL") != 0; /* the NULL device runs no kernel: values are checked elsewhere */
  REQUIRE_OK(encore_kernel_create(prog, "pc_fill", &fill));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, N, &y));
  {  /* a jit: the struct passed as each call's host input */
    Ctx c;
    encore_jit jit = NULL;
    encore_jit_options o = encore_jit_options_default();
    ParStr p;
    o.verify = 0;
    c.dev = dev;
    c.fill = fill;
    c.params = &p;
    REQUIRE_OK(encore_jit_create(step, &c, 1, &o, &jit));
    for (call = 0; call < 30; ++call) {
      encore_host_input h;
      p = par(call);
      h.data = &p;
      h.bytes = sizeof p;
      REQUIRE_OK(encore_jit_call_hosts(jit, NULL, 0, &h, 1, NULL, 0, &out, 1, NULL, 0, NULL));
      if (cl) ok &= holds(out, p);
    }
    EXPECT_TRUE(ok);
    if (o.enabled) { /* (ENCORE_JIT=0 runs every call eagerly: no unit) */
      encore_unit_stats st;
      EXPECT_OK(encore_jit_get_stats(jit, &st));
      EXPECT_TRUE(st.items_pruned == 0);
    }
    EXPECT_OK(encore_jit_destroy(jit));
  }
  {  /* an explicit capture: encore_capture_add_host_input, then each run reads the bound memory */
    encore_capture cap = NULL;
    encore_unit unit = NULL;
    ParStr p = par(0);
    size_t slot = 99;
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    REQUIRE_OK(encore_capture_add_host_input(cap, &p, sizeof p, &slot));
    REQUIRE_OK(launch_fill(dev, fill, y, encore_arg_bytes_from(&p, sizeof p)));
    REQUIRE_OK(encore_capture_end(cap, &unit));
    EXPECT_TRUE(slot == 0);
    REQUIRE_OK(encore_unit_bind_host_input(unit, 0, &p, sizeof p));
    ok = 1;
    for (call = 1; call < 25; ++call) {
      p = par(call); /* in place: still the bound memory */
      REQUIRE_OK(encore_unit_run(unit, NULL, 0, NULL));
      if (cl) ok &= holds(y, p);
    }
    EXPECT_TRUE(ok);
    EXPECT_ERR(encore_unit_bind_host_input(unit, 0, &p, 4), ENCORE_ERROR_JIT, "captured 8 bytes");
    EXPECT_ERR(encore_unit_bind_host_input(unit, 1, &p, sizeof p), ENCORE_ERROR_INVALID_ARGUMENT, "slot");
    EXPECT_OK(encore_unit_destroy(unit));
  }
  {  /* the size is checked against the parameter's before a byte is read */
    float three[3] = {1, 2, 3};
    size_t n = N;
    encore_arg args[2];
    args[0] = encore_arg_out(y);
    args[1] = encore_arg_bytes_from(three, sizeof three);
    EXPECT_ERR(encore_launch(dev, fill, &n, NULL, 1, args, 2), ENCORE_ERROR_INVALID_ARGUMENT, "expected 8 bytes");
  }
  {  /* memory outside every host input, in a capture: refused when recorded, never frozen */
    encore_capture cap = NULL;
    ParStr p = par(1), copy = p;
    size_t n = N;
    encore_arg args[2];
    args[0] = encore_arg_out(y);
    args[1] = encore_arg_bytes_from(&copy, sizeof copy);
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    REQUIRE_OK(encore_capture_add_host_input(cap, &p, sizeof p, NULL));
    EXPECT_ERR(encore_launch(dev, fill, &n, NULL, 1, args, 2), ENCORE_ERROR_JIT, "inside no host input");
    EXPECT_OK(encore_capture_destroy(cap));
  }
  {  /* the frozen path: a plain copy whose value changes between two frames is caught, pointing to the form */
    encore_capture cap = NULL;
    encore_unit first = NULL, second = NULL;
    int frame;
    for (frame = 0; frame < 2; ++frame) {
      ParStr copy = par(frame);
      REQUIRE_OK(encore_capture_begin(NULL, &cap));
      if (first) REQUIRE_OK(encore_capture_check_against(cap, first));
      REQUIRE_OK(launch_fill(dev, fill, y, encore_arg_bytes(&copy, sizeof copy)));
      if (!first) REQUIRE_OK(encore_capture_end(cap, &first));
      else EXPECT_ERR(encore_capture_end(cap, &second), ENCORE_ERROR_JIT, "encore_arg_bytes_from");
    }
    EXPECT_TRUE(second == NULL);
    EXPECT_TRUE(strstr(encore_last_error(), "encore_capture_add_host_input") != NULL);
    EXPECT_OK(encore_unit_destroy(first));
  }
  EXPECT_OK(encore_buffer_destroy(y));
  EXPECT_OK(encore_kernel_destroy(fill));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
