/* Asynchronous read-back (encore_buffer_read_async: the bytes once its event completes, destroying
 * the event first waits for the read, refused inside a capture) and dropping one signature's unit
 * of a jit (encore_jit_drop). On NULL and, when present, the default OpenCL device. C11. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 4096

static const char* kSource = "__kernel void inc(__global float* x) { x[get_global_id(0)] += 1.0f; }\n";

typedef struct {
  encore_device dev;
  encore_kernel inc;
} Ctx;

static encore_status launch_inc(Ctx* c, encore_buffer b, size_t n) {
  encore_arg a;
  memset(&a, 0, sizeof a);
  a.kind = ENCORE_ARG_BUFFER;
  a.value.buffer = b;
  return encore_launch(c->dev, c->inc, &n, NULL, 1, &a, 1);
}

/* inputs[0] += 1 */
static encore_status step(void* userdata, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nv,
                          encore_buffer* out, size_t nout) {
  encore_buffer_info info;
  encore_status s;
  (void)vars, (void)nv, (void)out, (void)nout;
  if (nin != 1) return ENCORE_ERROR_INVALID_ARGUMENT;
  if ((s = encore_buffer_get_info(in[0], &info)) != ENCORE_OK) return s;
  return launch_inc((Ctx*)userdata, in[0], info.count);
}

/* A step that drops a unit of its own jit: refused (the jit is running it). */
static encore_jit self_jit;
static encore_status self_drop_status;
static encore_status dropping_step(void* userdata, const encore_buffer* in, size_t nin, const encore_bound_var* vars, size_t nv,
                                   encore_buffer* out, size_t nout) {
  self_drop_status = encore_jit_drop(self_jit, in, nin, NULL, 0, NULL, 0, NULL);
  return step(userdata, in, nin, vars, nv, out, nout);
}

static int run_on(const char* name, encore_device dev, encore_program prog) {
  static float host[N], back[N];
  Ctx c;
  encore_buffer x = NULL, small = NULL;
  encore_event ev = NULL;
  encore_jit jit = NULL;
  int i, ok = 1, done = 0, dropped = -1, is_null = name && strcmp(name, "NULL") == 0;
  uint64_t calls = 0;
  c.dev = dev;
  REQUIRE_OK(encore_kernel_create(prog, "inc", &c.inc));
  for (i = 0; i < N; ++i) host[i] = (float)i;
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, N, &x));
  REQUIRE_OK(encore_buffer_copyin(x, host, sizeof host));

  /* the read follows the work queued before it; the bytes are there once the event completes */
  REQUIRE_OK(launch_inc(&c, x, N));
  memset(back, 0, sizeof back);
  REQUIRE_OK(encore_buffer_read_async(x, 0, back, N, &ev));
  EXPECT_OK(encore_event_wait(ev));
  EXPECT_OK(encore_event_done(ev, &done));
  EXPECT_TRUE(done == 1);
  for (i = 0; i < N && !is_null; ++i) ok &= back[i] == (float)i + 1.f;
  EXPECT_TRUE(ok);
  EXPECT_OK(encore_event_destroy(ev));

  /* a part at an element offset; destroying the event before waiting waits for the read */
  memset(back, 0, sizeof back);
  REQUIRE_OK(encore_buffer_read_async(x, 100, back, 50, &ev));
  EXPECT_OK(encore_event_destroy(ev));
  for (i = 0; i < 50 && !is_null; ++i) ok &= back[i] == (float)(100 + i) + 1.f;
  for (i = 0; i < 50 && is_null; ++i) ok &= back[i] == (float)(100 + i); /* NULL moves bytes, runs no kernel */
  EXPECT_TRUE(ok);

  /* misuse */
  EXPECT_ERR(encore_buffer_read_async(x, 0, back, N, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(encore_buffer_read_async(x, N - 1, back, 2, &ev), ENCORE_ERROR_INVALID_ARGUMENT, "do not fit");
  EXPECT_TRUE(ev == NULL);
  EXPECT_ERR(encore_buffer_read_async(x, 0, NULL, 1, &ev), ENCORE_ERROR_INVALID_ARGUMENT, "dst is NULL");
  EXPECT_ERR(encore_buffer_read_async(NULL, 0, back, 1, &ev), ENCORE_ERROR_INVALID_HANDLE, "buf");
  {
    encore_capture cap = NULL;
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_ERR(encore_buffer_read_async(x, 0, back, N, &ev), ENCORE_ERROR_JIT, "during a capture");
    EXPECT_OK(encore_capture_destroy(cap));
  }

  /* one signature's unit dropped: the other stays; the dropped one starts over at call 0 */
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 16, &small));
  REQUIRE_OK(encore_jit_create(step, &c, 0, NULL, &jit));
  for (i = 0; i < 3; ++i) REQUIRE_OK(encore_jit_call(jit, &x, 1, NULL, 0, NULL, 0, NULL, 0, NULL));
  for (i = 0; i < 3; ++i) REQUIRE_OK(encore_jit_call(jit, &small, 1, NULL, 0, NULL, 0, NULL, 0, NULL));
  EXPECT_OK(encore_jit_drop(jit, &x, 1, NULL, 0, NULL, 0, &dropped));
  EXPECT_TRUE(dropped == 1);
  EXPECT_OK(encore_jit_drop(jit, &x, 1, NULL, 0, NULL, 0, &dropped));
  EXPECT_TRUE(dropped == 0);
  EXPECT_OK(encore_jit_call(jit, &small, 1, NULL, 0, NULL, 0, NULL, 0, NULL));
  EXPECT_OK(encore_jit_calls(jit, &calls));
  EXPECT_TRUE(calls == 4 || encore_jit_options_default().enabled == 0);  /* small's unit stayed */
  EXPECT_OK(encore_jit_call(jit, &x, 1, NULL, 0, NULL, 0, NULL, 0, NULL));
  EXPECT_OK(encore_jit_calls(jit, &calls));
  EXPECT_TRUE(calls == 1 || encore_jit_options_default().enabled == 0);  /* x's starts over */
  EXPECT_ERR(encore_jit_drop(jit, NULL, 1, NULL, 0, NULL, 0, &dropped), ENCORE_ERROR_INVALID_ARGUMENT, "inputs");
  EXPECT_ERR(encore_jit_drop(NULL, &x, 1, NULL, 0, NULL, 0, &dropped), ENCORE_ERROR_INVALID_HANDLE, "jit");
  EXPECT_OK(encore_jit_destroy(jit));
  REQUIRE_OK(encore_jit_create(dropping_step, &c, 0, NULL, &self_jit));
  self_drop_status = ENCORE_OK;
  EXPECT_OK(encore_jit_call(self_jit, &small, 1, NULL, 0, NULL, 0, NULL, 0, NULL));
  EXPECT_TRUE(self_drop_status == ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(strstr(encore_last_error(), "encore_jit_drop: jit is running its step callback") != NULL);
  EXPECT_OK(encore_jit_destroy(self_jit));

  EXPECT_OK(encore_buffer_destroy(small));
  EXPECT_OK(encore_buffer_destroy(x));
  EXPECT_OK(encore_kernel_destroy(c.inc));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
