# --- RWKV-7 ("Goose") time and channel mixing (engine/ops/rwkv_ops.h) ---
vkllm_shader(rwkv_shift_mix rwkv_shift_mix.comp)     # token shift and the lerp mixes, shift state carried
vkllm_shader(rwkv_wkv7 rwkv_wkv7.comp)               # the generalized delta rule, sequential over tokens
vkllm_shader(rwkv7_inputs rwkv7_inputs.comp)         # decay, learning rate, normalised key: wkv7's operands
vkllm_shader(rwkv7_output rwkv7_output.comp)         # per-head group norm, the r.k bonus, the gate
vkllm_shader(rwkv_elementwise rwkv_elementwise.comp) # tanh and sigmoid of a lora, the value residual

# tests/ops/test_shader_variants checks every shader source's push constants against its C++
# struct, found through ops/push_constants.h; until that header includes ops/rwkv_push_constants.h,
# the test's source gets it on its command line (deferred: tests/ is added after this table).
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL set_property
               SOURCE ${CMAKE_SOURCE_DIR}/tests/ops/test_shader_variants.cpp DIRECTORY ${CMAKE_SOURCE_DIR}/tests
               APPEND PROPERTY COMPILE_OPTIONS -include ${CMAKE_SOURCE_DIR}/engine/ops/rwkv_push_constants.h)
