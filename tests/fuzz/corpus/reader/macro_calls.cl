#define SET(a, i) a[i] = 0
#define W(i) C[i] = 0
#define OUT(i) W(i)
#define TARGET C
#define ASSIGN(op) op
#define IDX(i) [i]
#define CAT(a, b) a##b
#define S SET
__kernel void calls(__global float* C, __global float* p, __global float* q, __global float* r, __global float* par) {
  SET(p, 0);
  OUT(1);
  q[0] ASSIGN(=) r[0];
  q IDX(1) = r[1];
  S(q);
  if (ASSIGN(1)) q[2] = r[2];
  CAT(pa, r)[0] = 1;
}
