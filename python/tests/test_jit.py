"""TinyJit from Python: replay equals eager (NULL: copies, fills, uploads; CL: kernels), keyed
captures, Variables, host inputs from numpy arrays, the errors and their messages, threads."""
import threading

import numpy as np
import pytest

import encore

SRC = """
__kernel void scale_add(__global float* y, __global const float* x, __global const float* w, float a, int n) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] * w[i % n] + y[i];
}
__kernel void mixk(__global float* s, __global const float* y) {
  size_t i = get_global_id(0);
  s[i] = s[i] * 0.5f + y[i];
}
"""


def make_step(dev, n):
    """A step with 2 buffer inputs and a float Variable, state carried across calls (s), a
    temporary (y) and a one-time initialised weight (w)."""
    prog = dev.compile(SRC)
    k1, k2 = prog.kernel("scale_add"), prog.kernel("mixk")
    w = dev.alloc(np.linspace(0.5, 1.5, 16, dtype=np.float32))
    s = dev.alloc(np.zeros(n, np.float32))
    a = encore.Variable.f32("a")

    def step(x, z, av):
        y = dev.alloc(np.float32, n)
        dev.copy(y, z)
        dev.launch(k1, n, None, y, x, w, a, 16)
        dev.launch(k2, n, None, s, y)
        out = dev.alloc(np.float32, n)
        dev.copy(out, s)
        return out

    return step, a, s


def run_calls(dev, jit_on, calls=6, n=256):
    step, a, s = make_step(dev, n)
    j = encore.TinyJit(step, enabled=jit_on)
    rng = np.random.default_rng(5)
    xs = [dev.alloc(rng.standard_normal(n).astype(np.float32)) for _ in range(3)]
    zs = [dev.alloc(rng.standard_normal(n).astype(np.float32)) for _ in range(2)]
    outs = []
    for i in range(calls):
        r = j(xs[i % 3], zs[i % 2], a.bind(0.1 * i))
        outs.append(r.copyout())
    return outs, j, s.copyout()


def test_replay_equals_eager_bit_for_bit(dev):
    eager, _, s_eager = run_calls(dev, False)
    replay, j, s_replay = run_calls(dev, True)
    assert j.calls == 6 and j.stats["items"] > 0
    for e, r in zip(eager, replay):
        assert e.tobytes() == r.tobytes()
    assert s_eager.tobytes() == s_replay.tobytes()
    if not dev.is_null:
        assert np.abs(s_replay).sum() > 0  # the kernels ran


def test_call_counting_and_same_outputs(null):
    x = null.alloc(np.arange(8, dtype=np.int32))

    @encore.jit
    def step(x):
        y = null.alloc(np.int32, 8)
        null.copy(y, x)
        return y

    assert step.__name__ == "step"
    assert not step.next_call_replays(x)
    a = step(x)
    b = step(x)
    assert step.calls == 2 and step.next_call_replays(x)
    c, d = step(x), step(x)
    assert c == d and c == b  # replay returns the capture's output, overwritten in place
    assert a != b
    assert d.copyout().tolist() == list(range(8))


def test_output_shapes(null):
    x = null.alloc(np.zeros(4, np.float32))
    tup = encore.jit(lambda x: (null.fill(x, 1), (x, x))[1])
    lst = encore.jit(lambda x: (null.fill(x, 1), [x])[1])
    non = encore.jit(lambda x: null.fill(x, 1))
    for _ in range(4):
        assert isinstance(tup(x), tuple) and len(tup(x)) == 2
        assert isinstance(lst(x), list)
        assert non(x) is None


def test_keyed_captures(null):
    n = 16
    x = null.alloc(np.arange(n, dtype=np.float32))
    acc = null.alloc(np.zeros(n, np.float32))
    ones = null.alloc(np.ones(n, np.float32))

    def step(x, k):
        # the key picks the work: each value its own unit
        null.copy(acc, x if k.value == 0 else ones)
        return acc

    j = encore.TinyJit(step)
    eager = encore.TinyJit(step, enabled=False)
    for i in range(12):
        k = encore.key(i % 3 == 0)
        assert j(x, k).copyout().tobytes() == eager(x, k).copyout().tobytes()
    assert len(j.units()) == 2
    assert all(u["calls"] >= 2 for u in j.units())


def test_variable_in_launch_size_and_scalar(cl):
    k = cl.compile("__kernel void put(__global int* y, int v) { y[get_global_id(0)] = v; }").kernel("put")
    n = encore.Variable("n", 1, 64)
    y = cl.alloc(np.int32, 64)

    @encore.jit
    def step(y, nv):
        cl.launch(k, n, None, y, n)

    for v in [5, 9, 3, 64, 1]:
        cl.fill(y, -1)
        step(y, n.bind(v))
        got = y.copyout()
        assert (got[:v] == v).all() and (got[v:] == -1).all()
    with pytest.raises(encore.ArgumentError, match="n"):
        step(y, n.bind(65))


