"""Per-call cost of a TinyJit replay from Python on the NULL device: the step of
replay_overhead.cpp (one kernel, 2 buffer inputs, 1 float Variable), best of rounds, ns per call.
Also the binding's floor: a bare ExecutionUnit call of the same step.
    PYTHONPATH=build/python python3 python/bench/replay_overhead.py [calls] [rounds]"""
import sys
import time

import numpy as np

import encore

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
dev = encore.Device.open("NULL")
k = dev.compile("__kernel void axpy(__global float* y, __global const float* x, float a) {"
                " size_t i = get_global_id(0); y[i] += a * x[i]; }").kernel("axpy")
a = encore.Variable.f32("a")
y, x = dev.alloc(np.float32, 1024), dev.alloc(np.float32, 1024)


@encore.jit
def step(y, x, av):
    dev.launch(k, 1024, None, y, x, a)


def best(fn):
    b = 1e30
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        b = min(b, (time.perf_counter() - t0) * 1e9 / calls)
    return b


def jit_loop():
    for _ in range(calls):
        step(y, x, a.bind(0.5))


with encore.Capture() as cap:
    cap.add_input(y)
    cap.add_input(x)
    dev.launch(k, 1024, None, y, x, a)
unit = cap.unit


def unit_loop():
    for _ in range(calls):
        unit()


def empty_loop():
    for _ in range(calls):
        pass


print(f"Python replay (@encore.jit), NULL, 2 buffers + 1 Variable: {best(jit_loop):.0f} ns per call (best of {rounds} rounds of {calls})")
print(f"Python ExecutionUnit call (unit()), NULL, same step: {best(unit_loop):.0f} ns per call")
print(f"empty Python loop: {best(empty_loop):.0f} ns per iteration")
