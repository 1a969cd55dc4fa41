#include "h.h"
#if defined(__OPENCL_VERSION__) && __OPENCL_VERSION__ >= 120
__kernel void k12(__global int* x) { x[0] = 1; }
#else
__kernel void k12(__global float* x) { x[0] = 1; }
#endif
