// encore-bench: runs a workload file eagerly and through TinyJit (see WORKLOAD.md).
#include "encore/workload.hpp"

int main(int argc, char** argv) { return encore::workload::bench_main(argc, argv); }
