/* An engine's frame through the encore C API.
 *
 * The "engine" owns its OpenCL context, a compute queue and a render queue (plain OpenCL calls),
 * and the particle buffer. encore adopts the compute queue and the buffer, records one frame of a
 * particle update (integrate with gravity, bounce off a floor; `dt` is a float variable that
 * changes every tick) and replays it for many ticks. It records two frames and checks the second
 * against the first (encore_capture_check_against): the explicit path's protection against a
 * per-frame value passed as a constant, which replay would freeze. Each tick the renderer copies the particles
 * into its vertex buffer on the render queue after encore's completion event, and the next replay
 * waits on the renderer's event: no clFinish anywhere on the hot path.
 *
 * Prints ticks per second eager vs replay and checks every particle against a host simulation
 * (kernels and host both without FMA contraction, so the results agree to the bit in practice).
 * Exit status: 0 agree, 1 mismatch, 2 setup error.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <encore/encore.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NUM_PARTICLES 8192
#define EAGER_TICKS 2000
#define REPLAY_TICKS 2000
#define GRAVITY -9.81f
#define RESTITUTION 0.8f

static const char* kFrameSource =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "// p[i] = (x, y, vx, vy)\n"
    "__kernel void integrate(__global float4* p, float dt) {\n"
    "  size_t i = get_global_id(0);\n"
    "  float4 q = p[i];\n"
    "  q.w = q.w + (-9.81f) * dt;\n"
    "  q.x = q.x + q.z * dt;\n"
    "  q.y = q.y + q.w * dt;\n"
    "  p[i] = q;\n"
    "}\n"
    "__kernel void collide(__global float4* p, float restitution) {\n"
    "  size_t i = get_global_id(0);\n"
    "  float4 q = p[i];\n"
    "  if (q.y < 0.0f) { q.y = -q.y * restitution; q.w = -q.w * restitution; }\n"
    "  p[i] = q;\n"
    "}\n";

#define CL_CHECK(call)                                                             \
  do {                                                                             \
    cl_int err_ = (call);                                                          \
    if (err_ != CL_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, err_); \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)
#define ENCORE_CHECK(call)                                                                    \
  do {                                                                                        \
    encore_status st_ = (call);                                                               \
    if (st_ != ENCORE_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s -> %s\n  %s\n", __FILE__, __LINE__, #call, encore_status_name(st_), \
              encore_last_error());                                                           \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)

typedef struct Frame {
  encore_device dev;
  encore_kernel integrate, collide;
  encore_variable dt;
  encore_buffer particles;
} Frame;

/* One frame, issued eagerly through encore (recorded when a capture is active). */
static void issue_frame(const Frame* f) {
  size_t n = NUM_PARTICLES;
  encore_arg a1[2] = {encore_arg_inout(f->particles), encore_arg_variable(f->dt)};
  encore_arg a2[2] = {encore_arg_inout(f->particles), encore_arg_f32(RESTITUTION)};
  ENCORE_CHECK(encore_launch(f->dev, f->integrate, &n, NULL, 1, a1, 2));
  ENCORE_CHECK(encore_launch(f->dev, f->collide, &n, NULL, 1, a2, 2));
}

/* The same frame on the host, in the same float operations. */
static void host_frame(float* p, float dt) {
  for (int i = 0; i < NUM_PARTICLES; ++i) {
    float* q = p + 4 * i;
    q[3] = q[3] + GRAVITY * dt;
    q[0] = q[0] + q[2] * dt;
    q[1] = q[1] + q[3] * dt;
    if (q[1] < 0.0f) {
      q[1] = -q[1] * RESTITUTION;
      q[3] = -q[3] * RESTITUTION;
    }
  }
}

static float dt_of(int tick) { return (float)((1.0 / 60.0) * (1.0 + 0.25 * sin(tick * 0.1))); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The engine's own OpenCL setup: first GPU, else the first device of any type. */
static cl_device_id pick_device(void) {
  cl_platform_id platforms[16];
  cl_uint np = 0;
  cl_device_id found = NULL;
  CL_CHECK(clGetPlatformIDs(16, platforms, &np));
  for (int pass = 0; pass < 2 && !found; ++pass)
    for (cl_uint i = 0; i < np && !found; ++i) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(platforms[i], pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, 1, &found, &nd) != CL_SUCCESS)
        found = NULL;
    }
  if (!found) {
    fprintf(stderr, "no OpenCL device\n");
    exit(2);
  }
  return found;
}

/* The renderer: copies the particles into its vertex buffer after `after`; returns its event. */
static cl_event render(cl_command_queue render_q, cl_mem particles, cl_mem vbo, cl_event after) {
  cl_event done = NULL;
  CL_CHECK(clEnqueueCopyBuffer(render_q, particles, vbo, 0, 0, sizeof(float) * 4 * NUM_PARTICLES, after ? 1 : 0,
                               after ? &after : NULL, &done));
  CL_CHECK(clFlush(render_q));
  return done;
}

