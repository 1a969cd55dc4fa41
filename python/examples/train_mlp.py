"""The Fashion-MNIST MLP of examples/train_mlp.cpp, from Python, with the same kernels (read from
examples/mlp/kernels.cpp) and the same model: 784-256-128-10, ReLU, softmax cross-entropy, Adam
with a cosine-decayed learning rate, one parameter buffer (layer tensors are 128-byte aligned
views). One training step is a jit over numpy host inputs (the batch's images and labels, copied
in inside the step: replayed with each call's bytes) and three float Variables.

    PYTHONPATH=build/python python3 python/examples/train_mlp.py [--epochs 2] [--min-accuracy 0.85]
Exits 1 below --min-accuracy test accuracy.
"""
import argparse
import gzip
import math
import pathlib
import re
import time

import numpy as np

import encore

root = pathlib.Path(__file__).resolve().parents[2]
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--min-accuracy", type=float, default=0.0)
args = p.parse_args()


def idx(path):
    """An IDX file (gzip) as a numpy array of its shape."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


d = pathlib.Path(args.data)
train_x = (idx(d / "train-images-idx3-ubyte.gz").reshape(-1, 784) * np.float32(1 / 255)).astype(np.float32)
train_y = idx(d / "train-labels-idx1-ubyte.gz").astype(np.int32)
test_x = (idx(d / "t10k-images-idx3-ubyte.gz").reshape(-1, 784) * np.float32(1 / 255)).astype(np.float32)
test_y = idx(d / "t10k-labels-idx1-ubyte.gz").astype(np.int32)

dev = encore.Device.open()
src = re.search(r'R"CLC\((.*?)\)CLC"', (root / "examples/mlp/kernels.cpp").read_text(), re.S).group(1)
prog = dev.compile(src)
K = {n: prog.kernel("mlp_" + n) for n in ["gemm_nn", "gemm_nt", "gemm_tn", "colsum", "softmax_xent", "count_correct", "adam"]}


def divisor_at_most(n, cap):
    return next((v for v in range(min(n, cap), 1, -1) if n % v == 0), 1)


def tiles(M, N):  # a 4x4 tile of C per work item, as the C++ launch helpers choose
    gx, gy = N // 4, M // 4
    lx = divisor_at_most(gx, 16)
    return (gx, gy), (lx, divisor_at_most(gy, 64 // lx))


def up(v, m):
    return (v + m - 1) // m * m


# parameters, gradients and Adam's moments: one buffer each, layers as aligned views
sizes, classes = [784, 256, 128, 10], 10
layers, at = [], 0
for i in range(len(sizes) - 1):
    fan_in, out_pad = sizes[i], up(sizes[i + 1], 4)
    w_off, at = at, up(at + fan_in * out_pad, 32)
    b_off, at = at, up(at + out_pad, 32)
    layers.append((fan_in, sizes[i + 1], out_pad, w_off, b_off))
total = up(at, 256)
stride = layers[-1][2]
host_params = np.zeros(total, np.float32)
rng = np.random.default_rng(args.seed)
for fan_in, out, out_pad, w_off, _ in layers:  # Kaiming-uniform weights, zero biases
    bound = math.sqrt(6.0 / fan_in)
    w = host_params[w_off: w_off + fan_in * out_pad].reshape(fan_in, out_pad)
    w[:, :out] = rng.uniform(-bound, bound, (fan_in, out))
params, grads = dev.alloc(host_params), dev.alloc(np.zeros(total, np.float32))
m, v = dev.alloc(np.zeros(total, np.float32)), dev.alloc(np.zeros(total, np.float32))
W = [params.view(w, fi * op) for fi, _, op, w, _ in layers]
Bias = [params.view(b, op) for _, _, op, _, b in layers]
dW = [grads.view(w, fi * op) for fi, _, op, w, _ in layers]
dB = [grads.view(b, op) for _, _, op, _, b in layers]
lr, bc1, bc2 = encore.Variable.f32("lr"), encore.Variable.f32("bc1"), encore.Variable.f32("bc2")
beta1, beta2, eps = 0.9, 0.999, 1e-8


def forward(x, rows):
    acts = [x]
    for i, (fan_in, _, out_pad, _, _) in enumerate(layers):
        nxt = dev.alloc(np.float32, rows * out_pad)
        g, loc = tiles(rows, out_pad)
        dev.launch(K["gemm_nn"], g, loc, acts[-1], W[i], Bias[i], encore.out(nxt), rows, out_pad, fan_in, int(i + 1 < len(layers)))
        acts.append(nxt)
    return acts


@encore.jit
def train_step(hx, hy, lr_b, bc1_b, bc2_b):
    rows = len(hy)
    x, y = dev.alloc(np.float32, rows * 784), dev.alloc(np.int32, rows)
    x.copyin(hx)  # host inputs: each replay uploads this call's batch
    y.copyin(hy)
    acts = forward(x, rows)
    loss, dz = dev.alloc(np.float32, rows), dev.alloc(np.float32, rows * stride)
    dev.launch(K["softmax_xent"], rows, divisor_at_most(rows, 64), acts[-1], y, encore.out(dz), encore.out(loss), 0, classes, stride,
               1.0 / rows)
    for i in reversed(range(len(layers))):
        fan_in, _, out_pad, _, _ = layers[i]
        g, loc = tiles(fan_in, out_pad)
        dev.launch(K["gemm_tn"], g, loc, acts[i], dz, encore.out(dW[i]), fan_in, out_pad, rows)
        dev.launch(K["colsum"], out_pad, divisor_at_most(out_pad, 64), dz, encore.out(dB[i]), rows, out_pad)
        if i == 0:
            break
        dprev = dev.alloc(np.float32, rows * fan_in)
        g, loc = tiles(rows, fan_in)
        dev.launch(K["gemm_nt"], g, loc, dz, W[i], acts[i], encore.out(dprev), rows, fan_in, out_pad)
        dz = dprev
    dev.launch(K["adam"], total // 4, divisor_at_most(total // 4, 64), encore.inout(params), grads, encore.inout(m), encore.inout(v),
               lr, bc1, bc2, beta1, beta2, eps)
    return loss


@encore.jit
def eval_step(hx, hy):
    rows = len(hy)
    x, y = dev.alloc(np.float32, rows * 784), dev.alloc(np.int32, rows)
    x.copyin(hx)
    y.copyin(hy)
    correct = dev.alloc(np.int32, rows)
    dev.launch(K["count_correct"], rows, divisor_at_most(rows, 64), forward(x, rows)[-1], y, encore.out(correct), classes, stride)
    return correct


B, n = args.batch, len(train_y)
rest = n % B
steps_per_epoch = n // B + (1 if rest and rest % 4 == 0 else 0)
total_steps, t = steps_per_epoch * args.epochs, 0
t0 = time.perf_counter()
for e in range(args.epochs):
    order = np.random.default_rng([args.seed, e]).permutation(n)
    for s in range(steps_per_epoch):
        idx_s = order[s * B: (s + 1) * B]
        hx, hy = train_x[idx_s], train_y[idx_s]  # fresh contiguous arrays: the host inputs
        t += 1
        f = (t - 1) / max(1, total_steps - 1)
        loss = train_step(hx, hy, lr.bind(args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * f)))),
                          bc1.bind(1 / (1 - beta1 ** t)), bc2.bind(1 / (1 - beta2 ** t)))
    print(f"epoch {e}: loss {loss.copyout().mean():.4f}")
dev.synchronize()
train_s = time.perf_counter() - t0
correct = sum(int(eval_step(test_x[i: i + 500], test_y[i: i + 500]).copyout().sum()) for i in range(0, len(test_y), 500))
acc = correct / len(test_y)
print(f"trained {t} steps ({args.epochs} epochs) in {train_s:.2f} s: {train_s * 1e3 / t:.2f} ms per step; test accuracy {acc:.4f}")
raise SystemExit(0 if acc >= args.min_accuracy else 1)
