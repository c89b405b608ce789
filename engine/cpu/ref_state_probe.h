// Reference of the state probes (engine/ops/state_probe_ops.h): what a state-space, RWKV-7 or
// Gated DeltaNet layer keeps in its recurrent state, computed from the layer's scan inputs in
// plain C++. The state layouts and the scans' math are ref_ssm.h's, ref_ssm_mamba1.h's,
// ref_rwkv.h's and ref_delta_net.h's; the state passed in is updated as the layer's scan would
// update it. Token-major inputs are rows with a stride (floats). ShapeError (ref_ops.h) on bad
// shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/ref_delta_net.h"

namespace vkllm::cpu {

// Per token and head: the Frobenius norm of the head's state after the token and its decay.
struct StateTrace {
    int64_t n_tokens = 0, n_head = 0;
    std::vector<float> norm, decay;  // [n_tokens][n_head]
};

// Mamba-2 (scalar decay per head, grouped B): dt = softplus(dt_raw + dt_bias) per head,
// decay = exp(dt A[h]), the head's state [head_dim][d_state] updated as cpu::ssm_scan does.
// state [n_head head_dim][d_state]; x [n][n_head head_dim], b [n][n_group d_state],
// dt [n][n_head]; dt_bias may be null.
struct SsmStateRef {
    int64_t n_tokens = 0, n_head = 0, head_dim = 0, d_state = 0, n_group = 1;
    float* state = nullptr;
    const float *x = nullptr, *b = nullptr, *dt = nullptr, *dt_bias = nullptr, *a = nullptr;
    int64_t x_stride = 0, b_stride = 0, dt_stride = 0;
};
StateTrace ssm_state_trace(const SsmStateRef& r);

// Mamba-1 (a decay per channel and state, one group): one head over the whole state
// [d_inner][d_state]; decay = the mean of exp(softplus(dt[c]) A[c][n]) over c and n.
// dt [n][d_inner] (its bias added), b [n][d_state], a [d_inner][d_state].
struct Mamba1StateRef {
    int64_t n_tokens = 0, d_inner = 0, d_state = 0;
    float* state = nullptr;
    const float *x = nullptr, *b = nullptr, *dt = nullptr, *a = nullptr;
    int64_t x_stride = 0, b_stride = 0, dt_stride = 0;
};
StateTrace mamba1_state_trace(const Mamba1StateRef& r);

// RWKV-7: the head's N x N state updated as cpu::rwkv_wkv7 does; decay = the mean of w over the
// head's channels. state [n_head N][N]; w, k, v, a, b [n][n_head N] at one stride.
struct Rwkv7StateRef {
    int64_t n_tokens = 0, n_head = 0, head_size = 0;
    float* state = nullptr;
    const float *w = nullptr, *k = nullptr, *v = nullptr, *a = nullptr, *b = nullptr;
    int64_t stride = 0;
};
StateTrace rwkv7_state_trace(const Rwkv7StateRef& r);

// Gated DeltaNet (ref_delta_net.h's operands; its out is not written): each value head's
// d_k x d_v state updated as cpu::gated_delta_net does; decay = exp(g) of the head, or the mean of
// exp(g) over its key rows (a decay per key row).
StateTrace delta_net_state_trace(const DeltaNetRef& r);

// A Mamba-2 head's token-to-token mixing map over tokens 0..n-1 (the scan's dual form):
//   M[t][s] = (C_t . B_s) prod_{s < r <= t} exp(dt_r A) dt_s  for s <= t, else 0
// dt = softplus(dt_raw + dt_bias) of the head; B and C of the head's group. Returns [n][n].
// With a zero initial state, y_t = sum_s M[t][s] x_s[channel] for each channel of the head
// (before the D skip and the gate).
struct SsmMixMapRef {
    int64_t n_tokens = 0, n_head = 0, d_state = 0, n_group = 1, head = 0;
    const float *b = nullptr, *c = nullptr, *dt = nullptr, *dt_bias = nullptr, *a = nullptr;
    int64_t b_stride = 0, c_stride = 0, dt_stride = 0;
};
std::vector<float> ssm_mix_map(const SsmMixMapRef& r);

// A Gated DeltaNet value head's token-to-token mixing map over tokens 0..n-1 of r (the layer's
// operands, ref_delta_net.h; its state, v and out are not read), from a zero state:
// out_t = sum_s M[t][s] v_s for every value column, M the same for all columns. Returns [n][n].
//
// Derivation. With D_t = diag(exp(g_t)) (g per head: a multiple of I) the step
//   S_t = D_t S_{t-1} + k_t e_t^T,   e_t = beta_t (v_t - (D_t S_{t-1})^T k_t)
// unrolls from S = 0 to S_t = sum_{u<=t} P(u,t) k_u e_u^T with P(u,t) = D_{u+1} .. D_t (P(t,t) = I),
// so with a[t][u] = k_t^T P(u,t) k_u and b[t][u] = q_t^T P(u,t) k_u (u <= t):
//   e_t = beta_t (v_t - sum_{u<t} a[t][u] e_u),    o_t = scale sum_{u<=t} b[t][u] e_u.
// The e are linear in the v: e = T v with T = (I + diag(beta) A)^{-1} diag(beta) (A the strictly
// lower part of a; T lower-triangular, found by forward substitution), hence
//   M[t][s] = scale sum_{s<=u<=t} b[t][u] T[u][s],   0 for s > t.
// Equivalently S_t = (I - beta_t k_t k_t^T) D_t S_{t-1} + beta_t k_t v_t^T, so
// M[t][s] = scale beta_s q_t^T (I - beta_t k_t k_t^T) D_t .. (I - beta_{s+1} k_{s+1} k_{s+1}^T) D_{s+1} k_s:
// the key's vector beta_s k_s carried forward through the later tokens' decay and erasure (what
// the GPU kernel computes); this reference takes the first form, in double.
std::vector<float> delta_net_mix_map(const DeltaNetRef& r, int64_t head);

}  // namespace vkllm::cpu