/* An in-order queue through the entry point the device offers: clCreateCommandQueueWithProperties
 * exists from OpenCL 2.0 on (a 1.2 ICD loader spins forever in it), clCreateCommandQueue before. */
static cl_command_queue make_queue(cl_context ctx, cl_device_id dev, cl_int* err) {
  char ver[128] = {0};
  int major = 0, minor = 0;
  clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL);
  if (sscanf(ver, "OpenCL %d.%d", &major, &minor) == 2 && major >= 2) return clCreateCommandQueueWithProperties(ctx, dev, NULL, err);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return clCreateCommandQueue(ctx, dev, 0, err);
#pragma GCC diagnostic pop
}

int main(void) {
  static float init[4 * NUM_PARTICLES], host[4 * NUM_PARTICLES], got[4 * NUM_PARTICLES], drawn[4 * NUM_PARTICLES];
  cl_int err = CL_SUCCESS;
  cl_device_id cl_dev = pick_device();
  cl_context ctx = clCreateContext(NULL, 1, &cl_dev, NULL, NULL, &err);
  CL_CHECK(err);
  cl_command_queue compute_q = make_queue(ctx, cl_dev, &err);
  CL_CHECK(err);
  cl_command_queue render_q = make_queue(ctx, cl_dev, &err);
  CL_CHECK(err);
  for (int i = 0; i < NUM_PARTICLES; ++i) {
    init[4 * i + 0] = (float)(i % 128) / 64.0f - 1.0f;         /* x */
    init[4 * i + 1] = 0.5f + (float)((i * 37) % 1000) / 400.0f; /* y: above the floor */
    init[4 * i + 2] = (float)((i * 13) % 21 - 10) / 10.0f;      /* vx */
    init[4 * i + 3] = (float)((i * 7) % 11) / 5.0f;             /* vy */
  }
  memcpy(host, init, sizeof init);
  cl_mem particles_mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
  CL_CHECK(err);
  cl_mem vbo = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof init, NULL, &err);
  CL_CHECK(err);

  /* encore adopts the engine's queue and buffer */
  Frame f;
  encore_program prog = NULL;
  const char *id = NULL, *name = NULL;
  ENCORE_CHECK(encore_device_adopt_queue(compute_q, &f.dev));
  ENCORE_CHECK(encore_device_info(f.dev, &id, &name));
  ENCORE_CHECK(encore_buffer_adopt(f.dev, particles_mem, ENCORE_F32, 4 * NUM_PARTICLES, &f.particles));
  ENCORE_CHECK(encore_program_compile(f.dev, kFrameSource, "-cl-fp32-correctly-rounded-divide-sqrt", &prog));
  ENCORE_CHECK(encore_kernel_create(prog, "integrate", &f.integrate));
  ENCORE_CHECK(encore_kernel_create(prog, "collide", &f.collide));
  ENCORE_CHECK(encore_variable_create_f32("dt", 0.0, 0.1, &f.dt));
  printf("engine_frame: %d particles on %s (%s), encore %s\n", NUM_PARTICLES, id, name, encore_version());

  int tick = 0;
  cl_event drawn_ev = NULL;

  /* ---- eager: every tick issues its launches again */
  double t0 = now_s();
  for (int k = 0; k < EAGER_TICKS; ++k, ++tick) {
    cl_event frame_done = NULL;
    if (drawn_ev) { /* the engine orders its own queue after the renderer */
      CL_CHECK(clEnqueueBarrierWithWaitList(compute_q, 1, &drawn_ev, NULL));
      CL_CHECK(clReleaseEvent(drawn_ev));
    }
    ENCORE_CHECK(encore_variable_bind_float(f.dt, dt_of(tick), NULL));
    issue_frame(&f);
    CL_CHECK(clEnqueueMarkerWithWaitList(compute_q, 0, NULL, &frame_done));
    CL_CHECK(clFlush(compute_q));
    drawn_ev = render(render_q, particles_mem, vbo, frame_done);
    CL_CHECK(clReleaseEvent(frame_done));
  }
  CL_CHECK(clWaitForEvents(1, &drawn_ev));
  double eager_s = now_s() - t0;

  /* ---- capture two frames (they run too), after the renderer's last copy. An explicit capture
   * sees one frame and cannot tell a per-frame value from a constant by itself: the second capture
   * is compared with the first (encore_capture_check_against), so a frame that passed dt as a
   * plain float (encore_arg_f32(dt)) instead of the variable would fail here with ENCORE_ERROR_JIT
   * instead of replaying one frozen dt. (encore_jit does this by itself with its calls 0 and 1.) */
  encore_capture cap = NULL;
  encore_unit previous = NULL, unit = NULL;
  size_t dt_slot = 0;
  CL_CHECK(clEnqueueBarrierWithWaitList(compute_q, 1, &drawn_ev, NULL));
  CL_CHECK(clReleaseEvent(drawn_ev));
  drawn_ev = NULL;
  for (int frame = 0; frame < 2; ++frame, ++tick) {
    ENCORE_CHECK(encore_capture_begin(NULL, &cap));
    if (previous) ENCORE_CHECK(encore_capture_check_against(cap, previous));
    ENCORE_CHECK(encore_variable_bind_float(f.dt, dt_of(tick), NULL));
    issue_frame(&f);
    ENCORE_CHECK(encore_capture_end(cap, &unit));
    if (previous) ENCORE_CHECK(encore_unit_destroy(previous));
    previous = unit;
  }
  ENCORE_CHECK(encore_unit_variable_slot(unit, f.dt, &dt_slot));

  /* ---- replay: wait on the renderer's event, hand encore's completion to the renderer */
  encore_event frame_done = NULL;
  t0 = now_s();
  for (int k = 0; k < REPLAY_TICKS; ++k, ++tick) {
    encore_event wait = NULL;
    struct _cl_event* done_cl = NULL;
    if (drawn_ev) ENCORE_CHECK(encore_event_adopt(f.dev, drawn_ev, &wait));
    ENCORE_CHECK(encore_unit_bind_var_float(unit, dt_slot, dt_of(tick)));
    if (frame_done) ENCORE_CHECK(encore_event_destroy(frame_done));
    ENCORE_CHECK(encore_unit_run(unit, wait ? &wait : NULL, wait ? 1 : 0, &frame_done));
    if (wait) ENCORE_CHECK(encore_event_destroy(wait));
    if (drawn_ev) CL_CHECK(clReleaseEvent(drawn_ev));
    ENCORE_CHECK(encore_event_native(frame_done, &done_cl));
    drawn_ev = render(render_q, particles_mem, vbo, done_cl);
  }
  CL_CHECK(clWaitForEvents(1, &drawn_ev));
  double replay_s = now_s() - t0;

  /* read back after encore's completion event */
  ENCORE_CHECK(encore_event_wait(frame_done));
  ENCORE_CHECK(encore_event_destroy(frame_done));
  ENCORE_CHECK(encore_buffer_copyout(f.particles, got, sizeof got));
  CL_CHECK(clEnqueueReadBuffer(render_q, vbo, CL_TRUE, 0, sizeof drawn, drawn, 0, NULL, NULL));
  CL_CHECK(clReleaseEvent(drawn_ev));

  for (int k = 0; k < tick; ++k) host_frame(host, dt_of(k));
  double max_diff = 0;
  int bit_exact = 0, worst = 0;
  for (int i = 0; i < 4 * NUM_PARTICLES; ++i) {
    double d = fabs((double)got[i] - (double)host[i]);
    if (d > max_diff) max_diff = d, worst = i;
    bit_exact += memcmp(&got[i], &host[i], sizeof(float)) == 0;
  }
  int drawn_ok = memcmp(drawn, got, sizeof got) == 0;

  encore_unit_stats st;
  ENCORE_CHECK(encore_unit_get_stats(unit, &st));
  printf("eager:  %8.0f ticks/s (%d ticks)\n", EAGER_TICKS / eager_s, EAGER_TICKS);
  printf("replay: %8.0f ticks/s (%d ticks, %zu items per frame)\n", REPLAY_TICKS / replay_s, REPLAY_TICKS, st.items_replayed);
  printf("%d ticks vs the host: %d of %d floats bit-exact, max |diff| %.3g; renderer's copy %s\n", tick, bit_exact,
         4 * NUM_PARTICLES, max_diff, drawn_ok ? "matches" : "DIFFERS");

  ENCORE_CHECK(encore_unit_destroy(unit));
  ENCORE_CHECK(encore_variable_destroy(f.dt));
  ENCORE_CHECK(encore_kernel_destroy(f.integrate));
  ENCORE_CHECK(encore_kernel_destroy(f.collide));
  ENCORE_CHECK(encore_program_destroy(prog));
  ENCORE_CHECK(encore_buffer_destroy(f.particles));
  ENCORE_CHECK(encore_device_destroy(f.dev));
  clReleaseMemObject(vbo);
  clReleaseMemObject(particles_mem);
  clReleaseCommandQueue(render_q);
  clReleaseCommandQueue(compute_q);
  clReleaseContext(ctx);

  if (max_diff > 1e-3 || !drawn_ok) {
    fprintf(stderr, "MISMATCH: element %d (particle %d) is %.9g, the host computed %.9g\n", worst, worst / 4,
            (double)got[worst], (double)host[worst]);
    return 1;
  }
  return 0;
}
