# --- RWKV-7 ("Goose") time and channel mixing (engine/ops/rwkv_ops.h) ---
vkllm_shader(rwkv_shift_mix rwkv_shift_mix.comp)     # token shift and the lerp mixes, shift state carried
vkllm_shader(rwkv_wkv7 rwkv_wkv7.comp)               # the generalized delta rule, sequential over tokens
vkllm_shader(rwkv_wkv7_chunked rwkv_wkv7_chunked.comp) # the same in chunks of tokens at once, for prompts
vkllm_shader(rwkv7_inputs rwkv7_inputs.comp)         # decay, learning rate, normalised key: wkv7's operands
vkllm_shader(rwkv7_output rwkv7_output.comp)         # per-head group norm, the r.k bonus, the gate
vkllm_shader(rwkv_elementwise rwkv_elementwise.comp) # tanh and sigmoid of a lora, the value residual

