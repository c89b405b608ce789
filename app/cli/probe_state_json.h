// The recurrent-state part of the `vkllm probe` document (vkllm/probe.h's StateProbe and the
// state-space heads' mixing maps), gathered over the evaluations as ProbeDocument gathers the
// rest:
//   state       [{layer, head, kind, positions[], norm[] or null, decay[] or null, npy_row}]:
//               per state-space or RWKV-7 layer and head (kind mamba2, mamba1 or rwkv7), every
//               evaluated token's state norm and decay. With a sidecar and at least
//               sidecar_min_values values (or always with --npy), norm and decay are null and
//               the document's state_npy {norm, decay} names NumPy files float32 [entry][token]
//               whose row npy_row is the entry's
//   state_maps  [{layer, head, kind: "state_mixing", query_pos[], key_pos[], values[query][key]
//               or null, values_npy}]: each Mamba-2 head's token-to-token mixing map over every
//               evaluated row (the key axis 0..the newest position; keys a row cannot see are 0)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe_json.h"
#include "vkllm/probe.h"

namespace vkllm::cli {

class StateDocument {
public:
    void add(const ProbeResults& r);
    // Adds "state", "state_npy" (when a sidecar holds the traces) and "state_maps" to doc.
    void write(nlohmann::json& doc, const app::SidecarWriter& sidecar, uint64_t sidecar_min_values) const;

private:
    struct Trace {
        std::string kind;
        std::vector<int> positions;
        std::vector<float> norm, decay;
    };
    std::map<std::pair<int, int>, Trace> traces_;  // by layer, then head
    struct MapRows {
        std::vector<int> query_pos;
        std::vector<std::vector<float>> rows;  // by key position from key_first
        int key_first = 0, n_key = 0;
    };
    std::vector<std::pair<std::pair<int, int>, MapRows>> maps_;  // in the probe's order
};

}  // namespace vkllm::cli