def test_host_inputs_from_numpy(null):
    n = 32
    out = null.alloc(np.int32, n)

    @encore.jit
    def step(idx, out):
        t = null.alloc(np.int32, n)
        t.copyin(idx)  # a host input: replayed with each call's bytes
        null.copy(out, t)

    rng = np.random.default_rng(1)
    for i in range(6):
        idx = rng.integers(0, 1000, n).astype(np.int32)
        step(idx, out)
        assert out.copyout().tolist() == idx.tolist()
    # a strided array is made contiguous first: still a host input
    big = np.arange(2 * n, dtype=np.int32)
    step(big[::2], out)
    assert out.copyout().tolist() == list(range(0, 2 * n, 2))
    assert step.calls == 7


def test_argument_kinds_by_position_never_share_a_unit(null):
    a = null.alloc(np.zeros(4, np.int32))
    h = np.arange(4, dtype=np.int32)

    def step(p, q):
        buf, arr = (p, q) if isinstance(p, encore.Buffer) else (q, p)
        buf.copyin(arr)

    j = encore.TinyJit(step)
    for _ in range(3):
        j(a, h)
        j(h, a)
    assert len(j.units()) == 2


def test_scalar_constant_that_changes_is_a_jit_error(null):
    x = null.alloc(np.zeros(4, np.float32))
    j = encore.jit(lambda x, c: null.fill(x, c))
    j(x, 1.5), j(x, 1.5), j(x, 1.5)
    with pytest.raises(encore.JitError):
        j(x, 2.5)
    j(x, 1.5)  # still usable


def test_max_units_one_names_the_argument(null):
    j = encore.TinyJit(lambda x: (null.fill(x, 0), x)[1], max_units=1)
    a, b = null.alloc(np.float32, 8), null.alloc(np.float32, 9)
    for _ in range(3):
        j(a)
    with pytest.raises(encore.JitError, match=r"f32\[9\]"):
        j(b)


def test_step_errors(null):
    x = null.alloc(np.zeros(4, np.float32))

    def bad(x):
        raise ValueError("from the step")

    j = encore.TinyJit(bad)
    with pytest.raises(ValueError, match="from the step"):
        j(x)
    assert j.calls == 0
    with pytest.raises(TypeError, match="returns None, a Buffer"):
        encore.jit(lambda x: 3)(x)
    with pytest.raises(TypeError, match="TinyJit argument 1 is a dict"):
        encore.jit(lambda x, d: None)(x, {})
    with pytest.raises(encore.JitError, match="copyout"):
        j2 = encore.jit(lambda x: (null.fill(x, 0), x.copyout(), None)[2])
        j2(x), j2(x)
    with pytest.raises(TypeError, match="same kind of result"):
        flip = iter([None, x])
        j3 = encore.jit(lambda x: (null.fill(x, 0), next(flip))[1])
        j3(x), j3(x)


def test_unbound_variable_in_the_step_is_a_jit_error(null):
    k = null.compile("__kernel void put(__global int* y, int v) { y[0] = v; }").kernel("put")
    v = encore.Variable("v", 0, 10)
    y = null.alloc(np.int32, 1)
    v.bind(3)
    j = encore.jit(lambda y: null.launch(k, 1, None, y, v))
    with pytest.raises(encore.JitError, match="v"):
        j(y)


def test_threads_calling_one_jit(dev):
    n = 64
    prog = dev.compile("__kernel void twice(__global float* y, __global const float* x) { size_t i = get_global_id(0); y[i] = 2.0f * x[i]; }")
    k = prog.kernel("twice")

    @encore.jit
    def step(x, y):
        t = dev.alloc(np.float32, n)
        dev.copy(t, x)
        dev.launch(k, n, None, y, t)

    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            x = dev.alloc(np.float32, n)
            y = dev.alloc(np.float32, n)
            for _ in range(40):
                v = rng.standard_normal(n).astype(np.float32)
                x.copyin(v)
                step(x, y)
                got = y.copyout()
                want = 2 * v if not dev.is_null else got  # NULL runs no kernel
                assert got.tobytes() == want.astype(np.float32).tobytes()
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    assert step.calls >= 2


def test_step_calling_another_jit(null):
    x = null.alloc(np.arange(4, dtype=np.float32))
    y = null.alloc(np.float32, 4)
    inner = encore.jit(lambda a, b: null.copy(b, a))
    outer = encore.jit(lambda a, b: inner(a, b))
    for _ in range(4):
        outer(x, y)
    assert y.copyout().tolist() == [0, 1, 2, 3]


def test_capture_context_manager(null):
    x = null.alloc(np.arange(8, dtype=np.int32))
    x2 = null.alloc(np.arange(8, 16, dtype=np.int32))
    y = null.alloc(np.int32, 8)
    with encore.Capture() as cap:
        slot = cap.add_input(x)
        null.copy(y, x)
        assert cap.items_recorded == 1
    unit = cap.unit
    assert unit.num_inputs == 1 and len(unit.items) == 1
    unit.bind_input(slot, x2)()
    assert y.copyout().tolist() == list(range(8, 16))
    ev = unit.bind_input(slot, x).run()
    ev.wait()
    assert y.copyout().tolist() == list(range(8))
    with pytest.raises(encore.JitError):
        unit.bind_input(0, null.alloc(np.int32, 9))


