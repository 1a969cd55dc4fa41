#pragma once
// Which thread is inside a native callback (encore::opencl::enqueue_native's fn). The backend's
// interop sets it around the callback; the layers above ask it (exec/flow.hpp refuses host items,
// branches and loops there). It lives here, at the base, so the backend needs nothing above it.
//   { detail::NativeFnCall in; fn(queue); }   // in_native_fn() is true inside
namespace encore::detail {

struct NativeFnCall {
  NativeFnCall() noexcept;
  ~NativeFnCall();
  NativeFnCall(const NativeFnCall&) = delete;
  NativeFnCall& operator=(const NativeFnCall&) = delete;
};
bool in_native_fn() noexcept;

}  // namespace encore::detail
