"""Saved units from Python: save_unit writes a captured step with its programs' binaries,
load_unit gives a unit that replays at its first call (no warm-up, no compile where the binaries
fit), and every refusal is an encore error naming what was wrong."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import encore

# a build without the harness (the wheel: -Dharness=false) has no saved units: they raise, saying so
needs_saved_units = pytest.mark.skipif(not encore.has_saved_units, reason="built without the harness (-Dharness=false)")

SRC = """__kernel void axpb(__global float* x, __global float* y, __global float* acc) {
  size_t i = get_global_id(0);
  y[i] = 2 * x[i] + 1;
  acc[i] += y[i];
}"""
N = 64


def capture_step(dev):
    k = dev.compile(SRC).kernel("axpb")
    x = dev.alloc(np.arange(N, dtype=np.float32))
    acc = dev.alloc(np.zeros(N, np.float32))
    with encore.Capture() as cap:
        cap.add_input(x)
        y = dev.alloc(np.float32, N)  # made in the step and returned: the unit's output
        dev.launch(k, N, None, x, y, acc)
        cap.add_output(y)
    return cap.unit, x, y, acc


def expected(x0, acc0, steps):
    """The step on the host: y = 2x + 1, acc += y, `steps` times with the same x."""
    y = 2 * x0 + 1
    return y, acc0 + steps * y


@needs_saved_units
def test_saved_unit_replays_what_was_captured(cl, tmp_path):
    unit, x, y, acc = capture_step(cl)
    unit()  # one replay before saving: acc holds one step's sum (capture ran it once too)
    path = tmp_path / "step.json"
    encore.save_unit(unit, path, name="axpb-step")
    assert (tmp_path / "step.data").is_dir()
    acc_saved = acc.copyout()
    loaded = encore.load_unit(cl, str(path))  # str or a path
    assert isinstance(loaded, encore.LoadedUnit)
    assert len(loaded.names) == len(loaded.buffers) == 3
    x_l = loaded.buffer(loaded.names[0])
    assert np.array_equal(x_l.copyout(), x.copyout())  # input slot 0 holds the saved bytes
    u = loaded.unit
    assert u.num_inputs == 1
    for steps in (1, 2, 3):
        u()
        ey, eacc = expected(x.copyout(), acc_saved, steps)
        outs = u.outputs
        assert len(outs) == 1 and np.array_equal(outs[0].copyout(), ey)
        state = [b for n, b in zip(loaded.names, loaded.buffers) if np.array_equal(b.copyout(), eacc)]
        assert state, "the accumulator's saved bytes plus each run's sum"
    # a new input binds like any unit's
    x2 = cl.alloc(np.full(N, 5, np.float32))
    u.bind_input(0, x2)()
    assert np.array_equal(u.outputs[0].copyout(), np.full(N, 11, np.float32))
    # the original unit is untouched by the loaded one (its own buffers)
    assert np.array_equal(acc.copyout(), acc_saved)


@needs_saved_units
def test_saved_unit_starts_without_compiling_in_a_fresh_process(cl, tmp_path):
    unit, x, _, _ = capture_step(cl)
    path = tmp_path / "step.json"
    encore.save_unit(unit, path)
    script = textwrap.dedent(f"""
        import numpy as np, encore
        dev = encore.Device.open()
        l = encore.load_unit(dev, {str(path)!r})
        l.unit()
        print(l.from_source, l.unit.outputs[0].copyout()[:3].tolist())
    """)
    env = dict(os.environ, ENCORE_CACHE=str(tmp_path / "empty-cache"))  # nothing to find on disk either
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] [1.0, 3.0, 5.0]"


@needs_saved_units
def test_damaged_binary_falls_back_to_source_and_says_so(cl, tmp_path):
    unit, _, _, _ = capture_step(cl)
    path = tmp_path / "step.json"
    encore.save_unit(unit, path)
    (clbin,) = [p for p in (tmp_path / "step.data").iterdir() if p.suffix == ".clbin"]
    data = bytearray(clbin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    clbin.write_bytes(bytes(data))
    script = textwrap.dedent(f"""
        import encore
        l = encore.load_unit(encore.Device.open(), {str(path)!r})
        l.unit()
        print(l.from_source, l.unit.outputs[0].copyout()[:3].tolist())
    """)
    env = dict(os.environ, ENCORE_CACHE=str(tmp_path / "empty-cache"))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['p0'] [1.0, 3.0, 5.0]"  # compiled from source, never the damaged bytes


@needs_saved_units
def test_save_without_binaries_and_load_on_null(null, tmp_path):
    unit, _, _, _ = capture_step(null)
    path = tmp_path / "s.json"
    encore.save_unit(unit, path, binaries=False)
    assert not any(p.suffix == ".clbin" for p in (tmp_path / "s.data").iterdir())
    loaded = encore.load_unit(null, path, prune=False)
    loaded.unit()
    assert loaded.from_source == []  # NULL compiles nothing


@needs_saved_units
def test_refusals_are_encore_errors(null, tmp_path):
    unit, _, _, _ = capture_step(null)
    path = tmp_path / "s.json"
    encore.save_unit(unit, path)
    loaded = encore.load_unit(null, path)
    with pytest.raises(encore.ArgumentError, match=r'no buffer named "nope".*b0'):
        loaded.buffer("nope")
    with pytest.raises(TypeError, match="unknown option 'verify'"):
        encore.load_unit(null, path, verify=1)
    with pytest.raises(encore.ArgumentError, match="max_in_flight"):
        encore.load_unit(null, path, max_in_flight=5000)
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "name": "x", "buffers": [')
    with pytest.raises(encore.WorkloadError) as e:
        encore.load_unit(null, bad)
    assert isinstance(e.value, encore.Error)
    with pytest.raises(encore.WorkloadError):
        encore.load_unit(null, tmp_path / "missing.json")


@pytest.mark.skipif(encore.has_saved_units, reason="this build has saved units")
def test_without_the_harness_they_raise_saying_why(null):
    for call in (lambda: encore.save_unit(None, "x.json"), lambda: encore.load_unit(null, "x.json")):
        with pytest.raises(encore.Error, match="-Dharness=false"):
            call()


@needs_saved_units
def test_a_jits_unit_saves_and_loads(cl, tmp_path):
    k = cl.compile(SRC).kernel("axpb")
    acc = cl.alloc(np.zeros(N, np.float32))

    @encore.jit
    def step(x):
        y = cl.alloc(np.float32, N)
        cl.launch(k, N, None, x, y, acc)
        return y

    x = cl.alloc(np.arange(N, dtype=np.float32))
    with pytest.raises(encore.JitError, match="no captured unit yet"):
        step(x)
        encore.save_unit(step, tmp_path / "early.json")  # after call 0: nothing captured
    step(x)
    step(x)  # call 2: the first replay
    encore.save_unit(step, tmp_path / "jit.json")
    acc_saved = acc.copyout()
    loaded = encore.load_unit(cl, tmp_path / "jit.json")
    loaded.unit()
    ey, eacc = expected(x.copyout(), acc_saved, 1)
    assert np.array_equal(loaded.unit.outputs[0].copyout(), ey)
    assert any(np.array_equal(b.copyout(), eacc) for b in loaded.buffers)
    assert np.array_equal(acc.copyout(), acc_saved)  # the jit's own state is untouched
    with pytest.raises(TypeError, match="expected an encore.ExecutionUnit or an encore.TinyJit"):
        encore.save_unit(42, tmp_path / "x.json")
