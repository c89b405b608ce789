# --- the gated delta rule (engine/ops/delta_net_ops.h) and its state probes (state_probe_ops.h) ---
vkllm_shader(delta_net_chunked delta_net_chunked.comp)               # the delta rule in chunks of tokens, for prompts
vkllm_shader(state_scan_delta_net state_scan_delta_net.comp)         # state norm and decay per token and value head
vkllm_shader(state_mix_map_delta_net state_mix_map_delta_net.comp)   # a value head's token-to-token mixing map