def test_capture_abandoned_on_exception(null):
    x = null.alloc(np.zeros(4, np.int32))
    with pytest.raises(RuntimeError, match="boom"):
        with encore.Capture() as cap:
            null.fill(x, 1)
            raise RuntimeError("boom")
    with pytest.raises(encore.JitError, match="no unit"):
        cap.unit
    null.fill(x, 2)  # not recorded anywhere
    assert x.copyout().tolist() == [2] * 4


def test_capture_host_input_and_variables(null):
    h = np.arange(4, dtype=np.float32)
    t = null.alloc(np.float32, 4)
    with encore.Capture() as cap:
        s = cap.add_host_input(h)
        t.copyin(h)
    u = cap.unit
    assert u.num_host_inputs == 1
    u.bind_host_input(s, np.full(4, 9, np.float32))()
    assert t.copyout().tolist() == [9] * 4


def test_log_sink_receives_jit_warnings(null):
    got = []
    encore.set_log_sink(lambda level, msg: got.append((level, msg)))
    try:
        j = encore.jit(lambda x: null.fill(x, 0))
        for n in range(1, 20):
            j(null.alloc(np.float32, n))
    finally:
        encore.set_log_sink(None)
    assert any(level == "warning" and "input signature" in msg for level, msg in got), got


def test_verify_mode_replays_equal_eager(cl):
    step, a, s = make_step(cl, 64)
    j = encore.TinyJit(step, verify=3)
    x, z = cl.alloc(np.ones(64, np.float32)), cl.alloc(np.full(64, 2, np.float32))
    for i in range(5):
        j(x, z, a.bind(0.5 * i))
    assert j.calls == 5


CHAINS_SRC = """
__kernel void bump(__global float* a, __global const float* x, float k) {
  size_t i = get_global_id(0);
  a[i] = a[i] * k + x[i];
}
"""


def run_chains(dev, chains=4, length=3, calls=5, n=64, **options):
    """`chains` independent chains of `length` launches each (one state buffer per chain, all
    reading one const buffer): what concurrent replay may overlap. No input buffer: one could be
    bound to any buffer, so every item touching one is ordered with every writer."""
    k = dev.compile(CHAINS_SRC).kernel("bump")
    bufs = [dev.alloc(np.arange(n, dtype=np.float32) + c) for c in range(chains)]
    x = dev.alloc(np.linspace(-1, 1, n, dtype=np.float32))

    def step():
        for c, b in enumerate(bufs):
            for _ in range(length):
                dev.launch(k, n, None, b, x, 0.5 + 0.125 * c)

    j = encore.TinyJit(step, **options)
    for _ in range(calls):
        j()
    return j, [b.copyout() for b in bufs]


def test_concurrent_option_replays_equal_eager(dev):
    _, eager = run_chains(dev, enabled=False)
    for concurrent in (True, False):
        j, replay = run_chains(dev, enabled=True, concurrent=concurrent)
        assert j.calls == 5 and j.stats["chains"] == 4 and j.stats["longest_chain"] == 3
        for e, r in zip(eager, replay):
            np.testing.assert_array_equal(e, r)
    with pytest.raises(TypeError, match="concurrent"):
        encore.TinyJit(lambda: None, concurren=True)


def test_capture_takes_the_concurrent_option(dev):
    k = dev.compile(CHAINS_SRC).kernel("bump")
    x = dev.alloc(np.ones(32, np.float32))
    a, b = dev.alloc(np.zeros(32, np.float32)), dev.alloc(np.full(32, 2, np.float32))
    with encore.Capture(concurrent=True) as cap:
        dev.launch(k, 32, None, a, x, 0.5)
        dev.launch(k, 32, None, b, x, 0.25)
    unit = cap.unit
    unit()
    unit()
    if not dev.is_null:
        assert a.copyout().tolist() == [1.75] * 32  # three steps of a * 0.5 + 1 from 0
        assert b.copyout().tolist() == [1.34375] * 32  # three steps of b * 0.25 + 1 from 2


@pytest.mark.parametrize("concurrent", [True, False])
def test_concurrent_option_reaches_the_unit(cl, concurrent):
    # the replay path is told at ENCORE_DEBUG=1, read once per process: a child process of its own
    import os
    import re
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path.insert(0, %r); import encore, test_jit; "
            "test_jit.run_chains(encore.Device.open(%r), enabled=True, concurrent=%r)" % (here, cl.id, concurrent))
    env = dict(os.environ, ENCORE_DEBUG="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(encore.__file__)), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # lanes: as many as the step has chains, at most one per compute unit
    want = r"concurrent, on [2-4] lanes \(in-order queues\)" if concurrent else r"in order \(UnitOptions::concurrent is off\)"
    assert re.search("replay: " + want, r.stderr), r.stderr
