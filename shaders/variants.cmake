# The table of shader variants: vkllm_shader(<name> <source> [DEFINE ...]).
# Names encode the variant so the engine can pick one by type and capability.
vkllm_shader(fill_test fill_test.comp)

# --- norm, rope, attention, elementwise, softmax, argmax (helper D2) ---
# _sg: reductions use subgroup arithmetic (chosen when caps().subgroup_arithmetic).
vkllm_shader(rms_norm      norm.comp RMS_NORM)
vkllm_shader(rms_norm_sg   norm.comp RMS_NORM USE_SUBGROUP)
vkllm_shader(layer_norm    norm.comp LAYER_NORM)
vkllm_shader(layer_norm_sg norm.comp LAYER_NORM USE_SUBGROUP)
vkllm_shader(swiglu        elementwise.comp SWIGLU)
vkllm_shader(geglu         elementwise.comp GEGLU)
vkllm_shader(add           elementwise.comp ADD)
vkllm_shader(gelu          elementwise.comp GELU)
vkllm_shader(gelu_erf      elementwise.comp GELU_ERF)
vkllm_shader(scale         elementwise.comp SCALE)
vkllm_shader(add_bias      elementwise.comp ADD_BIAS)
vkllm_shader(softmax       softmax.comp)
vkllm_shader(softmax_sg    softmax.comp USE_SUBGROUP)
vkllm_shader(argmax        argmax.comp)
vkllm_shader(rope          rope.comp)
# --- end helper D2 ---
