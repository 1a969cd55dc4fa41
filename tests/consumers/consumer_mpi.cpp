// A consumer of encore::Communicator (libencore-mpi) through CMake's encore::mpi (.ci/consumers.sh
// builds it where encore was built with MPI; it is not run: a run would need mpirun).
#include <encore/encore.hpp>
#include <encore/mpi.hpp>

#include <cstdio>

int main(int argc, char**) {
  if (argc > 1) {  // never taken by consumers.sh: the link is what is checked
    encore::Communicator comm = encore::communicator(MPI_COMM_WORLD);
    encore::Device dev = encore::Device::open();
    encore::Buffer g = dev.alloc<float>(16);
    comm.allreduce(g, encore::ReduceOp::mean);
    std::printf("rank %d of %d\n", comm.rank(), comm.size());
  }
  return 0;
}
