// Seeded, platform-independent random numbers for random-weight models.
// Every tensor draws from its own stream, derived from (seed, tensor name), so a tensor's values
// do not depend on which other tensors the model has: layer 0 of a 2-layer model equals layer 0
// of a 12-layer model with the same seed and sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/xoshiro.h"

namespace vkllm::random_model {

// The engine's xoshiro256** (core/xoshiro.h), seeded with splitmix64(seed) xor a hash of the
// stream's name. Integer-only, so the same seed gives the same numbers with every compiler and
// standard library.
class Rng {
public:
    Rng(uint64_t seed, const std::string& stream_name);
    uint64_t next_u64();
    // Approximately standard normal: the sum of four uniform 32-bit integers, centred and scaled
    // to unit variance (Irwin-Hall with n = 4; bounded at +-2*sqrt(3)). The sum is exact integer
    // arithmetic and the scaling one rounding, so the result is bit-identical everywhere, unlike
    // std::normal_distribution, whose algorithm differs between standard libraries.
    double normal();

private:
    Xoshiro256 gen_;
};

// `n` values mean + std * normal().
std::vector<float> normal_values(Rng& rng, size_t n, double mean, double std);

}  // namespace vkllm::random_model
