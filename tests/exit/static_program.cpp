// Holds a Device, a Program, a Kernel and a Buffer in statics, as tests/support/jit_env.hpp and many
// users do: they are destroyed during exit, after the driver may have torn down its own state,
// and must make no driver call then (issue 16.8). Work is left queued too: a marker after it prints
// "drained" when it completed, which exit must wait for (17.5). argv[1]: elements (default 2^18;
// small for a simulator such as Oclgrind, where the statics' case fails without the fix).
#include <CL/cl.h>
#include <unistd.h>

#include <cstdlib>

#include <encore/encore.hpp>
#include <encore/opencl.hpp>

namespace {
size_t g_n = size_t(1) << 18;
struct Env {
  encore::Device dev = encore::Device::open();
  encore::Program prog = dev.compile(R"(
    __kernel void inc(__global float* y) {
      float v = y[get_global_id(0)];
      for (int i = 0; i < 256; ++i) v = v * 0.5f + 1.0f;
      y[get_global_id(0)] = v;
    })");
  encore::Kernel inc = prog.kernel("inc");
  encore::Buffer y = dev.alloc<float>(g_n);
};
Env& env() {
  static Env e;
  return e;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_n = std::strtoul(argv[1], nullptr, 10);
  Env& e = env();
  e.y.copyin(std::vector<float>(g_n, 0.f));
  for (size_t l : {1, 2, 4, 8, 16, 32, 64, 128}) e.dev.launch(e.inc, {g_n}, {l}, e.y);
  cl_event done = nullptr;
  cl_command_queue q = encore::opencl::queue(e.dev);
  if (clEnqueueMarkerWithWaitList(q, 0, nullptr, &done) != CL_SUCCESS ||
      clSetEventCallback(
          done, CL_COMPLETE, [](cl_event, cl_int st, void*) { if (st == CL_COMPLETE && write(1, "drained\n", 8) != 8) _exit(3); }, nullptr) !=
          CL_SUCCESS)
    return 2;
  clFlush(q);
  static encore::Buffer late = e.dev.alloc<float>(256);  // constructed after the device opened
  late.copyin(std::vector<float>(256, 1.f));
  return 0;
}
