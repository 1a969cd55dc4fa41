"""pyopencl interop: adopt pyopencl's queue, buffers and events, hand encore's out; who releases what."""
import gc

import numpy as np
import pytest

import encore
import encore.opencl as eocl

pyopencl = pytest.importorskip("pyopencl")

TWICE = "__kernel void twice(__global float* y, __global const float* x) { size_t i = get_global_id(0); y[i] = 2.0f * x[i]; }"


@pytest.fixture(scope="module")
def pycl(cl):
    """A pyopencl context and queue on the platform and device of encore's default device."""
    plat = [p for p in pyopencl.get_platforms() if p.name == cl.info["platform"]]
    if not plat:
        pytest.skip("encore's device is not on a platform pyopencl sees")
    dev = [d for d in plat[0].get_devices() if d.name == cl.info["name"]][0]
    ctx = pyopencl.Context([dev])
    return ctx, pyopencl.CommandQueue(ctx)


def test_adopted_queue_and_buffer(pycl):
    ctx, q = pycl
    dev = eocl.adopt_queue(q)
    assert not dev.is_null
    host = np.arange(256, dtype=np.float32)
    mf = pyopencl.mem_flags
    xb = pyopencl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
    yb = pyopencl.Buffer(ctx, mf.READ_WRITE, host.nbytes)
    x = eocl.adopt_buffer(dev, xb, np.float32)
    y = eocl.adopt_buffer(dev, yb, np.float32)
    assert x.count == 256 and x.dtype == np.float32
    k = dev.compile(TWICE).kernel("twice")

    @encore.jit
    def step(y, x):
        dev.launch(k, 256, None, y, x)

    for _ in range(4):
        step(y, x)
    got = np.empty_like(host)
    pyopencl.enqueue_copy(q, got, yb)  # pyopencl reads what encore wrote, on the same queue
    assert (got == 2 * host).all()
    # pyopencl's objects may go first: encore holds references of its own
    del xb, yb
    gc.collect()
    step(y, x)
    assert (y.copyout() == 2 * host).all()


def test_wrong_size_and_null_handles(pycl):
    ctx, q = pycl
    dev = eocl.adopt_queue(q)
    b = pyopencl.Buffer(ctx, pyopencl.mem_flags.READ_WRITE, 64)
    with pytest.raises(encore.Error):
        eocl.adopt_buffer(dev, b, np.float32, 17)  # 68 bytes over a 64-byte cl_mem
    with pytest.raises(encore.ArgumentError, match="null"):
        eocl.adopt_buffer(dev, 0, np.float32, 4)


def test_encore_objects_to_pyopencl(cl):
    x = cl.alloc(np.arange(64, dtype=np.float32))
    q = eocl.to_pyopencl_queue(cl)
    b = eocl.to_pyopencl_buffer(x)
    got = np.empty(64, np.float32)
    cl.synchronize()
    pyopencl.enqueue_copy(q, got, b)
    assert (got == np.arange(64)).all()
    # the pyopencl Buffer keeps the encore Buffer alive: its memory is not handed to another buffer
    del x
    gc.collect()
    others = [cl.alloc(np.full(64, -1, np.float32)) for _ in range(4)]
    pyopencl.enqueue_copy(q, got, b)
    assert (got == np.arange(64)).all()
    assert others
    # a pyopencl write to encore memory, then touch(): encore sees it
    y = cl.alloc(np.zeros(64, np.float32))
    pyopencl.enqueue_copy(q, eocl.to_pyopencl_buffer(y), np.full(64, 5, np.float32))
    y.touch()
    assert (y.copyout() == 5).all()


def test_events_both_ways(pycl, cl):
    ctx, q = pycl
    dev = eocl.adopt_queue(q)
    b = pyopencl.Buffer(ctx, pyopencl.mem_flags.READ_WRITE, 4 * 16)
    ev = pyopencl.enqueue_fill_buffer(q, b, np.float32(3), 0, 64)
    e = eocl.adopt_event(dev, ev)
    dev.wait_for([e])
    e.wait()
    assert e.done
    x = eocl.adopt_buffer(dev, b, np.float32)
    assert (x.copyout() == 3).all()
    m = cl.marker()
    pe = eocl.to_pyopencl_event(m)
    pe.wait()
