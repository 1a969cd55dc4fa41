// encore::Communicator over MPI: allreduce and broadcast as native items (see encore/communicator.hpp).
// Deterministic by construction: gather to rank 0, reduce there in rank order, broadcast the bytes.
#include "encore/communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "encore/device.hpp"
#include "encore/error.hpp"
#include "encore/exec_item.hpp"
#include "core/device_impl.hpp"
#include "core/native_call.hpp"
#include "core/owned_event.hpp"

namespace encore {

namespace {

std::string mpi_error_string(int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(msg, static_cast<size_t>(len));
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw DeviceError(std::string("encore::Communicator: ") + call + " failed: " + mpi_error_string(code));
}

// MPI_Init_thread when nobody did; MPI_Finalize at exit then (only if we initialized it).
void ensure_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    int inited = 0;
    check(MPI_Initialized(&inited), "MPI_Initialized");
    if (inited) return;
    int finalized = 0;
    check(MPI_Finalized(&finalized), "MPI_Finalized");
    if (finalized) throw DeviceError("encore::Communicator: MPI was already finalized");
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    std::atexit([] {
      int fin = 0;
      MPI_Finalized(&fin);
      if (!fin) MPI_Finalize();
    });
  });
}

bool mpi_alive() {
  int inited = 0, fin = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&fin);
  return inited && !fin;
}

}  // namespace

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  explicit Impl(MPI_Comm parent) {
    check(MPI_Comm_dup(parent, &comm), "MPI_Comm_dup");
    // errors come back as codes on our duplicate (the caller's communicator is left as it is)
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  }
  ~Impl() {
    if (comm != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&comm);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

namespace {

using CommImpl = Communicator::Impl;

// The collective as a native item over one buffer (args[0], inout). Staging is allocated here,
// once; run() allocates nothing.
struct CollectiveCall final : NativeCall {
  enum class Kind : uint8_t { allreduce, broadcast };
  std::shared_ptr<CommImpl> comm;
  Kind kind = Kind::allreduce;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  DType dtype = DType::f32;
  size_t count = 0, nbytes = 0;
  mutable std::vector<unsigned char> staging;  // this rank's bytes, then the result
  mutable std::vector<unsigned char> gathered; // rank 0 of an allreduce: every rank's bytes, in rank order
  mutable detail::OwnedEvent reading;  // begun: the read into staging

  // Split phase: replay enqueues the read at the item's place and does MPI and the write back only
  // before the first later item that touches the buffer, so independent items are queued first and
  // the device runs them while this rank waits for the others.
  bool split() const override { return true; }
  ~CollectiveCall() override {
    if (dev) cancel(*dev);
  }
  void run(detail::DeviceImpl& d, detail::NativeMem* const* mems, size_t n) const override {
    begin(d, mems, n);
    finish(d, mems, n);
  }
  void begin(detail::DeviceImpl& d, detail::NativeMem* const* mems, size_t n) const override {
    if (n != 1) throw ArgumentError("encore::Communicator: a collective takes one buffer");
    cancel(d);
    if (nbytes == 0 || (kind == Kind::broadcast && comm->rank != root)) return;
    reading = detail::OwnedEvent(&d, d.read_async(mems[0], 0, staging.data(), nbytes));  // after the work queued before it
  }
  void cancel(detail::DeviceImpl&) const noexcept override {
    try {
      reading.wait_reset();  // the device may still be writing staging
    } catch (...) {
    }
  }
  void finish(detail::DeviceImpl& d, detail::NativeMem* const* mems, size_t) const override {
    if (nbytes == 0) return;
    reading.wait_reset();
    if (!mpi_alive()) throw DeviceError("encore::Communicator: MPI is not initialized or already finalized");
    MPI_Comm c = comm->comm;
    const int bytes = static_cast<int>(nbytes);
    if (kind == Kind::broadcast) {
      check(MPI_Bcast(staging.data(), bytes, MPI_BYTE, root, c), "MPI_Bcast");
      if (comm->rank != root) d.write(mems[0], 0, staging.data(), nbytes, true);
      return;
    }
    check(MPI_Gather(staging.data(), bytes, MPI_BYTE, comm->rank == 0 ? gathered.data() : nullptr, bytes, MPI_BYTE, 0, c),
          "MPI_Gather");
    if (comm->rank == 0) reduce();
    check(MPI_Bcast(staging.data(), bytes, MPI_BYTE, 0, c), "MPI_Bcast");
    d.write(mems[0], 0, staging.data(), nbytes, true);
  }

  // rank 0: staging <- reduction of `gathered` in rank order 0..size-1
  void reduce() const {
    switch (dtype) {
      case DType::f32: reduce_as<float>(); break;
      case DType::f64: reduce_as<double>(); break;
      case DType::i32: reduce_i32(); break;
      default: break;  // checked when the call was made
    }
  }
  template <class T> void reduce_as() const {
    const int p = comm->size;
    const T* g = reinterpret_cast<const T*>(gathered.data());
    T* out = reinterpret_cast<T*>(staging.data());
    for (size_t i = 0; i < count; ++i) {
      T acc = g[i];
      for (int r = 1; r < p; ++r) {
        T v = g[static_cast<size_t>(r) * count + i];
        if (op == ReduceOp::max) acc = (v > acc || v != v) ? v : acc;  // NaN wins, deterministically
        else acc = acc + v;
      }
      if (op == ReduceOp::mean) acc = acc / static_cast<T>(p);
      out[i] = acc;
    }
  }
  void reduce_i32() const {
    const int p = comm->size;
    const int32_t* g = reinterpret_cast<const int32_t*>(gathered.data());
    int32_t* out = reinterpret_cast<int32_t*>(staging.data());
    for (size_t i = 0; i < count; ++i) {
      if (op == ReduceOp::max) {
        int32_t acc = g[i];
        for (int r = 1; r < p; ++r) acc = std::max(acc, g[static_cast<size_t>(r) * count + i]);
        out[i] = acc;
        continue;
      }
      int64_t sum = 0;
      for (int r = 0; r < p; ++r) sum += g[static_cast<size_t>(r) * count + i];
      out[i] = op == ReduceOp::mean ? static_cast<int32_t>(sum / p) : static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
    }
  }
};

std::shared_ptr<CollectiveCall> make_call(const std::shared_ptr<CommImpl>& comm, const Buffer& buf, const char* what) {
  if (!comm) throw ArgumentError(std::string("encore::Communicator::") + what + ": empty communicator");
  if (!buf) throw ArgumentError(std::string("encore::Communicator::") + what + ": null buffer");
  DType t = buf.dtype();
  if (t != DType::f32 && t != DType::f64 && t != DType::i32)
    throw ArgumentError(std::string("encore::Communicator::") + what + ": " + buf.describe() +
                        ": only f32, f64 and i32 buffers are supported");
  if (buf.nbytes() > static_cast<size_t>(INT_MAX))
    throw ArgumentError(std::string("encore::Communicator::") + what + ": " + buf.describe() + " is over 2 GiB");
  auto call = std::make_shared<CollectiveCall>();
  call->comm = comm;
  call->dtype = t;
  call->count = buf.count();
  call->nbytes = buf.nbytes();
  call->staging.resize(call->nbytes);
  call->dev = buf.device().shared_impl();
  return call;
}

}  // namespace

Communicator::Communicator() : Communicator(world()) {}

Communicator Communicator::world() {
  ensure_mpi();
  // one duplicate of MPI_COMM_WORLD per process, shared by every world() handle
  static std::shared_ptr<Impl> w = std::make_shared<Impl>(MPI_COMM_WORLD);
  return Communicator(w);
}

Communicator Communicator::from_mpi(const void* mpi_comm) {
  if (!mpi_comm) throw ArgumentError("encore::Communicator::from_mpi: null MPI_Comm pointer");
  ensure_mpi();
  return Communicator(std::make_shared<Impl>(*static_cast<const MPI_Comm*>(mpi_comm)));
}

int Communicator::rank() const { return impl_ ? impl_->rank : 0; }
int Communicator::size() const { return impl_ ? impl_->size : 1; }

void Communicator::allreduce(const Buffer& buf, ReduceOp op) const {
  auto call = make_call(impl_, buf, "allreduce");
  call->kind = CollectiveCall::Kind::allreduce;
  call->op = op;
  if (call->nbytes * static_cast<size_t>(impl_->size) > static_cast<size_t>(INT_MAX))
    throw ArgumentError("encore::Communicator::allreduce: " + buf.describe() + " times " + std::to_string(impl_->size) +
                        " ranks is over 2 GiB");
  if (impl_->rank == 0) call->gathered.resize(call->nbytes * static_cast<size_t>(impl_->size));  // gathered on rank 0 only
  const char* name = op == ReduceOp::sum ? "allreduce(sum)" : op == ReduceOp::mean ? "allreduce(mean)" : "allreduce(max)";
  detail::run_native(buf.device(), std::move(call), {inout(buf)}, name);
}

void Communicator::broadcast(const Buffer& buf, int root) const {
  auto call = make_call(impl_, buf, "broadcast");
  if (root < 0 || root >= impl_->size)
    throw ArgumentError("encore::Communicator::broadcast: root " + std::to_string(root) + " is not a rank of a communicator of " +
                        std::to_string(impl_->size));
  call->kind = CollectiveCall::Kind::broadcast;
  call->root = root;
  detail::run_native(buf.device(), std::move(call), {inout(buf)}, "broadcast(root " + std::to_string(root) + ")");
}

}  // namespace encore
