/* An engine in C returns from main with work still queued and its handles never destroyed (the
 * usual shape: the process exit cleans up): launches in new launch configurations, each one a
 * kernel-variant compile on PoCL's worker thread, none waited for. Exit used to destroy the
 * driver's statics under that compile (SIGABRT or SEGV in 1 of 5 to 3 of 4 runs, issue 17.5).
 * A marker after the work prints "drained" when the work completed: exit must wait for it (encore's
 * exit drain finishes the queues it owns). Exit status 0 when the process ends cleanly; the meson
 * test runs it many times and expects "drained" every time. */
#include <CL/cl.h>
#include <encore/encore.h>
#include <stdio.h>
#include <unistd.h>

#define N (1 << 18)

static void CL_CALLBACK drained(cl_event ev, cl_int status, void* user) {
  (void)ev;
  (void)user;
  if (status == CL_COMPLETE && write(1, "drained\n", 8) != 8) _exit(3);
}

static int check(encore_status s, const char* what) {
  if (s != ENCORE_OK) fprintf(stderr, "%s: %s\n", what, encore_last_error());
  return s != ENCORE_OK;
}

int main(void) {
  encore_device dev;
  encore_program prog;
  encore_kernel inc;
  encore_buffer y;
  static float host[N];
  size_t global = N;
  static const size_t locals[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  if (check(encore_device_open(NULL, &dev), "encore_device_open")) return 2;
  if (check(encore_program_compile(dev, "__kernel void inc(__global float* y, float a) { float v = y[get_global_id(0)]; for (int i = 0; i < 256; ++i) v = v * 0.5f + a; y[get_global_id(0)] = v; }", NULL, &prog),
            "encore_program_compile") ||
      check(encore_kernel_create(prog, "inc", &inc), "encore_kernel_create") ||
      check(encore_buffer_alloc(dev, ENCORE_F32, N, &y), "encore_buffer_alloc") ||
      check(encore_buffer_copyin(y, host, sizeof host), "encore_buffer_copyin"))
    return 2;
  for (size_t i = 0; i < sizeof locals / sizeof locals[0]; ++i) {
    encore_arg args[2] = {encore_arg_inout(y), encore_arg_f32(1.0f)};
    if (check(encore_launch(dev, inc, &global, &locals[i], 1, args, 2), "encore_launch")) return 2;
  }
  {
    cl_command_queue q = NULL;
    cl_event done = NULL;
    if (check(encore_device_native(dev, NULL, NULL, &q), "encore_device_native")) return 2;
    if (clEnqueueMarkerWithWaitList(q, 0, NULL, &done) != CL_SUCCESS || clSetEventCallback(done, CL_COMPLETE, drained, NULL) != CL_SUCCESS)
      return 2;
    clFlush(q);
  }
  return 0; /* no wait, no destroy */
}
