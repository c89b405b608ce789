// The state probes of a forward pass (ProbeConfig::state, state_layers, state_maps): what the
// recurrent layers (Mamba-2, Mamba-1, RWKV-7, Gated DeltaNet) keep in their state. A layer's
// block calls its tap just before its scan, with the scan's own operands; the tap records
// ops/state_probe_ops.h's kernels (recomputing the state in a work copy, so the scan is
// untouched), a barrier (the scan then overwrites the state they read) and the copies to the
// host. A layer not probed records nothing. After the pass, read() folds the copies into
// ProbeResults::state and state_maps.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/spec.h"
#include "ops/delta_net_ops.h"
#include "ops/rwkv_ops.h"
#include "ops/ssm_ops.h"
#include "vkllm/probe.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class StateProbeRecorder {
public:
    StateProbeRecorder(gpu::Context& ctx, const ModelSpec& spec, int n_batch) : ctx_(ctx), spec_(spec), n_batch_(n_batch) {}

    // Checks the layers and map heads `probes` names: std::invalid_argument for a layer that is
    // not recurrent, a map of a layer other than Mamba-2's or Gated DeltaNet's, a head or tile out
    // of range.
    void check(const ProbeConfig& probes) const;
    // Makes or gives back the buffers `probes` needs (checked).
    void configure(const ProbeConfig& probes);
    // Host bytes one eval of up to `tokens` tokens may copy and keep (counted in
    // ProbeConfig::max_bytes): the pass's copies, every token's norm and decay, the maps.
    uint64_t host_bytes(const ProbeConfig& probes, uint64_t tokens) const;
    uint64_t bytes() const;  // GPU and host buffers held now

    // Taps, called by the blocks before their scan over the pass's tokens at positions pos0...
    void tap_mamba2(gpu::Stream& s, int layer, int pos0, const ops::SsmScanArgs& scan) const;
    void tap_mamba1(gpu::Stream& s, int layer, const ops::SsmScanMamba1Args& scan) const;
    void tap_rwkv7(gpu::Stream& s, int layer, const ops::RwkvWkv7Args& wkv) const;
    void tap_delta_net(gpu::Stream& s, int layer, int pos0, const ops::GatedDeltaNetArgs& d) const;

    // After the pass of T tokens at pos0: its copies into results (first_pass starts an eval).
    void read(int T, int pos0, ProbeResults* results, bool first_pass);

private:
    struct Layer {
        int layer = 0, n_head = 0;  // probed heads (Mamba-1: 1)
        bool report = false;         // ProbeResults::state gets its heads (else only its maps' keys)
        gpu::Buffer out, out_host;   // [n_batch][n_head][2]: norm, decay
        gpu::Buffer work;            // the state copy, then the maps' key rows
        int key_rows = 0;            // 0: no maps
        // Key rows hold positions key_base.. (row r: position key_base + r), key_filled of them.
        mutable int key_base = 0, key_filled = 0;
        mutable int key_next = 0;    // the position after the last pass's tokens
        mutable int tokens = 0;      // of this pass (0: not recorded)
        mutable int map_first = 0, map_rows = 0;  // this pass's rows with key rows, from row map_first
    };
    struct Map {
        AttentionHead head;
        size_t layer_index = 0;      // into layers_
        gpu::Buffer rows, rows_host; // [n_batch][key_rows]
        // The eval's rows so far: positions, and per row key_rows values from key position base.
        std::vector<int> query_pos;
        std::vector<float> values;
        int base = 0;
    };
    const Layer* find(int layer) const;
    // Places the pass of T tokens at pos0 in L's key rows (map_first, map_rows); false when the
    // layer has no maps or the pass starts past its rows.
    bool place_keys(const Layer& L, int pos0, int T) const;
    void copy_out(gpu::Stream& s, const Layer& L, int n_tokens) const;
    void build_map(const Map& m, AttentionMap& out) const;

    gpu::Context& ctx_;
    const ModelSpec& spec_;
    int n_batch_;
    std::vector<int> layer_ids_;     // the configured layers (to keep buffers while unchanged)
    std::vector<AttentionHead> map_heads_;
    int map_positions_ = 0;
    std::vector<Layer> layers_;
    std::vector<Map> maps_;
};

}  // namespace vkllm::model
