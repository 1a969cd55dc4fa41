#pragma once
// The one encore header that includes mpi.h: a Communicator over an application's MPI_Comm.
//   encore::Communicator comm = encore::communicator(my_comm);
#include <mpi.h>

#include "encore/communicator.hpp"

namespace encore {

inline Communicator communicator(MPI_Comm comm) { return Communicator::from_mpi(&comm); }

}  // namespace encore
