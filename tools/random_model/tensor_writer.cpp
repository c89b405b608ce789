#include "random_model/tensor_writer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gguf/quant.h"
#include "random_model/config_validation.h"
#include "random_model/random_weights.h"
#include "random_model/rope_scaling.h"

namespace vkllm::random_model {

using gguf::TensorType;

namespace {

std::string replace_layer(std::string pattern, int layer) {
    const size_t at = pattern.find("{L}");
    if (at != std::string::npos) pattern.replace(at, 3, std::to_string(layer));
    return pattern;
}

std::vector<uint8_t> encode(TensorType type, const std::vector<float>& values) {
    if (type == TensorType::F32) {
        std::vector<uint8_t> bytes(values.size() * sizeof(float));
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return bytes;
    }
    return gguf::quantize(type, values.data(), values.size());
}

std::vector<float> initial_values(const TensorRule& rule, const std::string& name, const std::vector<uint64_t>& dims,
                                  const RandomModelConfig& c, const Sizes& sizes) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    Rng rng(c.seed, name);
    switch (rule.init) {
        case Init::Embedding: return normal_values(rng, n, 0.0, 1.0 / std::sqrt(double(sizes.embd)));
        case Init::Matrix: return normal_values(rng, n, 0.0, rule.scale / std::sqrt(double(dims[0])));
        case Init::Norm: return normal_values(rng, n, 1.0, 0.1);
        case Init::Bias: return normal_values(rng, n, 0.0, 0.1 * rule.scale);
        case Init::RopeFreqs: return llama3_rope_freq_factors(c.rope_scaling, c.rope_freq_base, uint64_t(c.rope_dims));
        case Init::LongRopeLong:
        case Init::LongRopeShort:
            return longrope_factors(rule.init == Init::LongRopeLong, c.n_ctx, c.rope_scaling.original_context, n);
        case Init::SsmA:
        case Init::SsmDtBias: {
            std::vector<float> v(n);
            for (float& x : v) {
                const double u = double(rng.next_u64() >> 11) * 0x1.0p-53;  // uniform [0, 1)
                if (rule.init == Init::SsmA) {
                    x = float(-(1.0 + 15.0 * u));
                } else {
                    const double dt = std::exp(std::log(1e-3) + u * (std::log(1e-1) - std::log(1e-3)));
                    x = float(dt + std::log(-std::expm1(-dt)));  // softplus^-1(dt)
                }
            }
            return v;
        }
    }
    return {};
}

bool present(Presence p, const RandomModelConfig& c, int layer) {
    switch (p) {
        case Presence::Always: return true;
        case Presence::Untied: return !c.tied;
        case Presence::Llama3Rope: return c.rope_scaling.kind == RopeScalingConfig::Kind::Llama3;
        case Presence::LongRope: return c.rope_scaling.kind == RopeScalingConfig::Kind::LongRope;
        case Presence::Dense: return !is_moe_layer(c, layer);
        case Presence::Moe: return is_moe_layer(c, layer);
        case Presence::MoeSelectionBias: return is_moe_layer(c, layer) && c.expert_gating == "sigmoid";
        case Presence::QLora: return c.q_lora_rank > 0;
        case Presence::NoQLora: return c.q_lora_rank <= 0;
        case Presence::SsmLayer: return layer >= 0 && c.layers[size_t(layer)] == 'M';
        case Presence::AttentionLayer: return layer >= 0 && c.layers[size_t(layer)] == '*';
        case Presence::FfnAloneLayer: return layer >= 0 && c.layers[size_t(layer)] == '-';
        case Presence::ConvLayer: return layer >= 0 && c.layers[size_t(layer)] == 'C';
        case Presence::DeltaNetLayer: return layer >= 0 && c.layers[size_t(layer)] == 'D';
        case Presence::TwoNorms: return c.two_norms;
    }
    return false;
}

// One tensor's name, storage type, dimensions and bytes, made independently of every other.
struct MadeTensor {
    std::string name;
    TensorType type = TensorType::F32;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> bytes;
};

MadeTensor make_tensor(const TensorRule& rule, const std::string& name, const RandomModelConfig& c, const Sizes& sizes,
                       const PlantContext* plant) {
    std::vector<uint64_t> dims;
    for (Dim d : rule.dims) dims.push_back(sizes.of(d));
    // 1-D tensors (norms, biases, rope factors) and biases (gpt-oss's per-expert biases are 2-D)
    // stay F32, as llama.cpp's quantizer leaves them; --expert-type overrides --type for the
    // stacked expert matrices (the 3-D *_exps tensors).
    TensorType requested = c.type;
    if (dims.size() == 3 && name.find("_exps.") != std::string::npos && c.expert_type) requested = *c.expert_type;
    // BERT's token_types stays F32 as the converter writes it (llama.cpp adds its row with
    // ggml_add, which takes no quantised or F16 operand there).
    const bool keep_f32 = dims.size() == 1 || rule.keep_f32 || rule.init == Init::Bias || name == "token_types.weight";
    const TensorType type = keep_f32 ? TensorType::F32 : matrix_storage_type(requested, dims[0]);
    std::vector<float> values = initial_values(rule, name, dims, c, sizes);
    if (plant) apply_plant(*plant, name, dims, values);
    std::vector<uint8_t> bytes = encode(type, values);
    return {name, type, std::move(dims), std::move(bytes)};
}

// Makes every tensor of `jobs` (rule, name) on up to `threads` threads (0: one per core) and adds
// them to `w` in the order of `jobs`, so the file does not depend on the thread count.
void make_and_add(gguf::Writer& w, const std::vector<std::pair<const TensorRule*, std::string>>& jobs,
                  const RandomModelConfig& c, const Sizes& sizes, const PlantContext* plant, int threads) {
    size_t n_threads = threads > 0 ? size_t(threads) : std::max(1u, std::thread::hardware_concurrency());
    n_threads = std::min(n_threads, jobs.size());
    if (n_threads <= 1) {
        for (const auto& [rule, name] : jobs) {
            MadeTensor t = make_tensor(*rule, name, c, sizes, plant);
            w.add_tensor(t.name, t.type, std::move(t.dims), std::move(t.bytes));
        }
        return;
    }
    // The largest tensors first, so that one huge embedding does not start last.
    std::vector<size_t> order(jobs.size());
    std::vector<uint64_t> elements(jobs.size(), 1);
    for (size_t i = 0; i < jobs.size(); ++i) {
        order[i] = i;
        for (Dim d : jobs[i].first->dims) elements[i] *= sizes.of(d);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return elements[a] > elements[b]; });
    std::vector<MadeTensor> made(jobs.size());
    std::vector<std::exception_ptr> errors(jobs.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t k; (k = next.fetch_add(1)) < order.size();) {
            const size_t i = order[k];
            try {
                made[i] = make_tensor(*jobs[i].first, jobs[i].second, c, sizes, plant);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 0; t < n_threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (errors[i]) std::rethrow_exception(errors[i]);
        w.add_tensor(made[i].name, made[i].type, std::move(made[i].dims), std::move(made[i].bytes));
    }
}

}  // namespace

