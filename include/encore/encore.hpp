#pragma once
// The umbrella header: everything public except the OpenCL interop (encore/opencl.hpp).
//   #include <encore/encore.hpp>
#include "encore/buffer.hpp"
#include "encore/control.hpp"
#include "encore/device.hpp"
#include "encore/dtype.hpp"
#include "encore/error.hpp"
#include "encore/event.hpp"
#include "encore/exec_item.hpp"
#include "encore/execution_unit.hpp"
#include "encore/jit.hpp"
#include "encore/log.hpp"
#include "encore/memory_planner.hpp"
#include "encore/profile.hpp"
#include "encore/program.hpp"
#include "encore/variable.hpp"
