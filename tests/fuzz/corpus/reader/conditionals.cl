#define USE_DOUBLE 0
#if USE_DOUBLE && defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real_t;
#elif defined(HALF)
typedef half real_t;
#else
typedef float real_t;
#endif
#ifndef TILE
#define TILE 16
#endif
#undef TILE
#define TILE (4 * 4)
__kernel void scale(__global real_t* y, __global const real_t* x, real_t a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i];
}