void add_tensors(gguf::Writer& w, const ArchTable& arch, const RandomModelConfig& c, const Sizes& sizes,
                 const PlantContext* plant, int threads) {
    std::vector<std::pair<const TensorRule*, std::string>> jobs;
    for (const TensorRule& rule : arch.globals)
        if (present(rule.presence, c, -1)) jobs.emplace_back(&rule, rule.name);
    for (int layer = 0; layer < c.n_layer; ++layer)
        for (const TensorRule& rule : arch.per_layer)
            if (present(rule.presence, c, layer)) jobs.emplace_back(&rule, replace_layer(rule.name, layer));
    make_and_add(w, jobs, c, sizes, plant, threads);
}

TensorType matrix_storage_type(TensorType requested, uint64_t row_length) {
    auto fits = [row_length](TensorType t) { return row_length % gguf::type_traits(t)->block_size == 0; };
    if (fits(requested)) return requested;
    TensorType fallback = TensorType::F16;
    switch (requested) {
        case TensorType::Q2_K:
        case TensorType::Q3_K: fallback = TensorType::Q4_0; break;
        case TensorType::Q4_K: fallback = TensorType::Q5_0; break;
        case TensorType::Q5_K: fallback = TensorType::Q5_1; break;
        case TensorType::Q6_K: fallback = TensorType::Q8_0; break;
        default: break;
    }
    return fits(fallback) ? fallback : TensorType::F16;
}

}  // namespace vkllm::random_model
