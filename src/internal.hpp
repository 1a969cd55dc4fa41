#pragma once
// Every internal header, for the files that use most of the core. Each concept has its own header;
// include that one where a file needs only it.
#include "core/allocator.hpp"
#include "core/buffer_impl.hpp"
#include "core/device_impl.hpp"
#include "core/event_impl.hpp"
#include "core/program_impl.hpp"
#include "core/scalar.hpp"
#include "core/var_state.hpp"
#include "exec/eager.hpp"
#include "exec/recorder.hpp"
#include "trace/trace.hpp"
#include "unit/view_cache.hpp"
