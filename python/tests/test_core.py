"""Buffers, dtypes, programs, launches and errors from Python."""
import numpy as np
import pytest

import encore

NUMPY_TO_ENCORE = [
    (np.float16, encore.DType.f16), (np.float32, encore.DType.f32), (np.float64, encore.DType.f64),
    (np.int8, encore.DType.i8), (np.int16, encore.DType.i16), (np.int32, encore.DType.i32), (np.int64, encore.DType.i64),
    (np.uint8, encore.DType.u8), (np.uint16, encore.DType.u16), (np.uint32, encore.DType.u32), (np.uint64, encore.DType.u64),
    (np.bool_, encore.DType.bool),
]

ADD = """
__kernel void axpb(__global float* y, __global const float* x, float a, int b) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] + (float)b;
}
"""


@pytest.mark.parametrize("np_type,et", NUMPY_TO_ENCORE)
def test_dtypes_map_both_ways(np_type, et):
    assert encore.dtype(np_type) == et
    assert encore.dtype(np.dtype(np_type)) == et
    assert encore.numpy_dtype(et) == np.dtype(np_type)


def test_encore_names_and_bf16():
    assert encore.dtype("f32") == encore.DType.f32
    assert encore.dtype("bool") == encore.DType.bool
    assert encore.numpy_dtype(encore.DType.bf16) == np.dtype(np.uint16)  # its raw bits


@pytest.mark.parametrize("bad", [np.complex64, np.dtype(">f4"), np.dtype("S4"), np.float128 if hasattr(np, "float128") else np.complex128])
def test_unmatched_dtype_is_a_type_error_naming_it(null, bad):
    with pytest.raises(TypeError, match=str(np.dtype(bad))):
        null.alloc(bad, 4)
    with pytest.raises(TypeError, match="has no encore dtype"):
        encore.dtype(bad)


@pytest.mark.parametrize("np_type,et", NUMPY_TO_ENCORE)
def test_copy_round_trip_every_dtype(dev, np_type, et):
    a = (np.arange(37) % 5).astype(np_type)
    b = dev.alloc(a)
    assert (b.encore_dtype, b.count, b.nbytes) == (et, 37, a.nbytes)
    assert b.dtype == np.dtype(np_type)
    out = b.copyout()
    assert out.dtype == a.dtype and out.tobytes() == a.tobytes()
    part = b.copyout(offset=30)
    assert part.tobytes() == a[30:].tobytes()


def test_copyin_checks_dtype_and_size(null):
    b = null.alloc(np.float32, 8)
    with pytest.raises(encore.ArgumentError, match=r"Buffer copy: host element type f64 does not match f32\[8\]"):
        b.copyin(np.zeros(8))
    with pytest.raises(encore.ArgumentError):
        b.copyin(np.zeros(9, np.float32))
    b.copyin(np.arange(16, dtype=np.float32)[::2])  # not contiguous: copied first
    assert b.copyout().tolist() == list(range(0, 16, 2))
    b.copyin(np.array([7, 8], np.float32), offset=6)
    assert b.copyout()[6:].tolist() == [7, 8]
    out = np.empty(8, np.float32)
    assert b.copyout(out=out) is out and out[7] == 8


def test_views_and_fill(null):
    b = null.alloc(np.int32, 64)
    null.fill(b, 3)
    v = b.view(32, 32)
    null.fill(v, -1)
    got = b.copyout()
    assert (got[:32] == 3).all() and (got[32:] == -1).all()
    assert v.is_view and v.base == b and v.overlaps(b)
    with pytest.raises(encore.ArgumentError):
        b.view(1, 4)  # 4 bytes: not a multiple of the base alignment


def test_exception_hierarchy():
    assert issubclass(encore.Error, RuntimeError)
    for c in (encore.ArgumentError, encore.DeviceError, encore.CompileError, encore.JitError):
        assert issubclass(c, encore.Error)
    assert issubclass(encore.OpenCLError, encore.DeviceError)


def test_unknown_device_and_kernel(null):
    with pytest.raises(encore.DeviceError):
        encore.Device.open("CL:99")
    p = null.compile(ADD)
    assert p.kernel_names == ["axpb"]
    with pytest.raises(encore.ArgumentError, match="axpb"):
        p.kernel("nope")


def test_compile_error_carries_the_log(cl):
    with pytest.raises(encore.CompileError) as e:
        cl.compile("__kernel void broken(__global float* x) { x[0] = undefined_name; }")
    assert "undefined_name" in e.value.log
    assert "undefined_name" in str(e.value)


def test_kernel_params(null):
    k = null.compile(ADD).kernel("axpb")
    p = k.params
    assert [x.name for x in p] == ["y", "x", "a", "b"]
    assert p[0].is_pointer and not p[0].const_data and p[1].const_data
    assert p[0].pointee == np.float32 and p[2].scalar == np.float32 and p[3].scalar == np.int32


def test_launch_converts_python_scalars(cl):
    k = cl.compile(ADD).kernel("axpb")
    x = cl.alloc(np.arange(64, dtype=np.float32))
    y = cl.alloc(np.float32, 64)
    cl.launch(k, 64, None, y, x, 2, 3)  # an int for the float parameter too
    assert y.copyout().tolist() == [2.0 * i + 3 for i in range(64)]
    cl.launch(k, (64,), (16,), y, encore.in_(x), 0.5, np.int32(-1))
    assert y.copyout().tolist() == [0.5 * i - 1 for i in range(64)]


def test_launch_argument_errors(null):
    k = null.compile(ADD).kernel("axpb")
    x = null.alloc(np.float32, 64)
    with pytest.raises(encore.ArgumentError, match="does not fit"):
        null.launch(k, 64, None, x, x, 1.0, 2**40)
    with pytest.raises(encore.ArgumentError, match="does not fit 64 bits"):
        null.launch(k, 64, None, x, x, 1.0, 2**70)
    with pytest.raises(encore.ArgumentError):
        null.launch(k, 64, None, x, x, 1.0, 2.5)  # a float for an int parameter
    with pytest.raises(encore.ArgumentError):
        null.launch(k, 64, None, null.alloc(np.int32, 64), x, 1.0, 2)  # an int buffer for float*
    with pytest.raises(TypeError, match="kernel argument of type str"):
        null.launch(k, 64, None, x, x, "a", 2)


def test_variables_and_sizes(null):
    pos = encore.Variable("pos", 1, 4096)
    assert (pos.name, pos.min, pos.max, pos.is_float) == ("pos", 1, 4096, False)
    b = pos.bind(17)
    assert b.value == 17 and b.var == pos and pos.value == 17
    with pytest.raises(encore.ArgumentError, match="pos"):
        pos.bind(5000)
    s = pos * 4 + 1
    assert isinstance(s, encore.Size) and s.eval() == 69 and str(s) == "4*pos+1"
    assert (encore.ceil_div(pos, 8) * 8).eval() == 24
    lr = encore.Variable.f32("lr")
    assert lr.bind(0.25).value == 0.25 and lr.is_float


def test_events(dev):
    e = dev.marker()
    e.wait()
    assert e.done
    assert encore.Event().done
    b = dev.alloc(np.arange(256, dtype=np.int32))
    out = np.zeros(256, np.int32)
    ev = b.copyout_async(out)
    ev.wait()
    assert (out == np.arange(256)).all()
