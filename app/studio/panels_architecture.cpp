// Architecture: the loaded model drawn from ModelInfo as a stack of blocks: norm placement,
// attention kind and window, GQA groups, MLA latent, dense or MoE FFN, shapes and quant types,
// KV bytes per token. Clicking a block opens that layer in the other views.
#include <algorithm>
#include <cstdio>

#include <imgui.h>
#include "heatmap.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

std::string bytes_text(uint64_t b) {
    char s[32];
    if (b >= (1ull << 20)) snprintf(s, sizeof s, "%.1f MiB", double(b) / double(1ull << 20));
    else if (b >= 1024) snprintf(s, sizeof s, "%.1f KiB", double(b) / 1024.0);
    else snprintf(s, sizeof s, "%llu B", (unsigned long long)b);
    return s;
}

ImU32 attention_color(const std::string& kind) {
    if (kind == "sliding_window" || kind == "chunked") return IM_COL32(60, 150, 90, 255);
    if (kind == "mla") return IM_COL32(140, 80, 170, 255);
    if (kind == "nope") return IM_COL32(120, 120, 60, 255);
    return IM_COL32(60, 100, 170, 255);
}

}  // namespace

void draw_architecture_panel(StudioApp& app) {
    if (!ImGui::Begin(panel_title(PanelArchitecture), &app.settings.open[PanelArchitecture])) {
        ImGui::End();
        return;
    }
    const WorkerState& s = *app.state;
    if (!s.info) {
        ImGui::TextDisabled("No model is loaded.");
        ImGui::End();
        return;
    }
    const ModelInfo& m = *s.info;
    ImGui::Text("%s: %s, %d layers, d_model %d, vocab %d", m.name.c_str(), m.arch.c_str(), m.n_layer, m.n_embd, m.n_vocab);
    ImGui::TextDisabled("%.2fM parameters, %s of tensors, %s, context %d", double(m.parameters) / 1e6,
                        bytes_text(m.tensor_bytes).c_str(), to_string(m.norm), m.n_ctx_train);
    ImGui::TextDisabled("KV per token (f32 cache; f16 halves it): global %s (%d layers), sliding %s (%d layers)",
                        bytes_text(m.kv_bytes_per_token_global).c_str(), m.n_global_layers,
                        bytes_text(m.kv_bytes_per_token_local).c_str(), m.n_local_layers);
    ImGui::TextDisabled("tokenizer %s%s", m.tokenizer.c_str(), m.chat_template.empty() ? "" : ", chat template");
    if (s.encoder) {
        // What sets an encoder (BERT) apart from the decoders the other blocks describe.
        bool token_types = false;
        for (const TensorInfo& t : m.tensors) token_types = token_types || t.name.rfind("token_types", 0) == 0;
        const bool post_norm = !m.layers.empty() && m.layers[0].norm_placement == NormPlacement::PostSum;
        ImGui::TextColored(readable(ImVec4(0.45f, 0.75f, 0.45f, 1)), "encoder stack: no generation, no KV cache across turns");
        ImGui::BulletText("bidirectional attention: every token sees every other (no causal mask)");
        ImGui::BulletText("%s", post_norm ? "post-norm: LayerNorm(x + f(x)) after each sub-layer"
                                          : (m.layers.empty() ? "" : (std::string(to_string(m.layers[0].norm_placement)) + "-norm").c_str()));
        ImGui::BulletText("%s%s", m.learned_positions ? "learned position embeddings" : "no learned positions",
                          token_types ? " + token-type embeddings" : "");
        ImGui::BulletText("pooling: %s (the text's embedding)", to_string(m.pooling));
    }

    ImGui::BeginChild("stack");
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float w = ImGui::GetContentRegionAvail().x;
    const float line = ImGui::GetTextLineHeight();
    // Embeddings at the bottom of a transformer drawing are at the top of a list: the stack
    // reads top-down in the order the data flows.
    ImGui::TextDisabled("token embeddings%s%s", m.learned_positions ? " + learned positions" : "",
                        m.embd_scale != 1.0f ? " (scaled)" : "");
    for (const ArchitectureBlock& b : app.vm.architecture) {
        ImGui::PushID(b.layer);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float h = line * 4.5f;
        const bool selected = b.layer == app.sel_layer;
        if (ImGui::InvisibleButton("block", ImVec2(w, h))) app.focus_layer(b.layer);
        const bool hovered = ImGui::IsItemHovered();
        // Left half: attention; right half: FFN (MoE in orange).
        const float half = w * 0.5f;
        // Without RoPE but with learned positions (GPT-2, BERT) a layer is plainly global.
        const bool learned_global = b.attention_kind == "nope" && m.learned_positions;
        dl->AddRectFilled(p, ImVec2(p.x + half - 2, p.y + h), attention_color(learned_global ? "global" : b.attention_kind), 4);
        dl->AddRectFilled(ImVec2(p.x + half, p.y), ImVec2(p.x + w, p.y + h),
                          b.ffn_kind == "moe" ? IM_COL32(190, 110, 40, 255) : IM_COL32(95, 95, 105, 255), 4);
        if (selected || hovered)
            dl->AddRect(p, ImVec2(p.x + w, p.y + h), selected ? IM_COL32(255, 255, 255, 255) : IM_COL32(255, 255, 255, 120), 4,
                        0, 2);
        const ImU32 text = IM_COL32(255, 255, 255, 255);
        // Each half's text is clipped to its half.
        const ImVec4 left_clip(p.x, p.y, p.x + half - 6, p.y + h), right_clip(p.x + half, p.y, p.x + w - 4, p.y + h);
        // The attention and FFN descriptions wrap within their half (two lines at most, lines
        // 2-3); the other lines are clipped, so a narrow block (a high UI scale) never overlaps.
        auto put = [&](float x, float y, ImU32 col, const char* t, const ImVec4& clip, bool wrap = false) {
            dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(x, y), col, t, nullptr, wrap ? clip.z - x : 0.0f,
                        &clip);
        };
        char buf[160];
        snprintf(buf, sizeof buf, "L%d  %s-norm", b.layer, b.norm == "post-sum" ? "post" : b.norm.c_str());
        put(p.x + 6, p.y + 2, text, buf, left_clip);
        const float description_bottom = p.y + 2 + line * 3.2f;
        put(p.x + 6, p.y + 2 + line * 1.1f, text, b.attention.c_str(),
            ImVec4(left_clip.x, left_clip.y, left_clip.z, description_bottom), true);
        snprintf(buf, sizeof buf, "KV %s/token f32", bytes_text(b.kv_bytes_per_token).c_str());
        put(p.x + 6, p.y + 2 + line * 3.3f, IM_COL32(230, 230, 230, 255), buf, left_clip);
        put(p.x + half + 6, p.y + 2, text, b.ffn_kind == "moe" ? "MoE FFN" : "dense FFN", right_clip);
        put(p.x + half + 6, p.y + 2 + line * 1.1f, text, b.ffn.c_str(),
            ImVec4(right_clip.x, right_clip.y, right_clip.z, description_bottom), true);
        snprintf(buf, sizeof buf, "%s %s", bytes_text(b.weight_bytes).c_str(), b.weight_types.c_str());
        put(p.x + half + 6, p.y + 2 + line * 3.3f, IM_COL32(230, 230, 230, 255), buf, right_clip);
        if (hovered && b.layer < int(m.layers.size())) {
            ImGui::BeginTooltip();
            ImGui::Text("click: open layer %d in the attention, activation and expert views", b.layer);
            for (const TensorInfo& t : m.layers[size_t(b.layer)].tensors) {
                std::string shape;
                for (uint64_t d : t.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
                ImGui::Text("%-28s %-6s [%s]", t.name.c_str(), t.type.c_str(), shape.c_str());
            }
            ImGui::EndTooltip();
        }
        ImGui::Dummy(ImVec2(0, 2));
        ImGui::PopID();
    }
    ImGui::TextDisabled("final %s, output %s%s", to_string(m.norm), m.tied_embeddings ? "(tied to the embeddings)" : "matrix",
                        m.final_softcap > 0 ? ", soft-capped" : "");
    ImGui::EndChild();
    ImGui::End();
}

}  // namespace vkllm::studio
