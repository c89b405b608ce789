# The table of shader variants: vkllm_shader(<name> <source> [DEFINE ...]).
# Each name becomes an identifier (gpu::ShaderId::<name>, cmake/Shaders.cmake): the ops pick a
# variant by type and capability from typed tables over those identifiers, so renaming or
# removing a variant here fails to compile where the engine uses it.
vkllm_shader(fill_test fill_test.comp)

# --- norm, rope, attention, elementwise, softmax, argmax ---
# _sg: reductions use subgroup arithmetic (chosen when caps().subgroup_arithmetic).
vkllm_shader(rms_norm      norm.comp RMS_NORM)
vkllm_shader(rms_norm_sg   norm.comp RMS_NORM USE_SUBGROUP)
vkllm_shader(layer_norm    norm.comp LAYER_NORM)
vkllm_shader(layer_norm_sg norm.comp LAYER_NORM USE_SUBGROUP)
vkllm_shader(swiglu        elementwise.comp SWIGLU)
vkllm_shader(geglu         elementwise.comp GEGLU)
vkllm_shader(geglu_fp16_table elementwise.comp GEGLU FP16_TABLE)
vkllm_shader(gelu_fp16_table  elementwise.comp GELU FP16_TABLE)
vkllm_shader(add           elementwise.comp ADD)
vkllm_shader(gelu          elementwise.comp GELU)
vkllm_shader(gelu_erf      elementwise.comp GELU_ERF)
vkllm_shader(scale         elementwise.comp SCALE)
vkllm_shader(softcap       elementwise.comp SOFTCAP)
vkllm_shader(swiglu_oai    elementwise.comp SWIGLU_OAI)
vkllm_shader(add_bias      elementwise.comp ADD_BIAS)
vkllm_shader(softmax       softmax.comp)
vkllm_shader(softmax_sg    softmax.comp USE_SUBGROUP)
vkllm_shader(argmax        argmax.comp)
vkllm_shader(rope          rope.comp)
vkllm_shader(rope_f16_out  rope.comp OUT_F16)   # rope_into_slots for an fp16 cache
vkllm_shader(rope_qkv      rope_qkv.comp)        # decode's q, k and v into an f32 cache
vkllm_shader(rope_qkv_f16  rope_qkv.comp OUT_F16)
vkllm_shader(attention          attention.comp)
vkllm_shader(attention_f16_kv   attention.comp KV_F16)   # an fp16 KV cache (16-bit storage)
vkllm_shader(attention_q8_0_kv  attention.comp KV_Q8_0)  # a Q8_0 KV cache (32-value blocks)
vkllm_shader(attention_combine  attention_combine.comp)
vkllm_shader(attention_summary    attention_summary.comp)  # probes: per-row entropy, sink, distance
vkllm_shader(attention_summary_sg attention_summary.comp USE_SUBGROUP)

# The weight types the GPU decodes (shaders/include/dequant*.glsl).
set(VKLLM_WEIGHT_TYPES f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k mxfp4
    iq4_nl iq4_xs tq1_0 tq2_0)

# --- Weight ops (matvec, matmul, get_rows): one variant per weight type, named
# <op>_<type>; matvec_<type>_sg reduces with subgroupAdd (chosen when subgroup arithmetic is on).
foreach(wtype ${VKLLM_WEIGHT_TYPES})
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(matvec_${wtype}    matvec.comp   WTYPE_${WTYPE})
  vkllm_shader(matvec_${wtype}_sg matvec.comp   WTYPE_${WTYPE} USE_SUBGROUP)
  vkllm_shader(matvec_swiglu_${wtype}    matvec.comp WTYPE_${WTYPE} GLU)
  vkllm_shader(matvec_swiglu_${wtype}_sg matvec.comp WTYPE_${WTYPE} GLU USE_SUBGROUP)
  vkllm_shader(matmul_${wtype}    matmul.comp   WTYPE_${WTYPE})
  vkllm_shader(get_rows_${wtype}  get_rows.comp WTYPE_${WTYPE})
