/* comments // and strings "__kernel void not_a_kernel()" */
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void reduce(__global const float* restrict x, __global float* out,
                                                                      __local float* scratch, const uint n) {
  scratch[get_local_id(0)] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) out[get_group_id(0)] = scratch[0];
}
kernel void copy4(global float4* dst, constant float4* src) { dst[get_global_id(0)] = src[get_global_id(0)]; }
