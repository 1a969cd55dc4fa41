/* A consumer of an installed (or subproject) encore that includes only encore/encore.h: built by
 * .ci/consumers.sh with pkg-config and as a meson subproject. Compiles a kernel, captures one
 * launch, replays it, checks the result. Exit 0 on success. */
#include <encore/encore.h>
#include <stdio.h>

#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    encore_status st_ = (call);                                                                         \
    if (st_ != ENCORE_OK) {                                                                             \
      fprintf(stderr, "%s -> %s: %s\n", #call, encore_status_name(st_), encore_last_error());           \
      return 1;                                                                                         \
    }                                                                                                   \
  } while (0)

int main(void) {
  encore_device dev;
  encore_program prog;
  encore_kernel k;
  encore_buffer x;
  encore_capture cap;
  encore_unit unit;
  const char *id, *name;
  float host[256] = {0};
  size_t n = 256;
  int ticks = 5, is_null;
  CHECK(encore_device_open(NULL, &dev));
  CHECK(encore_device_info(dev, &id, &name));
  is_null = id[0] == 'N';
  CHECK(encore_program_compile(dev, "__kernel void add1(__global float* x) { x[get_global_id(0)] += 1.0f; }", NULL, &prog));
  CHECK(encore_kernel_create(prog, "add1", &k));
  CHECK(encore_buffer_alloc(dev, ENCORE_F32, 256, &x));
  CHECK(encore_buffer_copyin(x, host, sizeof host));
  {
    encore_arg arg = encore_arg_inout(x);
    CHECK(encore_capture_begin(NULL, &cap));
    CHECK(encore_launch(dev, k, &n, NULL, 1, &arg, 1));
    CHECK(encore_capture_end(cap, &unit));
  }
  for (int i = 1; i < ticks; ++i) CHECK(encore_unit_run(unit, NULL, 0, NULL));
  CHECK(encore_buffer_copyout(x, host, sizeof host));
  printf("C consumer: encore %s on %s (%s): x[0] = %g\n", encore_version(), id, name, host[0]);
  CHECK(encore_unit_destroy(unit));
  CHECK(encore_buffer_destroy(x));
  CHECK(encore_kernel_destroy(k));
  CHECK(encore_program_destroy(prog));
  CHECK(encore_device_destroy(dev));
  return is_null || host[0] == (float)ticks ? 0 : 1;
}
