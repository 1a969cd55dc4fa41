__kernel void make_table(__global const float* w, __global float* table) {
  size_t i = get_global_id(0);
  table[i] = w[i] * (float)i;
}
__kernel void scale_add(__global const float* x, __global const float* table, __global float* t, float lr, int n) {
  size_t i = get_global_id(0);
  t[i] = x[i] * lr + table[i] + (float)n;
}
__kernel void accum(__global const float* t, __global float* s) {
  size_t i = get_global_id(0);
  s[i] += t[i];
}
__kernel void reduce_sum(__global const float* t, __global float* out, __local float* scratch) {
  size_t l = get_local_id(0), n = get_local_size(0);
  scratch[l] = t[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s /= 2) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = scratch[0];
}
__kernel void halve(__global float* a) {
  size_t i = get_global_id(0);
  a[i] = a[i] * 0.5f;
}
__kernel void bump(__global int* c, ulong by) { c[0] += (int)by; }
