// Shared declarations for every vkllm compute shader.
#extension GL_EXT_control_flow_attributes : enable

// Workgroup size comes from specialization constant 0 unless a shader says otherwise.
#define VKLLM_LOCAL_SIZE_X layout(local_size_x_id = 0) in;

// Correctly rounded a / b and sqrt(a) on any driver. Vulkan lets a / b be off by 2.5 ulp and
// sqrt be approximate (NVIDIA's are), while llama.cpp's CPU backend computes the values that
// decide its 8-bit activation rounding (a block's scale 127 / max|x|, a norm's 1 / sqrt(mean))
// in IEEE arithmetic; one ulp off can move an activation across a rounding boundary. One fma
// step on the driver's result gives the IEEE value (the residual a - q b is exact in an fma).
float div_rn(float a, float b) {
    const float r = 1.0 / b;
    const float q = a * r;
    precise const float e = fma(-q, b, a);
    const float c = fma(e, r, q);
    return isinf(r) || isinf(q) || isnan(c) ? a / b : c;  // b = 0, overflow: the plain quotient
}
float sqrt_rn(float a) {
    const float s = sqrt(a);
    if (!(a > 0.0) || isinf(a)) return s;  // 0, negative, NaN, inf
    precise const float e = fma(-s, s, a);
    return fma(e, div_rn(0.5, s), s);
}
