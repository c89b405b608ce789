# The table of shader variants: vkllm_shader(<name> <source> [DEFINE ...]).
# Names encode the variant so the engine can pick one by type and capability.
vkllm_shader(fill_test fill_test.comp)
