// forms the reader takes as only storing through a pointer, and near misses
#define ID(x) x
__kernel void st(__global float* p, __global float* q, __global half* h, int n) {
  float x;
  p[n] = q[0] * 2;
  x = p[n + 1] = q[1];
  vstore4((float4)(x), 0, p + 4 * n + 1);
  vstore_half_rte(q[2], n, h);
  vstore_half4((float4)(1), n, h + 8);
}
__kernel void miss(__global float* p, __global float* q, int n) {
  p[n] += 1; (p[n]) = 2; p[(int)p[0]] = 3; ++p[n]; p[n]++;
  vstore4(vload4(0, p), 1, p);
  p[n] = ID(q[0]);
  { float p[2]; p[0] = q[0]; q[1] = p[0]; }
}