endforeach()
# _idot: the decode matvecs (matvec.comp, moe_matvec.comp; plain and GLU) dotting int8 x in
# integers (8-bit activations; integer dot product).
foreach(wtype q8_0 q4_0 q4_1 q5_0 q5_1)
  string(TOUPPER ${wtype} WTYPE)
  foreach(op matvec moe_matvec)
    foreach(glu "" swiglu_)
      set(defines WTYPE_${WTYPE} INT_DOT)
      if(glu)
        list(APPEND defines GLU)
      endif()
      vkllm_shader(${op}_${glu}${wtype}_idot    ${op}.comp ${defines})
      vkllm_shader(${op}_${glu}${wtype}_idot_sg ${op}.comp ${defines} USE_SUBGROUP)
    endforeach()
  endforeach()
endforeach()

# --- activation rounding before quantised matmuls (llama.cpp CPU parity) ---
vkllm_shader(round_act_q8_32  round_act.comp BLOCK=32)
vkllm_shader(round_act_q8_256 round_act.comp BLOCK=256)
vkllm_shader(round_act_f16    round_act.comp BLOCK=1 ROUND_F16)
vkllm_shader(round_act_bf16   round_act.comp BLOCK=1 ROUND_BF16)

# --- Mixture of experts: routing, counting sort by expert, grouped expert matmuls
# (moe_matvec_<type>[_sg] for few tokens, moe_matvec_swiglu_<type> for decode's gate, up and
# SwiGLU at once, moe_matmul_<type> tiled over the sorted pairs),
# weighted combine, expert-load probe.
vkllm_shader(moe_route   moe_route.comp)
vkllm_shader(moe_sort    moe_sort.comp)
vkllm_shader(moe_combine moe_combine.comp)
vkllm_shader(moe_load    moe_load.comp)
foreach(wtype ${VKLLM_WEIGHT_TYPES})
  string(TOUPPER ${wtype} WTYPE)
  vkllm_shader(moe_matvec_${wtype}    moe_matvec.comp WTYPE_${WTYPE})
  vkllm_shader(moe_matvec_${wtype}_sg moe_matvec.comp WTYPE_${WTYPE} USE_SUBGROUP)
  vkllm_shader(moe_matvec_swiglu_${wtype}    moe_matvec.comp WTYPE_${WTYPE} GLU)
  vkllm_shader(moe_matvec_swiglu_${wtype}_sg moe_matvec.comp WTYPE_${WTYPE} GLU USE_SUBGROUP)
  vkllm_shader(moe_matmul_${wtype}    moe_matmul.comp WTYPE_${WTYPE})
endforeach()
# --- end mixture of experts ---

# --- Llama 4's weighted expert input ---
vkllm_shader(moe_weight_input moe_weight_input.comp)

# --- residual-stream edits (interventions, ResidualEdit) ---
vkllm_shader(residual_edit residual_edit.comp)

# --- super-weight correction after ffn_down (quantize --keep-super-weights) ---
vkllm_shader(super_correction super_correction.comp)

# --- read-back with a non-finite check (logits and embeddings) ---
vkllm_shader(copy_checked copy_checked.comp)
vkllm_shader(set_rows set_rows.comp)
vkllm_shader(set_rows_f16 set_rows.comp OUT_F16)
vkllm_shader(set_rows_q8_0 set_rows.comp OUT_Q8_0)

# --- state-space layers (Mamba-1, Mamba-2): short causal conv1d with its state, the selective scan,
# the grouped RMSNorm after the gate (engine/ops/ssm_ops.h) ---
vkllm_shader(ssm_conv    ssm_conv.comp)
vkllm_shader(ssm_scan    ssm_scan.comp)
vkllm_shader(ssm_scan_sg ssm_scan.comp USE_SUBGROUP)
vkllm_shader(ssm_scan_rows ssm_scan.comp ROWS)   # one invocation per state row (CPU drivers)
vkllm_shader(ssm_scan_mamba1 ssm_scan_mamba1.comp)   # Mamba-1: a decay per channel and state
vkllm_shader(ssm_norm    ssm_norm.comp)
vkllm_shader(ssm_norm_sg ssm_norm.comp USE_SUBGROUP)

# --- activations beyond elementwise.comp's (engine/ops/activation_ops.h) ---
vkllm_shader(relu_sqr relu_sqr.comp)   # max(x, 0)^2: Nemotron-H's FFN

# --- linear attention: the gated delta rule (Gated DeltaNet, KDA; engine/ops/delta_net_ops.h) ---
vkllm_shader(delta_net delta_net.comp)
vkllm_shader(delta_net_gates delta_net_gates.comp)   # g = softplus(alpha + dt_bias) A, beta = sigmoid(b)
