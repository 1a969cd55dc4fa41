// Ring all-reduce over several devices: every device holds a vector, and afterwards every device
// holds the sum of all of them. The vector is cut into one chunk per device; in n-1 reduce-scatter
// steps each device adds the chunk its left neighbour sends, in n-1 all-gather steps the finished
// chunks travel on around the ring. Every send is a cross-device copy of a chunk view, every add a
// kernel: eager device work, captured once by TinyJit and then replayed as one unit.
//   ./build/examples/ring_allreduce                      every local OpenCL device
//   ./build/examples/ring_allreduce --split 2            two sub-devices of the default device
//   ./build/examples/ring_allreduce --count 1048576 --iters 100
// POCL_DEVICES="pthread pthread" gives two PoCL devices in one platform. With one device and no
// --split, the default device is split in two. Checks every replayed call against eager and the
// host (exits 1 on a mismatch; 77 when there are not two devices to use), then prints the median
// time per all-reduce, eager vs replay.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <encore/encore.hpp>

using encore::Buffer;
using encore::Device;

namespace {

const char* kAddSrc = "__kernel void ring_acc(__global float* acc, __global const float* x) { acc[get_global_id(0)] += x[get_global_id(0)]; }";

struct Options {
  unsigned split = 0;  // 0: every local device
  size_t count = 1 << 16;
  int iters = 50;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--split") && has_value) o.split = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else if (!std::strcmp(argv[i], "--count") && has_value) o.count = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters") && has_value) o.iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--split N] [--count FLOATS_PER_DEVICE] [--iters N]\n", argv[0]);
      return false;
    }
  }
  return o.iters > 0 && o.count > 0;
}

// In place: bufs[d] (one per device, equal sizes, a multiple of one aligned chunk per device)
// becomes the sum over d on every device.
void allreduce(const std::vector<Device>& devs, const std::vector<encore::Kernel>& acc, const std::vector<Buffer>& bufs) {
  const size_t n = devs.size(), chunk = bufs[0].count() / n;
  auto piece = [&](size_t d, size_t c) { return bufs[d].view(c * chunk, chunk); };
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {  // device i sends chunk (i - s) to device i + 1, which adds it
      const size_t to = (i + 1) % n, c = (i + n - s) % n;
      Buffer recv = devs[to].alloc<float>(chunk);
      devs[to].copy(recv, piece(i, c));
      devs[to].launch(acc[to], {chunk}, {}, piece(to, c), recv);
    }
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {  // device i passes on the finished chunk (i + 1 - s)
      const size_t to = (i + 1) % n, c = (i + 1 + n - s) % n;
      devs[to].copy(piece(to, c), piece(i, c));
    }
}

// Small integers: every sum is exact, so any correct order of additions gives the same bits.
std::vector<float> data(int call, size_t d, size_t count) {
  std::vector<float> v(count);
  for (size_t j = 0; j < count; ++j) v[j] = static_cast<float>((static_cast<size_t>(call) * 7 + d * 13 + j) % 101);
  return v;
}

void sync(const std::vector<Device>& devs) {
  for (const Device& d : devs) d.synchronize();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int run(const Options& o) {
  std::vector<Device> devs;
  if (o.split) {
    devs = Device::open().split(o.split);
  } else {
    for (const encore::DeviceInfo& i : Device::list()) devs.push_back(Device::open(i.id));
    if (devs.size() == 1) {
      std::printf("one OpenCL device: splitting %s in two (--split N to choose)\n", devs[0].id().c_str());
      try {
        devs = devs[0].split(2);
      } catch (const encore::DeviceError& e) {
        std::printf("cannot split it: %s\n", e.what());
        return 77;
      }
    }
  }
  if (devs.size() < 2) {
    std::printf("a ring needs two devices, have %zu\n", devs.size());
    return 77;
  }
  const size_t n = devs.size();
  // each chunk starts at a multiple of the strictest base alignment among the devices
  size_t align = 4;
  for (const Device& d : devs) align = std::max(align, d.info().base_align_bytes);
  const size_t unit = n * (align / 4);
  const size_t count = (o.count + unit - 1) / unit * unit;
  std::printf("ring all-reduce of %zu floats over %zu devices:", count, n);
  for (const Device& d : devs) std::printf(" %s", d.id().c_str());
  std::printf(" (%s)\n", devs[0].info().name.c_str());

  std::vector<encore::Kernel> acc;
  for (const Device& d : devs) acc.push_back(d.compile(kAddSrc).kernel("ring_acc"));
  auto step = [&](const std::vector<Buffer>& bufs) { allreduce(devs, acc, bufs); };
  encore::TinyJit jit(step);

  // three input sets the replay rotates over, and one set for eager
  auto make_set = [&] {
    std::vector<Buffer> s;
    for (const Device& d : devs) s.push_back(d.alloc<float>(count));
    return s;
  };
  std::vector<std::vector<Buffer>> sets{make_set(), make_set(), make_set()};
  std::vector<Buffer> eager = make_set();

  // check: calls 0 (eager), 1 (capture), then replays, each against eager and the host
  const int checks = std::min(o.iters, 10);
  for (int call = 0; call < std::max(checks, 4); ++call) {
    std::vector<Buffer>& in = sets[static_cast<size_t>(call % 3)];
    std::vector<float> want(count, 0.f);
    for (size_t d = 0; d < n; ++d) {
      std::vector<float> v = data(call, d, count);
      in[d].copyin(v);
      eager[d].copyin(v);
      for (size_t j = 0; j < count; ++j) want[j] += v[j];
    }
    jit(in);
    step(eager);
    for (size_t d = 0; d < n; ++d) {
      std::vector<float> got = in[d].copyout<float>(), ref = eager[d].copyout<float>();
      if (std::memcmp(got.data(), ref.data(), count * 4) != 0 || std::memcmp(got.data(), want.data(), count * 4) != 0) {
        const bool vs_eager = std::memcmp(got.data(), ref.data(), count * 4) != 0;
        std::printf("MISMATCH: call %d, device %s: %s differs from %s\n", call, devs[d].id().c_str(), call < 2 ? "eager" : "replay",
                    vs_eager ? "eager" : "the host sum");
        return 1;
      }
    }
  }
  const encore::UnitStats& st = jit.unit().stats();
  std::printf("captured %zu items (%zu copies and %zu adds per all-reduce); replay equals eager and the host on %d calls\n", st.items,
              n * (n - 1) * 2, n * (n - 1), std::max(checks, 4));

  // time: one all-reduce and the wait for every device, eager vs replay (values grow; not checked)
  std::vector<double> te, tr;
  for (int i = 0; i < o.iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    step(eager);
    sync(devs);
    auto t1 = std::chrono::steady_clock::now();
    jit(sets[static_cast<size_t>(i % 3)]);
    sync(devs);
    auto t2 = std::chrono::steady_clock::now();
    te.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    tr.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  const double me = median(te), mr = median(tr);
  std::printf("time per all-reduce (median of %d): eager %.1f us, replay %.1f us (%.2fx)\n", o.iters, me, mr, mr > 0 ? me / mr : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  try {
    return run(o);
  } catch (const encore::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
