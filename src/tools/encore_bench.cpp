// encore-bench: runs a workload file eagerly and through TinyJit (see docs/harness.md).
#include "workload/cli.hpp"

int main(int argc, char** argv) { return encore::workload::bench_main(argc, argv); }
