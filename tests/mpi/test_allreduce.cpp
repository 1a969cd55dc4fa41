// encore::Communicator under mpirun (-np 2 or more): allreduce/broadcast issued eagerly and replayed
// as items of a TinyJit step. Each rank prints its failures; rank 0 prints "N passed, N failed"
// over all ranks and the program exits non-zero when any check failed on any rank.
//   mpirun --allow-run-as-root --oversubscribe -np 2 build/tests/mpi/encore-mpi-tests
#include <mpi.h>

#include <CL/cl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "encore/communicator.hpp"
#include "encore/encore.hpp"
#include "encore/opencl.hpp"

using encore::Buffer;
using encore::Communicator;
using encore::ReduceOp;

namespace {

int passed = 0, failed = 0;
int g_rank = 0;

void check(bool ok, const std::string& what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::fprintf(stderr, "[rank %d] FAILED: %s\n", g_rank, what.c_str());
  }
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// All ranks' copies of `v`, in rank order (on rank 0; empty elsewhere).
template <class T> std::vector<T> gather(const std::vector<T>& v, int size) {
  std::vector<T> all(g_rank == 0 ? v.size() * static_cast<size_t>(size) : 0);
  MPI_Gather(v.data(), static_cast<int>(v.size() * sizeof(T)), MPI_BYTE, all.data(), static_cast<int>(v.size() * sizeof(T)),
             MPI_BYTE, 0, MPI_COMM_WORLD);
  return all;
}

// Rank 0: whether every rank's bytes equal rank 0's; the answer is broadcast to every rank.
template <class T> bool identical_on_all_ranks(const std::vector<T>& v, int size) {
  std::vector<T> all = gather(v, size);
  int ok = 1;
  if (g_rank == 0)
    for (int r = 1; r < size; ++r)
      if (std::memcmp(all.data(), all.data() + static_cast<size_t>(r) * v.size(), v.size() * sizeof(T)) != 0) ok = 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok != 0;
}

constexpr const char* kSrc = R"(
__kernel void grad(__global const float* x, __global float* g, float s) { size_t i = get_global_id(0); g[i] = x[i] * s; }
__kernel void update(__global const float* w, __global const float* g, __global float* y, float lr) {
  size_t i = get_global_id(0); y[i] = w[i] - lr * g[i]; }
)";

constexpr size_t N = 1000;  // not a multiple of the work-group size on purpose

// rank- and k-dependent input (exact small floats with fractions)
std::vector<float> input(int rank, int k) {
  std::vector<float> v(N);
  for (size_t i = 0; i < N; ++i) v[i] = static_cast<float>((i * 7 + static_cast<size_t>(k) * 13 + static_cast<size_t>(rank) * 5) % 17) * 0.37f - 1.1f;
  return v;
}

// The rank-ordered reduction as documented: ((x0 + x1) + x2) + ..., mean divides once at the end.
std::vector<float> host_reduce(const std::vector<float>& all, int size, ReduceOp op) {
  std::vector<float> out(N);
  for (size_t i = 0; i < N; ++i) {
    float acc = all[i];
    for (int r = 1; r < size; ++r) {
      float v = all[static_cast<size_t>(r) * N + i];
      acc = op == ReduceOp::max ? (v > acc ? v : acc) : acc + v;
    }
    if (op == ReduceOp::mean) acc = acc / static_cast<float>(size);
    out[i] = acc;
  }
  return out;
}

// (d) eager allreduce of a kernel-computed gradient == the host's rank-ordered reduction, bit for bit
void eager_matches_host(const encore::Device& dev, const encore::Kernel& grad, const Communicator& comm) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max}) {
    Buffer x = dev.alloc<float>(N), g = dev.alloc<float>(N);
    x.copyin(input(comm.rank(), 3));
    dev.launch(grad, {N}, {}, x, g, static_cast<float>(comm.rank() + 1));
    std::vector<float> before = g.copyout<float>();
    comm.allreduce(g, op);
    std::vector<float> after = g.copyout<float>();
    std::vector<float> all = gather(before, comm.size());
    int ok = 1;
    if (comm.rank() == 0) ok = same_bytes(after, host_reduce(all, comm.size(), op));
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    check(ok != 0, "eager allreduce op " + std::to_string(static_cast<int>(op)) + " == host rank-ordered reduction");
    check(identical_on_all_ranks(after, comm.size()), "eager allreduce: identical bytes on all ranks");
  }
}

