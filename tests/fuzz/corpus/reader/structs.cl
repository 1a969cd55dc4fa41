typedef struct { char c; double d; short s[3]; } mixed;
typedef struct { float alpha; int n; } par_str;
struct shift { float4 add; int k; };
typedef struct { par_str inner; uchar tag; float3 v; } nested;
typedef struct __attribute__((packed)) { char c; int v; } packed_t;
__kernel void bv(__global double* y, mixed m, nested n, struct shift s, packed_t p) { y[0] = m.d + n.tag + s.k + p.v; }
