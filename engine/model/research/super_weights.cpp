// The super-weight finder (vkllm/super_weights.h): data-free, as in Yu et al. 2024.
#include "vkllm/super_weights.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gguf/quant.h"
#include "model/model_internal.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

float median_of(std::vector<float> v) {
    if (v.empty()) return 0;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + long(mid), v.end());
    return v[mid];
}

// The rules of LayerActivation on one layer's whole residual stream.
LayerActivation layer_activation(const ResidualTensor& r) {
    LayerActivation a;
    a.layer = r.layer;
    std::vector<float> abs_values(r.values.size());
    size_t arg = 0;
    for (size_t i = 0; i < r.values.size(); ++i) {
        abs_values[i] = std::fabs(r.values[i]);
        if (abs_values[i] > abs_values[arg]) arg = i;
    }
    if (r.values.empty() || r.n_embd == 0) return a;
    a.max = {r.layer, r.positions[arg / size_t(r.n_embd)], int(arg % size_t(r.n_embd)), r.values[arg]};
    a.median_abs = median_of(abs_values);
    const float max_abs = abs_values[arg];
    a.ratio = a.median_abs > 0 ? max_abs / a.median_abs : INFINITY;
    a.sun_massive = max_abs > kSunMassiveAbs && a.ratio > kSunMassiveRatio;
    // Median absolute deviation: a scale estimate the outliers themselves cannot inflate;
    // 1.4826 * MAD is the standard deviation for normally distributed values.
    const float median = median_of(r.values);
    std::vector<float> dev(r.values.size());
    for (size_t i = 0; i < r.values.size(); ++i) dev[i] = std::fabs(r.values[i] - median);
    const float mad = median_of(dev);
    a.robust_z = mad > 0 ? std::fabs(r.values[arg] - median) / (1.4826f * mad) : INFINITY;
    a.mad_outlier = a.robust_z > kMadThreshold;
    return a;
}

std::string down_tensor(const ModelInfo& info, const FfnDownStat& s) {
    if (s.expert >= 0) return "ffn_down_exps";
    return info.layers[size_t(s.layer)].ffn.kind == FfnKind::Moe ? "ffn_down_shexp" : "ffn_down";
}

// One forward pass of the text with the probes the finder reads.
struct Pass {
    ProbeResults probes;
    std::vector<LayerActivation> layers;
};

Pass run_pass(Session& session, const std::vector<int32_t>& tokens) {
    session.reset();
    session.eval(tokens);
    Pass p;
    p.probes = session.probes();
    for (const ResidualTensor& r : p.probes.residual_full) p.layers.push_back(layer_activation(r));
    return p;
}

const LayerActivation* layer_of(const std::vector<LayerActivation>& layers, int layer) {
    for (const LayerActivation& a : layers)
        if (a.layer == layer) return &a;
    return nullptr;
}

float residual_at(const ProbeResults& probes, int layer, int token, int channel) {
    for (const ResidualTensor& r : probes.residual_full) {
        if (r.layer != layer) continue;
        for (size_t t = 0; t < r.positions.size(); ++t)
            if (r.positions[t] == token) return r.values[t * size_t(r.n_embd) + size_t(channel)];
    }
    return 0;
}

}  // namespace

