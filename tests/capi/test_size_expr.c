/* Launch-size expressions from C: encore_size_expr_parse, its range and value, a launch sized by
 * one eagerly and captured (replay == eager over many variable values on OpenCL; the sizes only on
 * NULL), and the errors: a syntax error, an unknown name, an expression a capture refuses. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "__kernel void mark(__global int* o, int tag) { o[get_global_id(0)] = tag + (int)get_global_size(0); }\n"
    "__kernel void clear(__global int* o) { o[get_global_id(0)] = -1; }\n";

enum { kCells = 512 };

static int run_on(const char* name, encore_device dev, encore_program prog) {
  encore_kernel mark = NULL, clear = NULL;
  encore_buffer a = NULL, b = NULL;
  encore_variable n = NULL, i = NULL, vars[2];
  encore_size_expr blocked = NULL, bad = NULL, clamped = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL;
  int64_t lo = 0, hi = 0, v = 0;
  size_t cells = kCells, ns = 0, is = 0;
  int real = name == NULL;
  int32_t want[kCells], got[kCells];
  REQUIRE_OK(encore_kernel_create(prog, "mark", &mark));
  REQUIRE_OK(encore_kernel_create(prog, "clear", &clear));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, kCells, &a));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_I32, kCells, &b));
  REQUIRE_OK(encore_variable_create_int("n", 16, 256, &n));
  REQUIRE_OK(encore_variable_create_int("i", 0, 256, &i));
  vars[0] = n;
  vars[1] = i;

  /* parsing, range, value */
  EXPECT_ERR(encore_size_expr_parse("16*((n-i)/16-", vars, 2, &bad), ENCORE_ERROR_INVALID_ARGUMENT, "position 13");
  EXPECT_TRUE(bad == NULL);
  EXPECT_ERR(encore_size_expr_parse("n*k", vars, 2, &bad), ENCORE_ERROR_INVALID_ARGUMENT, "\"k\"");
  EXPECT_ERR(encore_size_expr_parse("n", NULL, 2, &bad), ENCORE_ERROR_INVALID_ARGUMENT, "vars");
  REQUIRE_OK(encore_size_expr_parse("16*((n-i)/16-1)", vars, 2, &bad));
  EXPECT_OK(encore_size_expr_range(bad, &lo, &hi));
  EXPECT_TRUE(lo < 0 && hi == 16 * (256 / 16 - 1));
  REQUIRE_OK(encore_size_expr_parse("max(16*((n-i)/16-1), 0)", vars, 2, &clamped));
  EXPECT_OK(encore_size_expr_range(clamped, &lo, &hi));
  EXPECT_TRUE(lo == 0 && hi == 240);
  REQUIRE_OK(encore_variable_bind_int(n, 200, NULL));
  REQUIRE_OK(encore_variable_bind_int(i, 32, NULL));
  EXPECT_OK(encore_size_expr_eval(clamped, &v));
  EXPECT_TRUE(v == 16 * ((200 - 32) / 16 - 1));
  REQUIRE_OK(encore_size_expr_parse("n / (i - 32)", vars, 2, &blocked));
  EXPECT_ERR(encore_size_expr_eval(blocked, &v), ENCORE_ERROR_INVALID_ARGUMENT, "divides by zero");
  EXPECT_ERR(encore_size_expr_range(blocked, &lo, &hi), ENCORE_ERROR_INVALID_ARGUMENT, "divide by zero");
  EXPECT_OK(encore_size_expr_destroy(blocked));
  blocked = NULL;

  /* a capture refuses an expression some values in the ranges make negative, and stays usable */
  {
    encore_size g = encore_size_of_expr(bad);
    encore_arg args[2] = {encore_arg_buffer(a), encore_arg_i32(1)};
    encore_size with_var = encore_size_of_expr(bad);
    with_var.var = n;
    EXPECT_ERR(encore_launch_sized(dev, mark, &with_var, NULL, 1, args, 2, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "no var");
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_OK(encore_launch_sized(dev, mark, &g, NULL, 1, args, 2, NULL)); /* fine for n = 200, i = 32 */
    EXPECT_ERR(encore_capture_end(cap, &unit), ENCORE_ERROR_JIT, "16*((n-i)/16-1)");
    cap = NULL;
    EXPECT_TRUE(unit == NULL);
  }

  /* clamped: captured once, replayed for every i; equal to eager launches */
  {
    encore_size g = encore_size_of_expr(clamped), all = encore_size_of(kCells);
    encore_arg ca[1] = {encore_arg_buffer(a)}, cb[1] = {encore_arg_buffer(b)};
    encore_arg ma[2] = {encore_arg_buffer(a), encore_arg_i32(7)}, mb[2] = {encore_arg_buffer(b), encore_arg_i32(7)};
    int64_t vi;
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_OK(encore_launch_sized(dev, clear, &all, NULL, 1, ca, 1, NULL));
    EXPECT_OK(encore_launch_sized(dev, mark, &g, NULL, 1, ma, 2, NULL));
    REQUIRE_OK(encore_capture_end(cap, &unit));
    cap = NULL;
    REQUIRE_OK(encore_unit_variable_slot(unit, n, &ns));
    REQUIRE_OK(encore_unit_variable_slot(unit, i, &is));
    for (vi = 0; vi <= 256; vi += 16) {
      REQUIRE_OK(encore_unit_bind_var_int(unit, is, vi));
      REQUIRE_OK(encore_unit_run_and_wait(unit, NULL));
      REQUIRE_OK(encore_variable_bind_int(i, vi, NULL));
      EXPECT_OK(encore_launch(dev, clear, &cells, NULL, 1, cb, 1));
      EXPECT_OK(encore_launch_sized(dev, mark, &g, NULL, 1, mb, 2, NULL));
      if (real) {
        REQUIRE_OK(encore_buffer_read(a, 0, got, kCells));
        REQUIRE_OK(encore_buffer_read(b, 0, want, kCells));
        EXPECT_TRUE(memcmp(got, want, sizeof got) == 0);
        /* 16*((200-vi)/16-1) items marked, the rest cleared */
        EXPECT_TRUE(got[0] == (vi <= 168 ? 7 + 16 * ((200 - vi) / 16 - 1) : -1));
      }
    }
    EXPECT_OK(encore_unit_destroy(unit));
    unit = NULL;
  }
  EXPECT_OK(encore_device_synchronize(dev));
  EXPECT_OK(encore_size_expr_destroy(bad));
  EXPECT_OK(encore_size_expr_destroy(clamped));
  EXPECT_ERR(encore_size_expr_destroy(clamped), ENCORE_ERROR_INVALID_HANDLE, NULL);
  EXPECT_OK(encore_variable_destroy(n));
  EXPECT_OK(encore_variable_destroy(i));
  EXPECT_OK(encore_buffer_destroy(a));
  EXPECT_OK(encore_buffer_destroy(b));
  EXPECT_OK(encore_kernel_destroy(mark));
  EXPECT_OK(encore_kernel_destroy(clear));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
