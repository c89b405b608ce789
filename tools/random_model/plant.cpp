#include "random_model/plant.h"

#include <sstream>

#include "random_model/random_model.h"

namespace vkllm::random_model {

PlantedSuperWeight parse_planted_super_weight(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
    if (parts.size() != 3 && parts.size() != 4)
        throw ConfigError("--plant-super-weight '" + text + "': expected LAYER:ROW:COL or LAYER:ROW:COL:EXPERT");
    std::vector<int64_t> v;
    for (const std::string& p : parts) {
        size_t used = 0;
        long long x = -1;
        try {
            x = std::stoll(p, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != p.size() || p.empty() || x < 0 || x > (1ll << 30))
            throw ConfigError("--plant-super-weight '" + text + "': '" + p + "' is not a non-negative integer");
        v.push_back(x);
    }
    PlantedSuperWeight s;
    s.layer = int(v[0]);
    s.row = v[1];
    s.col = v[2];
    if (v.size() == 4) s.expert = int(v[3]);
    return s;
}

int64_t plant_marker_channel(const PlantedSuperWeight& p, int64_t n_embd) {
    return (p.row + n_embd / 2) % n_embd;
}

void apply_plant(const PlantContext& ctx, const std::string& name, const std::vector<uint64_t>& dims,
                 std::vector<float>& values) {
    const PlantedSuperWeight& p = ctx.plant;
    const int64_t n_embd = ctx.n_embd;
    const int64_t m = plant_marker_channel(p, n_embd);
    const int expert = p.expert < 0 ? 0 : p.expert;
    const std::string blk = "blk." + std::to_string(p.layer) + ".";
    using C = PlantConstants;

    if (name == "token_embd.weight") {
        // [n_embd, n_vocab]: token t's embedding is row t.
        const int64_t n_vocab = int64_t(dims[1]);
        for (int64_t t = 0; t < n_vocab; ++t) values[size_t(t * n_embd + m)] = t == ctx.bos ? C::marker : -C::marker;
        return;
    }
    if (!ctx.moe_layer) {
        if (name == blk + "ffn_gate.weight" || name == blk + "ffn_up.weight") {
            // [n_embd, n_ff]: FFN channel col reads the marker channel.
            values[size_t(p.col * n_embd + m)] += C::gate_gain;
        } else if (name == blk + "ffn_down.weight") {
            const int64_t n_ff = int64_t(dims[0]);  // [n_ff, n_embd]
            values[size_t(p.row * n_ff + p.col)] = C::super_weight;
        }
        return;
    }
    if (name == blk + "ffn_gate_inp.weight") {
        values[size_t(expert * n_embd + m)] += C::router_gain;  // [n_embd, n_expert]
    } else if (name == blk + "ffn_gate_exps.weight" || name == blk + "ffn_up_exps.weight") {
        const int64_t n_ff = int64_t(dims[1]);  // [n_embd, n_ff_exp, n_expert]
        values[size_t((expert * n_ff + p.col) * n_embd + m)] += C::gate_gain;
    } else if (name == blk + "ffn_down_exps.weight") {
        const int64_t n_ff = int64_t(dims[0]);  // [n_ff_exp, n_embd, n_expert]
        values[size_t((expert * n_embd + p.row) * n_ff + p.col)] = C::super_weight;
    }
}

}  // namespace vkllm::random_model
