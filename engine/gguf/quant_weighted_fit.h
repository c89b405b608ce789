// Importance-weighted scale searches for the 32-element and K-quant encoders (quant_encode.cpp),
// used when an importance vector is given: llama.cpp's make_qx_quants (symmetric codes) and
// make_qkx3_quants (codes with a minimum), written from their method. Internal to engine/gguf.
#pragma once

namespace vkllm::gguf {

// Error weights of n elements: importance[i] * sqrt(sigma2 + x[i]^2), sigma2 being a typical
// squared magnitude of the block (llama.cpp's weighting of an importance matrix).
void importance_weights(const float* x, const float* importance, int n, float sigma2, float* w);

// Mean of x^2 over n elements.
float mean_square(const float* x, int n);

// The scale d minimising sum w (x - d l)^2 with l = clamp(round(x / d), -nmax, nmax - 1): the
// candidates put the element of largest magnitude on -nmax (and 18 nearby fractions of it), each
// refitted by least squares. Same sign convention as the unweighted encoders: d is negative when
// the largest-magnitude element is positive. 0 for an all-zero group.
float fit_symmetric(const float* x, const float* w, int n, int nmax);

// The scale d and minimum m (m >= 0) minimising sum w (x - (d l - m))^2 with
// l = clamp(round((x + m) / d), 0, nmax): candidate inverse scales around nmax / (max - min),
// each refitted jointly for d and m by least squares.
float fit_affine(const float* x, const float* w, int n, int nmax, float* min);

}  // namespace vkllm::gguf
