# --- The state probes of state-space and RWKV-7 layers (engine/ops/state_probe_ops.h) ---
vkllm_shader(state_scan_ssm state_scan_ssm.comp)      # Mamba-1/2: state norm and decay per token and head
vkllm_shader(state_scan_rwkv7 state_scan_rwkv7.comp)  # RWKV-7: state norm and mean decay per token and head
vkllm_shader(state_mix_map state_mix_map.comp)        # Mamba-2: a head's token-to-token mixing map
