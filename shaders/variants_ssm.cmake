# --- Mamba-2's selective scan in chunks for prompts (the SSD form; engine/ops/ssm_ops.h) ---
vkllm_shader(ssm_scan_chunked ssm_scan_chunked.comp)
