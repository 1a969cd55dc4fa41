"""Interop with pyopencl: adopt its queue, buffers and events, and hand encore's out.

    import pyopencl as cl, encore.opencl
    ctx = cl.create_some_context(); queue = cl.CommandQueue(ctx)
    dev = encore.opencl.adopt_queue(queue)                 # encore enqueues on pyopencl's queue
    x = encore.opencl.adopt_buffer(dev, cl_buf, np.float32)  # encore reads and writes cl_buf's memory
    q = encore.opencl.to_pyopencl_queue(dev)               # and the other way round
    b = encore.opencl.to_pyopencl_buffer(x)

Lifetimes (who releases what):
- adopt_*: encore retains the OpenCL object and releases its reference when its last handle goes;
  the pyopencl object may be dropped first. encore never frees adopted memory.
- to_pyopencl_*: pyopencl takes a reference of its own (retain=True). A pyopencl Buffer made from
  an encore Buffer keeps that encore Buffer alive while it lives, so encore's allocator cannot hand
  the same memory to another buffer under it.
- Writes made through pyopencl to memory encore knows must be followed by buf.touch(), so captured
  units re-run the one-time work that read the old bytes.
"""
import weakref

import numpy as np

from ._encore import _opencl as _cl
from ._encore import numpy_dtype as _numpy_dtype

__all__ = ["adopt_queue", "adopt_buffer", "adopt_event", "to_pyopencl_context", "to_pyopencl_queue", "to_pyopencl_buffer",
           "to_pyopencl_event", "int_handle"]


def int_handle(obj):
    """The integer handle of a pyopencl object (its int_ptr), or the integer itself."""
    return obj if isinstance(obj, int) else obj.int_ptr


def adopt_queue(queue):
    """An encore Device over a pyopencl CommandQueue (in order) or its int_ptr."""
    return _cl.adopt_queue(int_handle(queue))


def adopt_buffer(device, buffer, dtype, count=None):
    """An encore Buffer over a pyopencl Buffer (or int_ptr) of device's context; count defaults to
    the buffer's size in elements of dtype."""
    if count is None:
        if isinstance(buffer, int):
            raise TypeError("adopt_buffer: give count with an integer handle")
        count = buffer.size // np.dtype(_numpy_dtype(dtype)).itemsize
    return _cl.adopt_buffer(device, int_handle(buffer), dtype, count)


def adopt_event(device, event):
    """An encore Event over a pyopencl Event of device's context: order encore work after it with
    device.wait_for([e]) or unit.run([e])."""
    return _cl.adopt_event(device, int_handle(event))


def _pyopencl():
    import pyopencl
    return pyopencl


def to_pyopencl_context(device):
    return _pyopencl().Context.from_int_ptr(_cl.context(device), retain=True)


def to_pyopencl_queue(device):
    """encore's own in-order queue of device, as a pyopencl CommandQueue (work on it is ordered with encore's)."""
    return _pyopencl().CommandQueue.from_int_ptr(_cl.queue(device), retain=True)


def _keep(holder, what):
    weakref.finalize(holder, lambda _: None, what)


def to_pyopencl_buffer(buffer):
    """The cl_mem behind an encore Buffer (a sub-buffer for a view) as a pyopencl Buffer; it keeps
    the encore Buffer alive while it lives."""
    b = _pyopencl().Buffer.from_int_ptr(_cl.native_buffer(buffer), retain=True)
    _keep(b, buffer)
    return b


def to_pyopencl_event(event):
    """An encore Event (of one OpenCL device) as a pyopencl Event."""
    e = _pyopencl().Event.from_int_ptr(_cl.native_event(event), retain=True)
    _keep(e, event)
    return e
