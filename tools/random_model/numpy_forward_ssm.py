#!/usr/bin/python3
# An independent float64 numpy forward of a Mamba-2 golden model (tests/golden/ssm/NAME), written
# from llama.cpp's build_mamba2_layer and ggml's ssm_conv / ssm_scan: RMSNorm, ssm_in into
# z | x B C | dt, causal conv1d (zero initial state) + bias + SiLU, the selective scan with
# softplus(dt + bias), scalar A per head, grouped B/C and D, y * silu(z), the grouped RMSNorm,
# ssm_out, the residual; then the final norm and the output head. Prints the largest difference
# from llama.cpp's golden logits.  /usr/bin/python3 tools/random_model/numpy_forward_ssm.py tests/golden/ssm/mamba2
# (F32 models only match closely: llama.cpp rounds activations to 8 bits before Q8_0 matmuls.)
import sys, numpy as np
import os
sys.path.insert(0, os.path.join(os.environ.get('ORACLE_HOME', os.path.expanduser('~/.cache/llama-oracle')), 'src', 'gguf-py'))
from gguf import GGUFReader
import gguf
prefix = sys.argv[1]
r = GGUFReader(prefix + '.gguf')
def kv(k):
    f = r.fields[k]; return f.parts[f.data[0]][0]
T = {}
for t in r.tensors:
    a = np.array(t.data)
    if t.tensor_type == gguf.GGMLQuantizationType.Q8_0:
        a = gguf.dequantize(t.data, t.tensor_type)
    T[t.name] = np.asarray(a, dtype=np.float64).reshape([int(x) for x in reversed(t.shape)] if a.ndim == 1 and len(t.shape) > 1 else a.shape)
A = 'mamba2.'
nl = int(kv(A+'block_count')); d_conv = int(kv(A+'ssm.conv_kernel')); d_inner = int(kv(A+'ssm.inner_size'))
d_state = int(kv(A+'ssm.state_size')); nh = int(kv(A+'ssm.time_step_rank')); ng = int(kv(A+'ssm.group_count'))
eps = float(kv(A+'attention.layer_norm_rms_epsilon')); hd = d_inner // nh
toks = [int(x) for x in open(prefix + '.tokens.txt').read().split()]
emb = T['token_embd.weight']  # [vocab, n_embd]
out_w = T.get('output.weight', emb)
def rms(x, w): return x / np.sqrt((x*x).mean(-1, keepdims=True) + eps) * w
x = emb[toks]
n = len(toks); convd = d_inner + 2*ng*d_state
for il in range(nl):
    p = f'blk.{il}.'
    h = rms(x, T[p+'attn_norm.weight'])
    zxbcdt = h @ T[p+'ssm_in.weight'].T
    z = zxbcdt[:, :d_inner]; xbc = zxbcdt[:, d_inner:d_inner+convd]; dt = zxbcdt[:, d_inner+convd:]
    cw = T[p+'ssm_conv1d.weight']  # [convd, d_conv]
    pad = np.concatenate([np.zeros((d_conv-1, convd)), xbc], 0)
    conv = np.stack([(pad[t:t+d_conv] * cw.T).sum(0) for t in range(n)]) + T[p+'ssm_conv1d.bias']
    conv = conv / (1 + np.exp(-conv))
    xs = conv[:, :d_inner].reshape(n, nh, hd); B = conv[:, d_inner:d_inner+ng*d_state].reshape(n, ng, d_state)
    C = conv[:, d_inner+ng*d_state:].reshape(n, ng, d_state)
    dt = dt + T[p+'ssm_dt.bias']; dt = np.where(dt > 20, dt, np.log1p(np.exp(dt)))
    a = T[p+'ssm_a'].reshape(nh); D = T[p+'ssm_d'].reshape(nh)
    S = np.zeros((nh, hd, d_state)); y = np.zeros((n, nh, hd))
    g = np.arange(nh) // (nh // ng)
    for t in range(n):
        dA = np.exp(dt[t] * a)
        S = S * dA[:, None, None] + (xs[t] * dt[t][:, None])[:, :, None] * B[t][g][:, None, :]
        y[t] = (S * C[t][g][:, None, :]).sum(-1) + xs[t] * D[:, None]
    y = y.reshape(n, d_inner) * (z / (1 + np.exp(-z)))
    y = rms(y.reshape(n, ng, d_inner//ng), T[p+'ssm_norm.weight'].reshape(ng, d_inner//ng)).reshape(n, d_inner)
    x = x + y @ T[p+'ssm_out.weight'].T
logits = rms(x, T['output_norm.weight']) @ out_w.T
gold = np.fromfile(prefix + '.logits.f32', np.float32).reshape(n, -1)
print(prefix, 'max |numpy - llama.cpp|', np.abs(logits - gold).max(), 'logit std', gold.std())
