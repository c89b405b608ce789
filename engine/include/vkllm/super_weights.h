// Super weights (Yu et al. 2024) and massive activations (Sun et al. 2024): finding them in any
// model, data-free. See docs/super-weights.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkllm/gguf.h"
#include "vkllm/model.h"

namespace vkllm {

// How large a weight matrix's elements typically are, as stored in the file (edits made with
// Model::set_weight are not seen). Expert tensors: one expert's matrix.
struct WeightMagnitude {
    double median_abs = 0;
    double rms = 0;
    double max_abs = 0;
    uint64_t n = 0;  // elements
};
// `tensor` as in WeightRef ("ffn_down", "ffn_down_exps", ...). Throws std::invalid_argument for
// a tensor the file does not have or an expert out of range.
WeightMagnitude weight_magnitude(const Model& model, int layer, const std::string& tensor, int expert = -1);

struct SuperWeightOptions {
    // The fixed text of the one forward pass (after BOS when the model adds it).
    std::string text = "Apple Inc. is a worldwide tech company.";
    // ffn_down's largest |input| counts as a spike when it exceeds this many times its median
    // |value| (docs/super-weights.md says why 100).
    float spike_ratio = 100.0f;
    // The output spike must write at least this share of the massive activation
    // (|output[t, r]| >= share * |x[t, r]|), and the super weight carry this share of the output
    // (|W[r, c]| * |input[t, c]| >= share * |output[t, r]|).
    float min_share = 0.5f;
    // ... and be an outlier of its tensor: |W[r, c]| >= this many times the median |w| (for
    // normally distributed weights 10x the median |w| is 6.7 standard deviations: never by chance).
    // Without it, a huge input spike makes every ordinary weight of column c look like one.
    float min_weight_ratio = 10.0f;
    int max_super_weights = 8;  // zero-and-repeat rounds at most
    bool attention_sinks = true;
};

// A massive activation: one residual-stream value (after `layer`).
struct MassiveValue {
    int layer = 0;
    int token = 0;    // position
    int channel = 0;
    float value = 0;  // signed
};

struct SuperWeight {
    int layer = 0;
    int expert = -1;          // routed expert of an MoE layer; -1: dense FFN or the shared expert
    std::string tensor;       // "ffn_down", "ffn_down_exps", "ffn_down_shexp"
    int64_t row = 0;          // hidden (output) channel: down_proj.weight[row, col]
    int64_t col = 0;          // FFN (input) channel
    float value = 0;          // the weight
    float weight_ratio = 0;   // |value| / the tensor's median |w|
    int token = 0;            // position where input and output spike
    float in_abs = 0, in_ratio = 0;    // ffn_down's |input[token, col]| and its ratio to the median
    float out_abs = 0, out_ratio = 0;  // ffn_down's |output[token, row]| and its ratio to the median
    MassiveValue activation;           // the residual stream after `layer` at (token, row)
    float activation_ratio = 0;        // its |value| / the layer's median |x|
    float activation_after_zeroing = 0;  // the same value once this weight (and the earlier ones) are zeroed
};

// One layer's residual stream: the rules that call its largest value massive.
struct LayerActivation {
    int layer = 0;            // -1: the embeddings
    MassiveValue max;         // the largest |x|
    float median_abs = 0;
    float ratio = 0;          // |max| / median_abs
    bool sun_massive = false; // |x| > 100 and > 1000x the median |x| (Sun et al. 2024)
    float robust_z = 0;       // (|max - median|) / (1.4826 * MAD) over every value of the layer
    bool mad_outlier = false; // robust_z > kMadThreshold
};
constexpr float kSunMassiveAbs = 100.0f, kSunMassiveRatio = 1000.0f, kMadThreshold = 50.0f;

// Attention-sink mass of one head: the mean probability its queries (positions >= 1) put on the
// first position.
struct SinkMass {
    int layer = 0, head = 0;
    float first_token_mass = 0;
};

struct SuperWeightReport {
    std::string text;
    std::vector<int32_t> tokens;
    std::vector<SuperWeight> super_weights;   // in the order found
    std::vector<LayerActivation> layers;      // of the unedited model; -1 (embeddings), 0, 1, ...
    std::vector<LayerActivation> layers_after;  // with every super weight found zeroed
    std::vector<SinkMass> sinks;              // of the unedited model, every layer and head
    int passes = 0;                           // forward passes run
};

// One forward pass of options.text; at each layer (each expert of an MoE layer) ffn_down's
// largest |input| channel c and |output| channel r; where the input spikes on the token t of the
// output's maximum, the residual stream after the layer is massive at (t, r) (Sun's rule), the
// output writes it and W_down[r, c], an outlier of its tensor, carries the output, W_down[r, c]
// is a super weight: it is recorded, zeroed and the
// pass repeated until no spike remains. The earliest layer's candidate is taken first. Runs on
// the model's GPU; the model's weights are restored to what they were on entry (edits made
// before the call are kept). No Session of the model may evaluate meanwhile.
SuperWeightReport find_super_weights(Model& model, const SuperWeightOptions& options = {});

// ---- Quantizing around them: vkllm quantize IN OUT TYPE --keep-super-weights ----

struct KeepSuperWeightsOptions {
    SuperWeightOptions finder;
    // Every dense ffn_down's weights other than the super weights are clipped to +-clip_sigmas x
    // the tensor's RMS before block quantisation (0: none). docs/super-weights.md has the
    // measurements behind the default.
    float clip_sigmas = 0.0f;
    ModelOptions model;  // the device the finder runs on
};

struct KeptSuperWeight {
    SuperWeight found;
    bool kept = false;
    std::string note;  // why not kept (an expert's or a post-normed FFN's weight)
    float stored = 0;  // the weight as quantised in the file (kept ones: moved out of its block's scale)
    float delta = 0;   // found.value - stored: what the loader adds back
};

struct SuperQuantizeReport {
    QuantizeReport quantize;
    std::vector<KeptSuperWeight> super_weights;
    uint64_t clipped = 0;  // weights clipped
    float clip_sigmas = 0;
};

// Finds the super weights of `in_path` (find_super_weights, on the GPU), then writes `out_path`
// in `type` as quantize_file does, except that each dense ffn_down has its other weights clipped,
// its super weights moved out of their blocks' scales, and the exact values kept as a sparse
// correction in the file's metadata (vkllm.super_weight.*), which Model::load applies after
// ffn_down. llama.cpp loads such a file but ignores the correction (docs/super-weights.md).
// Throws as quantize_file and Model::load do.
SuperQuantizeReport quantize_keeping_super_weights(const std::string& in_path, const std::string& out_path,
                                                   const std::string& type,
                                                   const KeepSuperWeightsOptions& options = {});

}  // namespace vkllm
