/* Host inputs of a C jit (encore_jit_call_hosts): a write from the host input's bytes inside the
 * step replays from the bytes each call passes; a write from other memory stays frozen at capture;
 * another size is another signature. On NULL (uploads and copies move real bytes there) and, when
 * present, the default OpenCL device. C11. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 32

typedef struct {
  encore_device dev;
  const float* host;   /* this call's host input: the step reads it through userdata */
  size_t count;
  float other[N];      /* not a host input: frozen */
} Ctx;

/* outputs[0] <- host input, outputs[1] <- other (each through a temporary and a copy) */
static encore_status step(void* userdata, const encore_buffer* inputs, size_t num_inputs, const encore_bound_var* vars,
                          size_t num_vars, encore_buffer* outputs, size_t num_outputs) {
  Ctx* c = (Ctx*)userdata;
  encore_buffer t = NULL;
  encore_status s;
  (void)inputs, (void)vars;
  if (num_inputs != 0 || num_vars != 0 || num_outputs != 2) return ENCORE_ERROR_INVALID_ARGUMENT;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, c->count, &t)) != ENCORE_OK) return s;
  if ((s = encore_buffer_write(t, 0, c->host, c->count)) != ENCORE_OK) return s;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, c->count, &outputs[0])) != ENCORE_OK) return s;
  if ((s = encore_copy(c->dev, outputs[0], t)) != ENCORE_OK) return s;
  if ((s = encore_buffer_destroy(t)) != ENCORE_OK) return s;
  if ((s = encore_buffer_alloc(c->dev, ENCORE_F32, c->count, &outputs[1])) != ENCORE_OK) return s;
  return encore_buffer_write(outputs[1], 0, c->other, c->count);
}

static int run_on(const char* name, encore_device dev, encore_program no_program) {
  Ctx c;
  encore_jit jit = NULL;
  encore_buffer outs[2];
  float host[N], got[N];
  int call, i, ok = 1;
  (void)name, (void)no_program;
  memset(&c, 0, sizeof c);
  c.dev = dev;
  for (i = 0; i < N; ++i) c.other[i] = (float)(1000 + i);
  REQUIRE_OK(encore_jit_create(step, &c, 2, NULL, &jit));
  for (call = 0; call < 8; ++call) {
    encore_host_input h;
    for (i = 0; i < N; ++i) host[i] = (float)(call * 100 + i);
    if (call == 2) c.other[0] = -1.f; /* after the capture: replay keeps the capture's bytes */
    c.host = host;
    c.count = N;
    h.data = host;
    h.bytes = sizeof host;
    REQUIRE_OK(encore_jit_call_hosts(jit, NULL, 0, &h, 1, NULL, 0, outs, 2, NULL, 0, NULL));
    for (i = 0; i < N; ++i) host[i] = -5.f; /* the call copied it: scribbling now changes nothing */
    REQUIRE_OK(encore_buffer_copyout(outs[0], got, sizeof got));
    for (i = 0; i < N; ++i) ok &= got[i] == (float)(call * 100 + i);
    EXPECT_TRUE(ok);
    REQUIRE_OK(encore_buffer_copyout(outs[1], got, sizeof got));
    EXPECT_TRUE(got[0] == (call < 2 || encore_jit_options_default().enabled == 0 ? c.other[0] : 1000.f));
  }
  /* another size: its own signature, warmed up and captured */
  for (call = 0; call < 3; ++call) {
    encore_host_input h;
    for (i = 0; i < N / 2; ++i) host[i] = (float)(7 * call + i);
    c.host = host;
    c.count = N / 2;
    h.data = host;
    h.bytes = sizeof(float) * (N / 2);
    REQUIRE_OK(encore_jit_call_hosts(jit, NULL, 0, &h, 1, NULL, 0, outs, 2, NULL, 0, NULL));
    REQUIRE_OK(encore_buffer_copyout(outs[0], got, sizeof(float) * (N / 2)));
    for (i = 0; i < N / 2; ++i) ok &= got[i] == (float)(7 * call + i);
    EXPECT_TRUE(ok);
  }
  {
    encore_host_input bad = {NULL, 8};
    EXPECT_ERR(encore_jit_call_hosts(jit, NULL, 0, &bad, 1, NULL, 0, outs, 2, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "hosts[0].data");
    EXPECT_ERR(encore_jit_call_hosts(jit, NULL, 0, NULL, 1, NULL, 0, outs, 2, NULL, 0, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "hosts");
  }
  EXPECT_OK(encore_jit_destroy(jit));
  return 0;
}

int main(void) { return run_on_null_and_default(NULL, run_on); }
