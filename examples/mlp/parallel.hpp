#pragma once
// Data-parallel pieces of train_mlp: the ranks of an MPI job (encore::Communicator when libencore
// was built with MPI; ENCORE_EXAMPLES_MPI is then defined for this file) and the choice of a device
// per rank. Without MPI a Group has one rank and asking for more is an error.
#include <string>

#include <encore/communicator.hpp>
#include <encore/encore.hpp>

namespace mlp {

class Group {
 public:
  // data_parallel: join MPI_COMM_WORLD (a single process without mpirun is one rank); otherwise
  // one rank and no MPI at all. Throws ArgumentError when data_parallel and MPI is absent.
  static Group open(bool data_parallel);
  static bool mpi_available();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The collectives of encore::Communicator (eager, recorded into a capture like any item).
  // Never called on a Group made without data_parallel.
  void allreduce(const encore::Buffer& buf, encore::ReduceOp op) const;
  void broadcast(const encore::Buffer& buf, int root = 0) const;

 private:
  int rank_ = 0, size_ = 1;
  [[maybe_unused]] bool mpi_ = false;  // joined MPI (read only in a build with MPI)
};

// This process's rank among those on its node: the launcher's environment (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, MPICH/Hydra's MPI_LOCALRANKID, Slurm's SLURM_LOCALID), else `fallback`.
int local_rank(int fallback);

// The device for a rank: `name` when given (or ENCORE_DEVICE when set), otherwise the default kind
// of device (the GPUs when there are any, else every OpenCL device) number local_rank % count, so
// ranks on one node spread over its GPUs (one rank per GPU with --map-by ppr:G:node).
encore::Device device_for_rank(const std::string& name, int local_rank);

}  // namespace mlp
