#include "random_model/random_weights.h"

namespace vkllm::random_model {
namespace {

uint64_t fnv1a64(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// The stream's seed: splitmix64's first output from `seed`, xor the name's hash.
uint64_t stream_seed(uint64_t seed, const std::string& name) { return splitmix64(seed) ^ fnv1a64(name); }

}  // namespace

Rng::Rng(uint64_t seed, const std::string& stream_name) : gen_(stream_seed(seed, stream_name)) {}

uint64_t Rng::next_u64() { return gen_.next(); }

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
