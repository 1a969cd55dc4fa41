#include "core/native_fn_guard.hpp"

namespace encore::detail {

namespace {
thread_local unsigned tl_in_native = 0;  // native callbacks running on this thread (nested ones count)
}

NativeFnCall::NativeFnCall() noexcept { ++tl_in_native; }
NativeFnCall::~NativeFnCall() { --tl_in_native; }
bool in_native_fn() noexcept { return tl_in_native != 0; }

}  // namespace encore::detail
