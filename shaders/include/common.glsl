// Shared declarations for every vkllm compute shader.
#extension GL_EXT_control_flow_attributes : enable

// Workgroup size comes from specialization constant 0 unless a shader says otherwise.
#define VKLLM_LOCAL_SIZE_X layout(local_size_x_id = 0) in;
