// encore.h from C++ built with -fno-exceptions -fno-rtti, as many engines are: the header must
// compile, and errors come back as statuses (nothing is thrown into this TU).
#include <cstdio>
#include <cstring>

#include "encore/encore.h"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "this test must be compiled with -fno-exceptions"
#endif
#if defined(__GXX_RTTI) || defined(__cpp_rtti)
#error "this test must be compiled with -fno-rtti"
#endif

int main() {
  int failed = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "FAILED %s (last error: %s)\n", what, encore_last_error());
      ++failed;
    }
  };
  encore_device dev = nullptr;
  expect(encore_device_open("NULL", &dev) == ENCORE_OK, "open the NULL device");
  encore_buffer b = nullptr;
  expect(encore_buffer_alloc(dev, ENCORE_I32, 16, &b) == ENCORE_OK, "alloc");
  int host[16] = {1, 2, 3};
  expect(encore_buffer_copyin(b, host, sizeof host) == ENCORE_OK, "copyin");
  expect(encore_buffer_copyin(b, host, 3) == ENCORE_ERROR_INVALID_ARGUMENT, "copyin with a wrong size is an error");
  expect(std::strstr(encore_last_error(), "expected 64") != nullptr, "the message says what was expected");
  expect(encore_program_compile(dev, nullptr, nullptr, nullptr) == ENCORE_ERROR_INVALID_ARGUMENT, "NULL out");
  encore_arg a = encore_arg_buffer(b);
  expect(a.kind == ENCORE_ARG_BUFFER && a.value.buffer == b, "argument helpers");
  expect(encore_buffer_destroy(b) == ENCORE_OK, "destroy the buffer");
  expect(encore_buffer_destroy(b) == ENCORE_ERROR_INVALID_HANDLE, "a destroyed handle is an error");
  expect(encore_device_destroy(dev) == ENCORE_OK, "destroy the device");
  std::printf("%d failed\n", failed);
  return failed ? 1 : 0;
}
