/* The growable option structs (encore_unit_options, encore_jit_options): the init functions set
 * the size and the defaults, a size no release had is a clear error, and the fields reach the
 * capture and the unit. Runs on the NULL device (it counts items; it computes nothing). */
#include <stddef.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "__kernel void set1(__global float* c) { c[get_global_id(0)] = 1.0f; }\n"
    "__kernel void add1(__global float* x, __global const float* c) { size_t i = get_global_id(0); x[i] += c[i]; }\n";

static encore_status ok_step(void* ud, const encore_buffer* in, size_t n_in, const encore_bound_var* v, size_t n_v,
                             encore_buffer* out, size_t n_out) {
  (void)ud; (void)in; (void)n_in; (void)v; (void)n_v; (void)out; (void)n_out;
  return ENCORE_OK;
}

struct step { encore_device dev; encore_kernel set1, add1; encore_buffer x, c; };

/* One capture of set1(c) (one-time: c is closure state) then add1(x, c), under `opt`;
 * `read` copies c out inside the capture. The status of the capture's end (or its first failure). */
static encore_status capture(const struct step* s, const encore_unit_options* opt, int read, encore_unit* unit) {
  encore_capture cap = NULL;
  encore_arg a[2];
  size_t n = 16;
  float host[16];
  encore_status st = encore_capture_begin(opt, &cap);
  *unit = NULL;
  if (st != ENCORE_OK) return st;
  encore_capture_add_input(cap, s->x, NULL);
  a[0] = encore_arg_out(s->c); /* a pure write: one-time */
  encore_launch(s->dev, s->set1, &n, NULL, 1, a, 1);
  a[0] = encore_arg_buffer(s->x);
  a[1] = encore_arg_buffer(s->c);
  encore_launch(s->dev, s->add1, &n, NULL, 1, a, 2);
  if (read && (st = encore_buffer_copyout(s->c, host, sizeof host)) != ENCORE_OK) {
    encore_capture_destroy(cap);
    return st;
  }
  return encore_capture_end(cap, unit);
}

/* For calls through the helper above (its failing call names itself): the status and the message. */
#define EXPECT_FAILS(call, want, substr) EXPECT_TRUE((call) == (want) && strstr(encore_last_error(), (substr)) != NULL)

static size_t pruned(encore_unit u) {
  encore_unit_stats st;
  memset(&st, 0, sizeof st);
  if (encore_unit_get_stats(u, &st) != ENCORE_OK) return 99;
  return st.items_pruned;
}

