#pragma once
// GFLOP/s of each GEMM shape of the 784-256-128-10 MLP's training step (train_mlp --bench-gemm).
#include <ostream>

#include <encore/encore.hpp>

namespace mlp {

void bench_gemms(const encore::Device& dev, int batch, std::ostream& out);

}  // namespace mlp
