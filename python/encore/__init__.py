"""encore: capture and replay of OpenCL work, from Python.

    import numpy as np, encore
    dev = encore.Device.open()                       # first GPU, else first OpenCL device; "NULL": no-op device
    k = dev.compile("__kernel void add1(__global float* x) { x[get_global_id(0)] += 1; }").kernel("add1")
    x = dev.alloc(np.zeros(1024, np.float32))        # or dev.alloc(np.float32, 1024)

    @encore.jit                                      # call 0 warms up, call 1 records, then replays
    def step(x):
        dev.launch(k, x.count, None, x)
        return x

    for _ in range(100):
        step(x)
    print(x.copyout()[:4])                           # [100. 100. 100. 100.]

docs/python.md is the guide; the names mirror the C++ API (include/encore/*.hpp).
"""
from ._encore import (  # noqa: F401  (the public names)
    ArgumentError, Buffer, BufferArg, BoundVar, ByValue, Capture, CompileError, Device, DeviceError, DType, Error, Event,
    ExecutionUnit, JitError, Kernel, KernelParam, Key, LoadedUnit, LocalMem, OpenCLError, Program, Size, TinyJit, Variable,
    VariableAs, WorkloadError, by_value, ceil_div, dtype, has_saved_units, in_, inout, key, load_unit, numpy_dtype, out, save_unit,
    set_log_sink, size_max, size_min,
)

__all__ = [
    "ArgumentError", "Buffer", "BufferArg", "BoundVar", "ByValue", "Capture", "CompileError", "Device", "DeviceError",
    "DType", "Error", "Event", "ExecutionUnit", "JitError", "Kernel", "KernelParam", "Key", "LoadedUnit", "LocalMem",
    "OpenCLError", "Program", "Size", "TinyJit", "Variable", "VariableAs", "WorkloadError", "by_value", "ceil_div",
    "dtype", "has_saved_units", "in_", "inout", "jit", "key", "load_unit", "numpy_dtype", "out", "save_unit",
    "set_log_sink", "size_max", "size_min",
]


def jit(fn=None, **options):
    """`@encore.jit` or `@encore.jit(max_units=1, ...)`: wraps a step function in a TinyJit.

    The step's arguments are Buffers, numpy arrays (host inputs: a copyin from one replays with
    each call's bytes), bound Variables (`var.bind(v)`), `encore.key(v)` and int/float/bool
    constants (which must keep their captured values). It returns None, a Buffer, or a tuple or
    list of Buffers; replay returns the SAME buffers every call, overwritten in place.
    Options: enabled, prune, plan, max_in_flight, min_items_in_flight, concurrent, allow_copyout, check_closure,
    check_access, fresh_outputs, verify, max_units (default: from ENCORE_JIT / ENCORE_VERIFY, as in C++).
    """
    import functools

    def wrap(f):
        j = TinyJit(f, **options)
        functools.update_wrapper(j, f)
        return j

    return wrap if fn is None else wrap(fn)
