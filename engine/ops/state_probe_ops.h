// The state probes' kernels: what a state-space (Mamba-1, Mamba-2), RWKV-7 or Gated DeltaNet
// layer keeps in its recurrent state, recomputed from the layer's own scan inputs in a work copy
// of the state (the layer's state and outputs are untouched). The math is cpu/ref_state_probe.h's;
// the kernels are tested against it (tests/model/test_state_probe_ops.cpp). Each op records a
// dispatch and inserts no barrier; record them before the layer's scan, which overwrites the
// state they read.
#pragma once

#include <cstdint>

#include "ops/delta_net_ops.h"
#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// Key rows a Mamba-2 layer's mixing maps read (ssm_state_scan writes them, ssm_mix_map reads
// them), in `work` after the state copy: [rows][n_head][2] (softplus dt, the running sum L of
// dt A from the first key row), then [rows][n_group * d_state] (B).
struct StateKeys {
    int64_t rows = 0;   // key rows the work view holds (0: no maps)
    int64_t first = 0;  // the key row of the pass's first token
    bool prev = false;  // row first - 1 holds the previous token's L (else L starts at 0)
};
// Floats of `work` a layer needs: the state copy and the key rows.
uint64_t state_work_floats(int64_t state_floats, int64_t n_head, int64_t gs, int64_t key_rows);

// Per token t and probed head: out[t][h] = (the Frobenius norm of the head's state after token
// t, its decay at t). Mamba-2 (mamba1 false): the operands as ops::SsmScanArgs's (state
// [d_inner, d_state], x [n, d_inner], b [n, n_group d_state], dt [n, n_head], dt_bias [1, n_head]
// or no buffer, a [1, n_head]), a head per Mamba-2 head. Mamba-1: as SsmScanMamba1Args's (dt
// [n, d_inner] with its bias added, b [n, d_state], a [d_inner, d_state]), one head. out:
// [n, n_probe_heads * 2] packed; work: [1, state_work_floats(...)] apart from every operand.
// Tokens whose key row is below keys.rows store their keys (Mamba-2 only).
struct SsmStateScanArgs {
    bool mamba1 = false;
    int64_t n_head = 0, n_group = 1;  // Mamba-2's heads and B/C groups
    TensorView state, x, b, dt, dt_bias, a, out, work;
    StateKeys keys;
};
void ssm_state_scan(Stream& s, const SsmStateScanArgs& a);

// RWKV-7: per token and head, out[t][h] = (the norm of the head's N x N state after token t,
// the mean of w over the head's channels). Operands as ops::RwkvWkv7Args's (state [C, N], w, k,
// v, a, b [n, C] with C = n_head N); out [n, n_head * 2] packed; work [1, C N] apart from all.
struct Rwkv7StateScanArgs {
    int64_t n_head = 0, head_size = 0;
    TensorView state, w, k, v, a, b, out, work;
};
void rwkv7_state_scan(Stream& s, const Rwkv7StateScanArgs& a);

// One Mamba-2 head's mixing map for the pass's tokens with key rows (c.rows of them, from
// keys.first): map[t][s] = (C_t . B_s) exp(L_t - L_s) dt_s for key rows s <= keys.first + t,
// else 0; C the pass's [n, n_group d_state] (as SsmScanArgs's c), work as ssm_state_scan left
// it, map [c.rows, keys.rows] packed.
struct SsmMixMapArgs {
    int64_t n_head = 0, n_group = 1, d_state = 0, state_floats = 0;
    int64_t head = 0;
    TensorView c, work, map;
    StateKeys keys;
};
void ssm_mix_map(Stream& s, const SsmMixMapArgs& a);

// Gated DeltaNet: per token and value head, out[t][h] = (the norm of the head's d_k x d_v state
// after token t, exp(g) of the head or its mean over the key rows). `layer` is the layer's
// ops::gated_delta_net call (its state, k, v, g, beta, heads and norm; q and out are not read);
// out [n, n_head_v * 2] packed; work [1, n_head_v d_v d_k] apart from every operand.
struct DeltaNetStateScanArgs {
    GatedDeltaNetArgs layer;
    TensorView out, work;
};
void delta_net_state_scan(Stream& s, const DeltaNetStateScanArgs& a);

// A Gated DeltaNet value head's mixing map (cpu::delta_net_mix_map: out_t = sum_s M[t][s] v_s over
// the call's tokens from a zero state) for a tile of them: map[r][c] = M[q_first + r][k_first + c],
// 0 where the key is after the query; map [n_q, n_k], any row stride. `layer` is the layer's
// ops::gated_delta_net call (its q, k, g, beta, heads and norm; its state, v and out are not read).
struct DeltaNetMixMapArgs {
    GatedDeltaNetArgs layer;
    int64_t head = 0;
    int64_t q_first = 0, k_first = 0;
    TensorView map;
};
void delta_net_mix_map(Stream& s, const DeltaNetMixMapArgs& a);

}  // namespace vkllm::ops
