#include "random_model/random_weights.h"

namespace vkllm::random_model {
namespace {

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed, const std::string& stream_name) {
    uint64_t x = splitmix64(seed) ^ fnv1a64(stream_name);
    for (uint64_t& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
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

double Rng::normal() {
    const uint64_t a = next_u64(), b = next_u64();
    // Four uniform integers in [0, 2^32): mean 2^31 - 1/2 each, variance (2^64 - 1)/12 each.
    // The centred sum uses 2 * (2^32 - 1) = twice the mean, an integer; its std is about 2^32/sqrt(3).
    const int64_t sum = int64_t((a & 0xffffffffu) + (a >> 32) + (b & 0xffffffffu) + (b >> 32));
    const int64_t centred = sum - int64_t(2 * 0xffffffffull);
    constexpr double kScale = 1.7320508075688772 / 4294967296.0;  // sqrt(3) / 2^32
    return double(centred) * kScale;
}

std::vector<float> normal_values(Rng& rng, size_t n, double mean, double std) {
    std::vector<float> v(n);
    for (float& x : v) {
        const double noise = rng.normal() * std;
        x = float(mean + noise);
    }
    return v;
}

}  // namespace vkllm::random_model
