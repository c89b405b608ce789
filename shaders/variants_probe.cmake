# The probes' detail kernel (engine/ops/attention_detail.cpp): each query row's top-k keys and
# the max-pooled thumbnail of every head's map.
vkllm_shader(attention_detail attention_detail.comp)
