#version 450
// Merges split-K attention partials (attention.comp with SPLIT): for one (query, head) row,
// partial s holds O_s = sum exp(score - m_s) v, its max m_s and sum l_s. With M the largest m_s
// (and the sink, when there is one):
//   out = sum_s O_s exp(m_s - M) / (sum_s l_s exp(m_s - M) + exp(sink - M))
// One workgroup per row (flat index over a 2-D grid); a row that saw no key gets zeros.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(std430, binding = 0) readonly buffer Part { float part[]; };  // O [rows, n_splits, DV], then (m, l) [rows, n_splits]
layout(std430, binding = 1) readonly buffer Sinks { float sinks[]; };  // [n_head]
layout(std430, binding = 2) writeonly buffer Out { float o[]; };      // [rows, DV]

layout(push_constant) uniform Push {
    uint n_rows;  // n_q * n_head
    uint n_head;
    uint n_splits;
    uint dv;
    uint has_sinks;
} pc;

const float NEG = -3.0e38;  // attention.comp's max of a row that saw no key

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;
    const uint ml = pc.n_rows * pc.n_splits * pc.dv + row * pc.n_splits * 2;

    float m_all = NEG;
    for (uint s = 0; s < pc.n_splits; ++s) m_all = max(m_all, part[ml + 2 * s]);
    float sink = NEG;
    if (pc.has_sinks != 0u) {
        sink = sinks[row % pc.n_head];
        m_all = max(m_all, sink);
    }
    float l = pc.has_sinks != 0u ? exp(sink - m_all) : 0.0;
    for (uint s = 0; s < pc.n_splits; ++s) l += part[ml + 2 * s + 1] * exp(part[ml + 2 * s] - m_all);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;

    for (uint d = gl_LocalInvocationID.x; d < pc.dv; d += WG) {
        float acc = 0.0;
        for (uint s = 0; s < pc.n_splits; ++s)
            acc += part[(row * pc.n_splits + s) * pc.dv + d] * exp(part[ml + 2 * s] - m_all);
        o[row * pc.dv + d] = acc * inv;
    }
}
