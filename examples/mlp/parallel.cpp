#include "parallel.hpp"

#include <cstdlib>
#include <vector>

namespace mlp {

namespace {
#ifdef ENCORE_EXAMPLES_MPI
const encore::Communicator& world() {
  static const encore::Communicator c = encore::Communicator::world();
  return c;
}
#endif
[[noreturn]] void no_mpi() {
  throw encore::ArgumentError("--data-parallel: this train_mlp was built without MPI (install libopenmpi-dev and reconfigure with -Dmpi=enabled)");
}
}  // namespace

bool Group::mpi_available() {
#ifdef ENCORE_EXAMPLES_MPI
  return true;
#else
  return false;
#endif
}

Group Group::open(bool data_parallel) {
  Group g;
  if (!data_parallel) return g;
#ifdef ENCORE_EXAMPLES_MPI
  g.mpi_ = true;
  g.rank_ = world().rank();
  g.size_ = world().size();
#else
  no_mpi();
#endif
  return g;
}

#ifdef ENCORE_EXAMPLES_MPI
void Group::allreduce(const encore::Buffer& buf, encore::ReduceOp op) const {
  if (!mpi_) no_mpi();
  world().allreduce(buf, op);
}
void Group::broadcast(const encore::Buffer& buf, int root) const {
  if (!mpi_) no_mpi();
  world().broadcast(buf, root);
}
#else
void Group::allreduce(const encore::Buffer&, encore::ReduceOp) const { no_mpi(); }
void Group::broadcast(const encore::Buffer&, int) const { no_mpi(); }
#endif

int local_rank(int fallback) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (*end == '\0' && r >= 0) return int(r);
    }
  }
  return fallback;
}

encore::Device device_for_rank(const std::string& name, int local_rank) {
  if (!name.empty()) return encore::Device::open(name);
  const char* env = std::getenv("ENCORE_DEVICE");
  if (env && *env) return encore::Device::open();
  const std::vector<encore::DeviceInfo> all = encore::Device::list();
  std::vector<std::string> gpus, any;
  for (const encore::DeviceInfo& d : all) {
    any.push_back(d.id);
    if (d.is_gpu) gpus.push_back(d.id);
  }
  const std::vector<std::string>& pick = gpus.empty() ? any : gpus;
  if (pick.size() < 2) return encore::Device::open();
  return encore::Device::open(pick[size_t(local_rank) % pick.size()]);
}

}  // namespace mlp
