// Workgroup-wide reductions of one float per invocation, for 1-D workgroups whose size is the
// specialization constant WG (a power of two). Include after declaring
//   layout(local_size_x_id = 0) in;  layout(constant_id = 0) const uint WG = ...;
// With USE_SUBGROUP the values are first reduced inside each subgroup (subgroupAdd/Max), else a
// shared-memory tree does it all (no optional feature needed). Every invocation of the
// workgroup must call these, in uniform control flow; each call returns the result to all.
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float reduce_sh[WG];

#ifdef USE_SUBGROUP
#define VKLLM_WG_REDUCE(NAME, OP, SUBGROUP_OP)                               \
    float NAME(float v) {                                                    \
        v = SUBGROUP_OP(v);                                                  \
        barrier(); /* earlier readers of reduce_sh are done */               \
        if (subgroupElect()) reduce_sh[gl_SubgroupID] = v;                   \
        barrier();                                                           \
        float r = reduce_sh[0];                                              \
        for (uint i = 1; i < gl_NumSubgroups; ++i) r = OP(r, reduce_sh[i]);  \
        return r;                                                            \
    }
#else
#define VKLLM_WG_REDUCE(NAME, OP, SUBGROUP_OP)                               \
    float NAME(float v) {                                                    \
        const uint t = gl_LocalInvocationID.x;                               \
        barrier(); /* earlier readers of reduce_sh are done */               \
        reduce_sh[t] = v;                                                    \
        barrier();                                                           \
        for (uint s = WG / 2; s > 0; s >>= 1) {                              \
            if (t < s) reduce_sh[t] = OP(reduce_sh[t], reduce_sh[t + s]);    \
            barrier();                                                       \
        }                                                                    \
        return reduce_sh[0];                                                 \
    }
#endif

float reduce_op_add(float a, float b) { return a + b; }
VKLLM_WG_REDUCE(wg_sum, reduce_op_add, subgroupAdd)
VKLLM_WG_REDUCE(wg_max, max, subgroupMax)