int main(void) {
  struct step s;
  encore_program prog = NULL;
  encore_unit unit = NULL;
  encore_jit jit = NULL;
  encore_unit_options uo, bad;
  encore_jit_options jo, jbad;
  memset(&s, 0, sizeof s);
  REQUIRE_OK(encore_device_open("NULL", &s.dev));
  REQUIRE_OK(encore_program_compile(s.dev, kSource, NULL, &prog));
  REQUIRE_OK(encore_kernel_create(prog, "set1", &s.set1));
  REQUIRE_OK(encore_kernel_create(prog, "add1", &s.add1));
  REQUIRE_OK(encore_buffer_alloc(s.dev, ENCORE_F32, 16, &s.x));
  REQUIRE_OK(encore_buffer_alloc(s.dev, ENCORE_F32, 16, &s.c));

  /* init: size and defaults; the inline _default is the same */
  memset(&uo, 0xff, sizeof uo);
  EXPECT_OK(encore_unit_options_init(&uo, sizeof uo));
  EXPECT_TRUE(uo.size == sizeof uo && uo.prune == 1 && uo.plan == 1 && uo.allow_copyout == 0 && uo.max_in_flight == 3 &&
              uo.min_items_in_flight == 64);
  bad = encore_unit_options_default();
  EXPECT_TRUE(bad.size == sizeof bad && bad.prune == 1 && bad.plan == 1 && bad.allow_copyout == 0 && bad.max_in_flight == 3 &&
              bad.min_items_in_flight == 64);
  EXPECT_ERR(encore_unit_options_init(NULL, sizeof uo), ENCORE_ERROR_INVALID_ARGUMENT, "opt is NULL");
  EXPECT_ERR(encore_unit_options_init(&bad, 3), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options.size is 3");
  EXPECT_ERR(encore_unit_options_init(&bad, sizeof bad + 8), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options_init");
  memset(&jo, 0xff, sizeof jo);
  EXPECT_OK(encore_jit_options_init(&jo, sizeof jo));
  EXPECT_TRUE(jo.size == sizeof jo && jo.enabled == 1 && jo.prune == 1 && jo.plan == 1 && jo.allow_copyout == 0 &&
              jo.fresh_outputs == 0 && jo.max_in_flight == 3 && jo.max_units == 8 && jo.check_closure == 1 &&
              jo.min_items_in_flight == 64);
  EXPECT_ERR(encore_jit_options_init(&jbad, 0), ENCORE_ERROR_INVALID_ARGUMENT, "encore_jit_options.size is 0");

  /* a struct whose size was never set: zeroed, or garbage */
  memset(&bad, 0, sizeof bad);
  bad.prune = 1;
  EXPECT_ERR(encore_capture_begin(&bad, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_FAILS(capture(&s, &bad, 0, &unit), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options.size is 0");
  EXPECT_TRUE(unit == NULL);
  memset(&bad, 0xab, sizeof bad);
  EXPECT_FAILS(capture(&s, &bad, 0, &unit), ENCORE_ERROR_INVALID_ARGUMENT, "expected sizeof(encore_unit_options)");
  bad = uo;
  bad.size = sizeof bad + 16; /* a newer header's struct: fields this library cannot honour */
  EXPECT_FAILS(capture(&s, &bad, 0, &unit), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options");
  /* the first release's sizes (before `concurrent`): accepted, the newer field at its default */
  EXPECT_TRUE(uo.concurrent == 0 && jo.concurrent == 0);
  bad = uo;
  bad.size = offsetof(encore_unit_options, concurrent);
  EXPECT_OK(capture(&s, &bad, 0, &unit));
  EXPECT_OK(encore_unit_destroy(unit));
  unit = NULL;
  memset(&jbad, 0xff, sizeof jbad);
  EXPECT_OK(encore_jit_options_init(&jbad, offsetof(encore_jit_options, concurrent)));
  EXPECT_TRUE(jbad.size == offsetof(encore_jit_options, concurrent) && jbad.min_items_in_flight == 64);
  jbad = jo;
  jbad.size = 1;
  EXPECT_ERR(encore_jit_create(ok_step, NULL, 0, &jbad, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "encore_jit_options.size is 1");
  EXPECT_TRUE(jit == NULL);

  /* the fields reach the capture and the unit */
  EXPECT_OK(capture(&s, NULL, 0, &unit));
  EXPECT_TRUE(pruned(unit) == 1);
  EXPECT_OK(encore_unit_destroy(unit));
  bad = uo;
  bad.prune = 0;
  EXPECT_OK(capture(&s, &bad, 0, &unit));
  EXPECT_TRUE(pruned(unit) == 0);
  EXPECT_OK(encore_unit_destroy(unit));
  EXPECT_FAILS(capture(&s, &uo, 1, &unit), ENCORE_ERROR_JIT, "allow_copyout");
  bad = uo;
  bad.allow_copyout = 1;
  EXPECT_OK(capture(&s, &bad, 1, &unit));
  EXPECT_TRUE(unit != NULL);
  EXPECT_OK(encore_unit_run(unit, NULL, 0, NULL));
  EXPECT_OK(encore_unit_destroy(unit));
  jbad = jo;
  jbad.max_units = 0;
  EXPECT_ERR(encore_jit_create(ok_step, NULL, 0, &jbad, &jit), ENCORE_ERROR_INVALID_ARGUMENT, "max_units");
  EXPECT_OK(encore_jit_create(ok_step, NULL, 0, &jo, &jit));
  EXPECT_OK(encore_jit_destroy(jit));

  encore_buffer_destroy(s.c);
  encore_buffer_destroy(s.x);
  encore_kernel_destroy(s.add1);
  encore_kernel_destroy(s.set1);
  encore_program_destroy(prog);
  encore_device_destroy(s.dev);
  return checks_report(0);
}
