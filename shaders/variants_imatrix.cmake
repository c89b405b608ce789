# --- Importance-matrix collection (vkllm imatrix; engine/ops/imatrix_accumulate.h) ---
vkllm_shader(imatrix_accumulate imatrix_accumulate.comp)                # a matrix's input: sum of x^2 per column
vkllm_shader(imatrix_accumulate_routed imatrix_accumulate.comp ROUTED)  # stacked experts: per expert, its routed pairs
