/* A tiny C test harness for the C API tests: counts checks, prints failures, exits non-zero. */
#ifndef ENCORE_TESTS_CAPI_CHECK_H
#define ENCORE_TESTS_CAPI_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encore/encore.h"

static int checks_passed, checks_failed;

/* A call must give `want`; on an error status the message must be non-empty, start with the
 * function's name and contain `substr` (NULL: anything). */
static inline void check_status(const char* expr, encore_status got, encore_status want, const char* substr, const char* file,
                         int line) {
  const char* msg = encore_last_error();
  int ok = got == want;
  if (ok && want != ENCORE_OK) {
    char fn[64];
    size_t n = strcspn(expr, "(");
    if (n >= sizeof fn) n = sizeof fn - 1;
    memcpy(fn, expr, n);
    fn[n] = 0;
    ok = msg && strncmp(msg, fn, n) == 0 && msg[n] == ':' && (!substr || strstr(msg, substr));
  }
  if (ok) {
    ++checks_passed;
    return;
  }
  ++checks_failed;
  fprintf(stderr, "%s:%d: FAILED %s\n  expected %s%s%s%s, got %s\n  last error: %s\n", file, line, expr,
          encore_status_name(want), substr ? " with \"" : "", substr ? substr : "", substr ? "\"" : "",
          encore_status_name(got), msg ? msg : "(null)");
}

static inline void check_true(const char* expr, int value, const char* file, int line) {
  if (value) {
    ++checks_passed;
    return;
  }
  ++checks_failed;
  fprintf(stderr, "%s:%d: FAILED %s\n", file, line, expr);
}

#define EXPECT_OK(call) check_status(#call, (call), ENCORE_OK, NULL, __FILE__, __LINE__)
#define EXPECT_ERR(call, want, substr) check_status(#call, (call), (want), (substr), __FILE__, __LINE__)
#define EXPECT_TRUE(e) check_true(#e, (e) != 0, __FILE__, __LINE__)
/* Stops the test when a setup call fails: nothing after it would mean anything. */
#define REQUIRE_OK(call)                                                                          \
  do {                                                                                            \
    encore_status st_ = (call);                                                                   \
    if (st_ != ENCORE_OK) {                                                                       \
      fprintf(stderr, "%s:%d: setup failed: %s -> %s: %s\n", __FILE__, __LINE__, #call,           \
              encore_status_name(st_), encore_last_error());                                      \
      return checks_report(1);                                                                    \
    }                                                                                             \
  } while (0)

static int checks_report(int aborted) {
  printf("%d passed, %d failed%s\n", checks_passed, checks_failed, aborted ? " (stopped early)" : "");
  return checks_failed || aborted ? 1 : 0;
}

/* The main() of a test that runs once on the NULL device and once on the default device (skipped,
 * with a note, when none opens). On each it compiles `source` (NULL: no program), calls
 * test(name, dev, prog), then destroys the program and the device; a test that returns non-zero
 * (a failed REQUIRE_OK) stops the run.
 *   int main(void) { return run_on_null_and_default(kSource, run_on); } */
static inline int run_on_null_and_default(const char* source,
                                          int (*test)(const char* name, encore_device dev, encore_program prog)) {
  const char* names[2] = {"NULL", NULL};
  int i;
  for (i = 0; i < 2; ++i) {
    encore_device dev = NULL;
    encore_program prog = NULL;
    int stop;
    if (encore_device_open(names[i], &dev) != ENCORE_OK) {
      fprintf(stderr, "no device %s (%s): skipped\n", names[i] ? names[i] : "(default)", encore_last_error());
      continue;
    }
    if (source) REQUIRE_OK(encore_program_compile(dev, source, NULL, &prog));
    stop = test(names[i], dev, prog);
    if (stop) return checks_report(1);
    if (prog) EXPECT_OK(encore_program_destroy(prog));
    EXPECT_OK(encore_device_destroy(dev));
  }
  return checks_report(0);
}

#endif
