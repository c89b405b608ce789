// Telemetry: prompt and decode tokens/s, time to first token, GPU time per op and per layer,
// memory by category, the probes' own cost, and the UI's frame time.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include <imgui.h>
#include "heatmap.h"
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

// The UI's frame times: the newest 240 frames as bars on a fixed scale (at least 0..33 ms, more
// when the slowest frame is slower) with the scale's top and a 60 fps line marked, and the
// median and worst in words, so a spike is a bar and not the whole plot.
void frame_time_plot(const std::vector<double>& frame_ms) {
    const size_t n = std::min<size_t>(frame_ms.size(), 240);
    if (n == 0) return;
    std::vector<float> f(frame_ms.end() - long(n), frame_ms.end());
    std::vector<float> sorted = f;
    std::sort(sorted.begin(), sorted.end());
    const float median = sorted[n / 2], worst = sorted.back();
    const float top = std::max(33.3f, std::ceil(worst / 10.0f) * 10.0f);
    ImGui::TextDisabled("UI frame time, newest %zu frames: median %.1f ms, slowest %.1f ms (frames are drawn on events only)",
                        n, median, worst);
    const float label_w = ImGui::CalcTextSize("000 ms").x + ui_px(6);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float h = ui_px(60);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    char top_label[32];
    snprintf(top_label, sizeof top_label, "%.0f ms", top);
    dl->AddText(origin, ImGui::GetColorU32(ImGuiCol_TextDisabled), top_label);
    dl->AddText(ImVec2(origin.x, origin.y + h - ImGui::GetFontSize()), ImGui::GetColorU32(ImGuiCol_TextDisabled), "0");
    ImGui::SetCursorScreenPos(ImVec2(origin.x + label_w, origin.y));
    const float plot_w = std::max(ImGui::GetContentRegionAvail().x, 1.0f);
    ImGui::PlotHistogram("##frames", f.data(), int(f.size()), 0, nullptr, 0.0f, top, ImVec2(plot_w, h));
    // 16.7 ms: a frame at 60 per second.
    const ImVec2 pmin = ImGui::GetItemRectMin(), pmax = ImGui::GetItemRectMax();
    const float y60 = pmax.y - (pmax.y - pmin.y) * (16.7f / top);
    dl->AddLine(ImVec2(pmin.x, y60), ImVec2(pmax.x, y60), IM_COL32(120, 200, 120, 160), 1.0f);
    dl->AddText(ImVec2(pmax.x - ImGui::CalcTextSize("60 fps").x - ui_px(4), y60 - ImGui::GetFontSize()),
                IM_COL32(120, 200, 120, 220), "60 fps");
}

}  // namespace

void draw_telemetry_panel(StudioApp& app) {
    if (!begin_panel(app, PanelTelemetry)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    const TelemetryView& t = app.vm.telemetry;
    ImGui::Text("prompt %.1f tok/s   decode %.1f tok/s   first token %.0f ms", t.prompt_tokens_per_s, t.decode_tokens_per_s,
                t.first_token_ms);
    const double mib = double(1 << 20);
    char scratch[48] = "";
    if (s.scratch_bytes > 0) snprintf(scratch, sizeof scratch, ", scratch %.2f MiB", s.scratch_bytes / mib);
    ImGui::Text("memory: weights %.2f MiB, KV cache %.2f MiB, probes %.2f MiB%s", s.weight_bytes / mib, s.kv_bytes / mib,
                s.probe_bytes / mib, scratch);
    if (!t.by_op.empty()) {
        ImGui::Text("GPU time of the newest step: %.2f ms", t.step_ms);
        if (begin_data_table("ops", 3, int(t.by_op.size()), 10)) {
            for (const char* c : {"op", "ms", "dispatches"}) ImGui::TableSetupColumn(c);
            ImGui::TableHeadersRow();
            for (const OpRow& o : t.by_op) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(o.op.c_str());
                ImGui::TableNextColumn();
                ImGui::ProgressBar(t.step_ms > 0 ? float(o.ms / t.step_ms) : 0.0f, ImVec2(ui_px(120), 0),
                                   (std::to_string(o.ms).substr(0, 6)).c_str());
                ImGui::TableNextColumn();
                ImGui::Text("%d", o.count);
            }
            end_data_table();
        }
        std::vector<float> layers(t.by_layer.begin(), t.by_layer.end());
        const float top = layers.empty() ? 1.0f : *std::max_element(layers.begin(), layers.end());
        ImGui::TextDisabled("GPU ms per layer, 0 to %.2f (layers 0..%d, then the rest outside them)", top,
                            int(layers.size()) - 2);
        ImGui::PlotHistogram("##layers", layers.data(), int(layers.size()), 0, nullptr, 0.0f, top, ImVec2(std::max(ImGui::GetContentRegionAvail().x, 1.0f), ui_px(50)));
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
    frame_time_plot(app.frame_ms);
    end_panel();
}

}  // namespace vkllm::studio