WeightMagnitude weight_magnitude(const Model& model, int layer, const std::string& tensor, int expert) {
    const gguf::File& file = model.internals().file();
    const std::string name = (layer >= 0 ? "blk." + std::to_string(layer) + "." : "") + tensor + ".weight";
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) throw std::invalid_argument("weight magnitude: the file has no tensor '" + name + "'");
    const uint8_t* data = t->data;
    uint64_t n = t->n_elements();
    if (expert >= 0 || t->dims.size() == 3) {
        const uint64_t n_expert = t->dims.size() == 3 ? t->dims[2] : 0;
        if (expert < 0 || uint64_t(expert) >= n_expert)
            throw std::invalid_argument("weight magnitude: " + name + ": expert " + std::to_string(expert) +
                                        " is out of range [0, " + std::to_string(n_expert) + ")");
        const uint64_t rows = t->dims[1];
        data += uint64_t(expert) * rows * gguf::row_size(t->type, size_t(t->dims[0]));
        n = rows * t->dims[0];
    }
    const std::vector<float> v = gguf::dequantize(t->type, data, size_t(n));
    WeightMagnitude m;
    m.n = n;
    std::vector<float> abs_values(v.size());
    double sum_sq = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        abs_values[i] = std::fabs(v[i]);
        sum_sq += double(v[i]) * v[i];
        m.max_abs = std::max(m.max_abs, double(abs_values[i]));
    }
    m.rms = v.empty() ? 0 : std::sqrt(sum_sq / double(v.size()));
    m.median_abs = median_of(std::move(abs_values));
    return m;
}

SuperWeightReport find_super_weights(Model& model, const SuperWeightOptions& options) {
    const ModelInfo& info = model.info();
    SuperWeightReport report;
    report.text = options.text;
    report.tokens = model.tokenize(options.text, true);
    if (report.tokens.size() < 2)
        throw std::invalid_argument("super-weight finder: the text gives fewer than 2 tokens");

    // Edits in force on entry, to put back at the end.
    std::vector<std::pair<WeightRef, float>> prior;
    for (const WeightRef& w : model.weight_edits()) prior.emplace_back(w, model.weight(w));

    SessionOptions so;
    so.n_ctx = int(report.tokens.size());
    so.n_batch = int(report.tokens.size());  // one forward pass
    so.llama_cpp_rounding = false;
    so.probes.ffn_down = true;
    for (int l = -1; l < info.n_layer; ++l) so.probes.residual_full_layers.push_back(l);
    Session session(model, so);

    // The attention sinks of the unedited model.
    if (options.attention_sinks) {
        ProbeConfig pc = so.probes;
        for (int l = 0; l < info.n_layer; ++l) pc.attention_layers.push_back(l);
        session.set_probes(pc);
    }
    Pass pass = run_pass(session, report.tokens);
    ++report.passes;
    report.layers = pass.layers;
    for (const AttentionMap& m : pass.probes.attention) {
        for (int h = 0; h < m.n_head; ++h) {
            double sum = 0;
            int n = 0;
            for (int q = 0; q < m.n_query(); ++q) {
                if (m.query_pos[size_t(q)] < 1) continue;
                sum += m.at(h, q, 0);
                ++n;
            }
            report.sinks.push_back({m.layer, h, n ? float(sum / n) : 0.0f});
        }
    }
    session.set_probes(so.probes);

    try {
        for (int round = 0; round < options.max_super_weights; ++round) {
            // The earliest layer (then the largest output ratio) where input and output spike on
            // the same token and the weight between them carries the output.
            const FfnDownStat* best = nullptr;
            SuperWeight found;
            for (const FfnDownStat& s : pass.probes.ffn_down) {
                if (s.in_median_abs <= 0 || s.out_median_abs <= 0) continue;
                const float in_ratio = s.in_max_abs / s.in_median_abs;
                const float out_ratio = s.out_max_abs / s.out_median_abs;
                // The output is judged against the residual stream rather than its own median: an
                // expert that only the spiking token reaches has no quiet tokens to compare with.
                if (in_ratio < options.spike_ratio || s.in_token != s.out_token) continue;
                if (best && (s.layer > best->layer ||
                             (s.layer == best->layer && out_ratio <= best->out_max_abs / best->out_median_abs)))
                    continue;
                // It must make a massive activation (Sun's rule) in the residual stream after the layer.
                const LayerActivation* la = layer_of(pass.layers, s.layer);
                const float act = std::fabs(residual_at(pass.probes, s.layer, s.out_token, s.out_channel));
                if (!la || act <= kSunMassiveAbs || act <= kSunMassiveRatio * la->median_abs) continue;
                if (s.out_max_abs < options.min_share * act) continue;  // it came from an earlier layer
                WeightRef ref{s.layer, down_tensor(info, s), s.out_channel, s.in_channel, s.expert};
                const float w = model.weight(ref);
                if (std::fabs(w) * s.in_max_abs < options.min_share * s.out_max_abs) continue;
                const WeightMagnitude mag = weight_magnitude(model, ref.layer, ref.tensor, ref.expert);
                const float weight_ratio = mag.median_abs > 0 ? float(std::fabs(w) / mag.median_abs) : INFINITY;
                if (weight_ratio < options.min_weight_ratio) continue;
                found.weight_ratio = weight_ratio;
                best = &s;
                found.layer = s.layer;
                found.expert = s.expert;
                found.tensor = ref.tensor;
                found.row = s.out_channel;
                found.col = s.in_channel;
                found.value = w;
                found.token = s.in_token;
                found.in_abs = s.in_max_abs;
                found.in_ratio = in_ratio;
                found.out_abs = s.out_max_abs;
                found.out_ratio = out_ratio;
            }
            if (!best) break;
            found.activation = {found.layer, found.token, int(found.row),
                                residual_at(pass.probes, found.layer, found.token, int(found.row))};
            if (const LayerActivation* a = layer_of(pass.layers, found.layer); a && a->median_abs > 0)
                found.activation_ratio = std::fabs(found.activation.value) / a->median_abs;

            model.set_weight({found.layer, found.tensor, found.row, found.col, found.expert}, 0.0f);
            pass = run_pass(session, report.tokens);
            ++report.passes;
            found.activation_after_zeroing = residual_at(pass.probes, found.layer, found.token, int(found.row));
            report.super_weights.push_back(found);
        }
    } catch (...) {
        model.restore_weights();
        for (const auto& [w, v] : prior) model.set_weight(w, v);
        throw;
    }
    report.layers_after = pass.layers;
    model.restore_weights();
    for (const auto& [w, v] : prior) model.set_weight(w, v);
    return report;
}

