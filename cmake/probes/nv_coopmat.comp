#version 450
// Configure-time probe (cmake/CoopmatProbe.cmake): glslc must compile and spirv-val accept an
// fp16 x fp16 -> fp32 GL_NV_cooperative_matrix product with shapes from specialization constants
// and loads from fp16 shared memory, as shaders/matmul.comp's COOPMAT variants do.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(constant_id = 0) const uint M = 16u;
layout(constant_id = 1) const uint N = 16u;
layout(constant_id = 2) const uint K = 16u;
layout(std430, binding = 0) buffer Y { float y[]; };
shared float16_t a_s[M * K];
shared float16_t b_s[K * N];
shared float c_s[M * N];
void main() {
    for (uint i = gl_LocalInvocationID.x; i < M * K; i += 32u) a_s[i] = float16_t(i);
    for (uint i = gl_LocalInvocationID.x; i < K * N; i += 32u) b_s[i] = float16_t(i);
    barrier();
    fcoopmatNV<16, gl_ScopeSubgroup, M, K> a;
    fcoopmatNV<16, gl_ScopeSubgroup, K, N> b;
    fcoopmatNV<32, gl_ScopeSubgroup, M, N> c = fcoopmatNV<32, gl_ScopeSubgroup, M, N>(0.0);
    coopMatLoadNV(a, a_s, 0, K, false);
    coopMatLoadNV(b, b_s, 0, K, true);
    c = coopMatMulAddNV(a, b, c);
    coopMatStoreNV(c, c_s, 0, M, true);
    subgroupBarrier();
    for (uint i = gl_SubgroupInvocationID; i < M * N; i += gl_SubgroupSize) y[i] = c_s[i];
}
