// xoshiro256** (Blackman & Vigna 2018) and splitmix64: the engine's seeded random numbers
// (the sampler's draws, random-weight models). Integer-only, so a seed gives the same numbers
// with every compiler and standard library.
#pragma once

#include <cstdint>

namespace vkllm {

// Advances `state` and returns the next splitmix64 output.
inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

class Xoshiro256 {
public:
    // The four state words are splitmix64's first four outputs from `seed`.
    explicit Xoshiro256(uint64_t seed = 0) {
        for (uint64_t& s : s_) s = splitmix64(seed);
    }
    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1), 53 random bits

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace vkllm
