#pragma once
// encore::Communicator: collectives over MPI as items of a step. They live in a library of their
// own, libencore-mpi (pkg-config encore-mpi, CMake encore::mpi, meson dependency('encore-mpi')),
// built when encore is built with MPI (meson option `mpi`); libencore itself never links MPI. This
// header does not include mpi.h; the constructor from an MPI_Comm is in encore/mpi.hpp.
//   encore::Communicator comm = encore::Communicator::world();   // MPI_COMM_WORLD (initializes MPI if needed)
//   auto step = encore::TinyJit([&](const encore::Buffer& x) {
//     encore::Buffer g = dev.alloc<float>(n);
//     dev.launch(grad, {n}, {}, x, g);
//     comm.allreduce(g, encore::ReduceOp::mean);                 // eager now; recorded; replayed in place
//     dev.launch(update, {n}, {}, g, w);
//     return w;
//   });
//
// allreduce and broadcast run now (like Device::copy) and, inside a capture, are recorded as a
// native item reading and writing the buffer: never pruned as one-time, run on every replay in
// step order with the buffer bound then. The buffer goes through host staging memory allocated
// when the call is made (no allocation on replay): a read (after the work queued before it), MPI,
// a blocking write back. Eagerly the call does all three before it returns. On replay the read is
// enqueued at the item's place and MPI and the write back run just before the first later item
// that touches the buffer (or at the end of the step): independent items queued in between run
// on the device meanwhile. Every rank must issue the same collectives in the same order (as with
// MPI itself): capture and replay the same step on every rank.
//
// Determinism: the result never depends on timing or on the MPI library's reduction algorithm.
// allreduce gathers every rank's buffer to rank 0 (MPI_Gather), which reduces element by element
// in rank order 0, 1, ..., size-1 in the buffer's own type (f32 sums in float: ((x0 + x1) + x2) + ...;
// mean divides that sum by size once at the end; i32 sums wrap modulo 2^32, its mean truncates
// toward zero from the exact 64-bit sum), then broadcasts the result's bytes (MPI_Bcast). Every
// rank therefore ends with bit-identical bytes, and the same inputs give the same bytes on every
// run. MPI_Allreduce is not used: its order may differ between ranks and between runs.
//
// Errors: a buffer of another dtype than f32, f64 or i32, or of over 2 GiB in all -> ArgumentError;
// a failing MPI call -> DeviceError with MPI's error string.
#include <cstdint>
#include <memory>

#include "encore/buffer.hpp"
#include "encore/export.hpp"

// ENCORE_MPI_API: the symbols libencore-mpi exports (as ENCORE_API for libencore)
#if defined(ENCORE_STATIC) || !defined(_WIN32)
#define ENCORE_MPI_API ENCORE_API
#elif defined(ENCORE_MPI_BUILDING)
#define ENCORE_MPI_API __declspec(dllexport)
#else
#define ENCORE_MPI_API __declspec(dllimport)
#endif

namespace encore {

enum class ReduceOp : uint8_t { sum, mean, max };

class ENCORE_MPI_API Communicator {
 public:
  // MPI_COMM_WORLD (as Communicator::world()).
  Communicator();
  // MPI_COMM_WORLD; calls MPI_Init_thread (MPI_THREAD_SERIALIZED) if MPI is not initialized yet,
  // and then MPI_Finalize at exit.
  static Communicator world();
  // Over an MPI communicator: `mpi_comm` points at an MPI_Comm (see encore/mpi.hpp). encore works
  // on its own duplicate (MPI_Comm_dup, collective), so its messages never mix with the caller's.
  static Communicator from_mpi(const void* mpi_comm);

  int rank() const;
  int size() const;

  // Reduces `buf` over all ranks in place (see the determinism note above). f32, f64, i32.
  void allreduce(const Buffer& buf, ReduceOp op = ReduceOp::sum) const;
  // Copies rank `root`'s `buf` into every rank's `buf`.
  void broadcast(const Buffer& buf, int root = 0) const;

  struct Impl;
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  explicit Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace encore