// (a) replay == eager with rotating per-rank inputs, (b) identical bytes on all ranks, (c) never pruned
void jit_step(const encore::Device& dev, const encore::Kernel& grad, const encore::Kernel& update, const Communicator& comm) {
  auto step = [&](const Buffer& x, const Buffer& w) {
    Buffer g = dev.alloc<float>(N);  // a temporary: planned on replay, reduced in place
    dev.launch(grad, {N}, {}, x, g, static_cast<float>(comm.rank() + 1));
    comm.allreduce(g, ReduceOp::mean);
    Buffer y = dev.alloc<float>(N);
    dev.launch(update, {N}, {}, w, g, y, 0.25f);
    return y;
  };
  encore::TinyJit jit(step);
  std::vector<Buffer> xs;
  for (int k = 0; k < 3; ++k) {
    xs.push_back(dev.alloc<float>(N));
    xs.back().copyin(input(comm.rank(), k));
  }
  Buffer w = dev.alloc<float>(N);
  w.copyin(input(0, 7));  // the same weights on every rank
  for (int i = 0; i < 8; ++i) {
    std::vector<float> got = jit(xs[i % 3], w).copyout<float>();
    std::vector<float> want = step(xs[i % 3], w).copyout<float>();
    check(same_bytes(got, want), "call " + std::to_string(i) + ": jit == eager");
    check(identical_on_all_ranks(got, comm.size()), "call " + std::to_string(i) + ": identical bytes on all ranks");
  }
  const encore::ExecutionUnit& u = jit.unit();
  check(u.stats().items == 3, "3 items captured, got " + std::to_string(u.stats().items));
  check(u.stats().items_pruned == 0, "nothing pruned");
  bool found = false;
  for (size_t i = 0; i < u.items().size(); ++i)
    if (u.items()[i].kind == encore::ItemKind::native && u.items()[i].name == "allreduce(mean)") {
      found = true;
      check(!u.one_time()[i], "allreduce not one-time");
    }
  check(found, "allreduce(mean) recorded as a native item");
}

// (e) on replay, items after the collective that do not touch its buffer are enqueued before the
// collective waits for the other ranks (here: rank 1 comes 400 ms late; a probe item that runs on
// the host when it is enqueued must run on rank 0 without waiting for it), and the item that reads
// the reduced buffer still sees the result (replay == eager, identical on every rank).
void independent_items_do_not_wait(const encore::Device& dev, const encore::Kernel& grad, const encore::Kernel& update,
                                   const Communicator& comm) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point probed{};
  Buffer token = dev.alloc<float>(N);
  auto step = [&](const Buffer& x, const Buffer& w) {
    Buffer g = dev.alloc<float>(N);
    dev.launch(grad, {N}, {}, x, g, static_cast<float>(comm.rank() + 1));
    comm.allreduce(g, ReduceOp::sum);
    Buffer z = dev.alloc<float>(N);
    dev.launch(update, {N}, {}, w, x, z, 0.5f);  // independent of g
    encore::opencl::enqueue_native(dev, [&](cl_command_queue, std::span<const cl_mem>) { probed = Clock::now(); }, {encore::in(token)}, "probe");
    Buffer y = dev.alloc<float>(N);
    dev.launch(update, {N}, {}, w, g, y, 0.25f);  // reads the reduced g
    return std::make_pair(y, z);
  };
  encore::TinyJit jit(step);
  Buffer x = dev.alloc<float>(N), w = dev.alloc<float>(N);
  w.copyin(input(0, 7));
  for (int i = 0; i < 5; ++i) {
    x.copyin(input(comm.rank(), i));
    MPI_Barrier(MPI_COMM_WORLD);
    if (i == 4 && comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    Clock::time_point t0 = Clock::now();
    auto [y, z] = jit(x, w);
    double probe_ms = std::chrono::duration<double, std::milli>(probed - t0).count();
    std::vector<float> got_y = y.copyout<float>(), got_z = z.copyout<float>();
    auto [ey, ez] = step(x, w);
    check(same_bytes(got_y, ey.copyout<float>()) && same_bytes(got_z, ez.copyout<float>()), "independent items: call " + std::to_string(i) + ": jit == eager");
    check(identical_on_all_ranks(got_y, comm.size()), "independent items: call " + std::to_string(i) + ": identical on all ranks");
    if (i == 4 && comm.rank() == 0)
      check(probe_ms < 200, "a replayed item independent of the allreduce was enqueued " + std::to_string(probe_ms) +
                                " ms into the call: it waited for the late rank");
  }
}

