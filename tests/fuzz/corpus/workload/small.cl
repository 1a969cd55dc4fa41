// The fuzzer parses workload files only (nothing compiles): small.json reads this source_file inside the corpus root.
__kernel void bump(__global int* c, ulong k) { c[0] += (int)k; }
