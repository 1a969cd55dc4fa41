#define KERNEL __kernel
#define GLOBAL(T) __global T*
#define REAL float
#define volatile volatile volatile
KERNEL void add(GLOBAL(REAL) a, __global const REAL* b, \
                unsigned long int n, long int m, int unsigned k, short int s) {
  size_t i = get_global_id(0);
  a[i] += b[i];
}
#if 0
__kernel void hidden(__global int* x) { }
#endif