// (c) the collective runs on every replay even with nothing after it: an i32 input reduced in place
// (sum) on the NULL device, so its value grows by a factor of size every call.
void runs_every_replay(const Communicator& comm) {
  encore::Device null = encore::Device::open("NULL");
  const int p = comm.size();
  Buffer v = null.alloc<int32_t>(4);
  v.copyin(std::vector<int32_t>{comm.rank() + 1, 2 * comm.rank(), -comm.rank(), 5});
  encore::TinyJit jit([&](const Buffer& b) { comm.allreduce(b, ReduceOp::sum); });
  int64_t sum1 = int64_t{p} * (p + 1) / 2, sum2 = int64_t{p} * (p - 1), sum3 = -int64_t{p} * (p - 1) / 2, sum4 = 5 * int64_t{p};
  int64_t scale = 1;
  for (int i = 0; i < 6; ++i) {
    jit(v);
    std::vector<int32_t> got = v.copyout<int32_t>();
    std::vector<int32_t> want{static_cast<int32_t>(sum1 * scale), static_cast<int32_t>(sum2 * scale), static_cast<int32_t>(sum3 * scale),
                              static_cast<int32_t>(sum4 * scale)};
    check(got == want, "i32 in-place sum, call " + std::to_string(i) + " (replay runs the collective)");
    scale *= p;
  }
  check(jit.unit().stats().items == 1 && jit.unit().stats().items_pruned == 0, "in-place allreduce kept");
}

// broadcast (f64, NULL device), recorded and replayed; bad dtypes and roots are ArgumentErrors.
void broadcast_and_errors(const Communicator& comm) {
  encore::Device null = encore::Device::open("NULL");
  const int root = comm.size() - 1;
  Buffer d = null.alloc<double>(3);
  encore::TinyJit jit([&](const Buffer& b) { comm.broadcast(b, root); });
  for (int i = 0; i < 4; ++i) {
    d.copyin(std::vector<double>{comm.rank() + 0.5, i * 1.0, -1.0 * comm.rank()});
    jit(d);
    check(d.copyout<double>() == std::vector<double>{root + 0.5, i * 1.0, -1.0 * root}, "broadcast call " + std::to_string(i));
  }
  bool threw = false;
  try {
    comm.allreduce(null.alloc<uint8_t>(4));
  } catch (const encore::ArgumentError&) {
    threw = true;
  }
  check(threw, "u8 allreduce is an ArgumentError");
  threw = false;
  try {
    comm.broadcast(d, comm.size());
  } catch (const encore::ArgumentError&) {
    threw = true;
  }
  check(threw, "broadcast from a rank out of range is an ArgumentError");
}

}  // namespace

int main() {
  try {
    Communicator comm = Communicator::world();
    g_rank = comm.rank();
    check(comm.size() >= 2, "run under mpirun -np 2 or more (size " + std::to_string(comm.size()) + ")");
    encore::Device dev = encore::Device::open();
    encore::Program prog = dev.compile(kSrc);
    encore::Kernel grad = prog.kernel("grad"), update = prog.kernel("update");
    eager_matches_host(dev, grad, comm);
    jit_step(dev, grad, update, comm);
    independent_items_do_not_wait(dev, grad, update, comm);
    runs_every_replay(comm);
    broadcast_and_errors(comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] exception: %s\n", g_rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int counts[2] = {passed, failed}, total[2] = {0, 0};
  MPI_Reduce(counts, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  int any_failed = total[1];
  MPI_Bcast(&any_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%d passed, %d failed (over all ranks)\n", total[0], total[1]);
  return any_failed ? 1 : 0;
}