SuperQuantizeReport quantize_keeping_super_weights(const std::string& in_path, const std::string& out_path,
                                                   const std::string& type, const KeepSuperWeightsOptions& options) {
    SuperQuantizeReport report;
    report.clip_sigmas = options.clip_sigmas;
    gguf::KeepSuperWeights keep;
    keep.clip_sigmas = options.clip_sigmas;
    auto in = GgufFile::open(in_path);
    {
        auto model = Model::load(in_path, options.model);
        const SuperWeightReport found = find_super_weights(*model, options.finder);
        for (const SuperWeight& w : found.super_weights) {
            KeptSuperWeight k;
            k.found = w;
            const std::string p = "blk." + std::to_string(w.layer) + ".";
            const gguf::File& file = in->internal();
            if (w.tensor != "ffn_down")
                k.note = "an expert's ffn_down (" + w.tensor + "): the correction supports dense FFNs only";
            else if (file.find_tensor(p + "post_ffw_norm.weight") || file.find_tensor(p + "layer_output_norm.weight"))
                k.note = "the FFN has a post-norm: the correction supports FFNs added straight to the residual";
            else {
                k.kept = true;
                keep.weights.push_back({w.layer, w.row, w.col});
            }
            report.super_weights.push_back(k);
        }
    }
    gguf::Requantized details;
    report.quantize = detail::quantize_file(*in, out_path, type, &keep, &details);
    report.clipped = details.clipped;
    for (const gguf::SuperWeightCorrection& c : details.kept)
        for (KeptSuperWeight& k : report.super_weights)
            if (k.kept && k.found.layer == c.layer && k.found.row == c.row && k.found.col == c.col) {
                k.stored = c.value - c.delta;
                k.delta = c.delta;
            }
    return report;
}

}  // namespace vkllm
