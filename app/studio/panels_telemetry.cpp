// Telemetry: prompt and decode tokens/s, time to first token, GPU time per op and per layer,
// memory by category, the probes' own cost, and the UI's frame time.
#include <algorithm>
#include <cfloat>
#include <cstdio>

#include <imgui.h>
#include "heatmap.h"
#include "studio_app.h"

namespace vkllm::studio {

void draw_telemetry_panel(StudioApp& app) {
    if (!ImGui::Begin(panel_title(PanelTelemetry), &app.settings.open[PanelTelemetry])) {
        ImGui::End();
        return;
    }
    const WorkerState& s = *app.state;
    const TelemetryView& t = app.vm.telemetry;
    ImGui::Text("prompt %.1f tok/s   decode %.1f tok/s   first token %.0f ms", t.prompt_tokens_per_s, t.decode_tokens_per_s,
                t.first_token_ms);
    const double mib = double(1 << 20);
    ImGui::Text("memory: weights %.2f MiB, KV cache %.2f MiB, probes %.2f MiB", s.weight_bytes / mib, s.kv_bytes / mib,
                s.probe_bytes / mib);
    if (s.scratch_bytes > 0) {
        ImGui::SameLine();
        ImGui::Text(", scratch %.2f MiB", s.scratch_bytes / mib);
    }
    if (!t.by_op.empty()) {
        ImGui::Text("GPU time of the newest step: %.2f ms", t.step_ms);
        if (ImGui::BeginTable("ops", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
            for (const char* c : {"op", "ms", "dispatches"}) ImGui::TableSetupColumn(c);
            ImGui::TableHeadersRow();
            for (const OpRow& o : t.by_op) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(o.op.c_str());
                ImGui::TableNextColumn();
                ImGui::ProgressBar(t.step_ms > 0 ? float(o.ms / t.step_ms) : 0.0f, ImVec2(-1, 0),
                                   (std::to_string(o.ms).substr(0, 6)).c_str());
                ImGui::TableNextColumn();
                ImGui::Text("%d", o.count);
            }
            ImGui::EndTable();
        }
        std::vector<float> layers(t.by_layer.begin(), t.by_layer.end());
        ImGui::PlotHistogram("ms per layer (last: outside)", layers.data(), int(layers.size()), 0, nullptr, 0.0f, FLT_MAX,
                             ImVec2(0, ui_px(50)));
    } else {
        ImGui::TextDisabled("GPU times appear once a step ran with timings (if the device has timestamps).");
    }
    if (ImGui::Button("Measure the probes' cost (Ctrl+M)")) app.worker.measure_probe_cost();
    if (s.probe_cost.valid) {
        const ProbeCost& c = s.probe_cost;
        ImGui::Text("prompt of %d tokens: %.1f ms off, %.1f ms on (+%.0f%%)", c.prompt_tokens - 1, c.prompt_ms_off,
                    c.prompt_ms_on, c.prompt_ms_off > 0 ? 100.0 * (c.prompt_ms_on / c.prompt_ms_off - 1.0) : 0.0);
        ImGui::Text("decode step: %.1f ms off, %.1f ms on (+%.0f%%)", c.decode_ms_off, c.decode_ms_on,
                    c.decode_ms_off > 0 ? 100.0 * (c.decode_ms_on / c.decode_ms_off - 1.0) : 0.0);
    }
    // The UI's own frame time: the UI never waits for the engine.
    const size_t n = std::min<size_t>(app.frame_ms.size(), 240);
    if (n > 0) {
        std::vector<float> f(app.frame_ms.end() - long(n), app.frame_ms.end());
        char label[64];
        snprintf(label, sizeof label, "frame %.1f ms", f.back());
        ImGui::PlotLines("##frames", f.data(), int(f.size()), 0, label, 0.0f, FLT_MAX, ImVec2(-1, ui_px(40)));
    }
    ImGui::End();
}

}  // namespace vkllm::studio
