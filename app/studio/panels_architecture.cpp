// Architecture: the loaded model drawn from ModelInfo as a stack of blocks: norm placement,
// attention kind and window, GQA groups, MLA latent, ALiBi slopes, dense or MoE FFN, the parallel
// block (attention and FFN side by side on one input), RWKV-7's time and channel mixes over
// their state, shapes and quant types, KV bytes per token and recurrent state bytes per
// sequence. Clicking a block opens that layer in the other views.
#include <algorithm>
#include <cstdio>

#include <imgui.h>
#include "heatmap.h"
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

ImU32 attention_color(const std::string& kind) {
    if (kind == "sliding_window" || kind == "chunked") return IM_COL32(60, 150, 90, 255);
    if (kind == "mla") return IM_COL32(140, 80, 170, 255);
    if (kind == "nope") return IM_COL32(120, 120, 60, 255);
    if (kind == "mamba-2" || kind == "mamba-1" || kind == "rwkv-7") return IM_COL32(40, 130, 140, 255);  // a state
    return IM_COL32(60, 100, 170, 255);
}

}  // namespace

void draw_architecture_panel(StudioApp& app) {
    if (!begin_panel(app, PanelArchitecture)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    if (!s.info) {
        ImGui::TextDisabled("No model is loaded.");
        end_panel();
        return;
    }
    const ModelInfo& m = *s.info;
    ImGui::Text("%s: %s, %d layers, d_model %d, vocab %d", m.name.c_str(), m.arch.c_str(), m.n_layer, m.n_embd, m.n_vocab);
    ImGui::TextDisabled("%.2fM parameters, %s of tensors, %s, context %d", double(m.parameters) / 1e6,
                        bytes_text(m.tensor_bytes).c_str(), to_string(m.norm), m.n_ctx_train);
    ImGui::TextDisabled("KV per token (f32 cache; f16 halves it): global %s (%d layers), sliding %s (%d layers)",
                        bytes_text(m.kv_bytes_per_token_global).c_str(), m.n_global_layers,
                        bytes_text(m.kv_bytes_per_token_local).c_str(), m.n_local_layers);
    if (m.state_bytes_per_sequence > 0)  // fixed whatever the context (state-space and RWKV layers)
        ImGui::TextDisabled("recurrent state per sequence (f32): %s over %d state-space and %d RWKV-7 layers",
                            bytes_text(m.state_bytes_per_sequence).c_str(), m.n_ssm_layers, m.n_rwkv_layers);
    ImGui::TextDisabled("tokenizer %s%s", m.tokenizer.c_str(), m.chat_template.empty() ? "" : ", chat template");
    if (s.encoder) {
        // What sets an encoder (BERT) apart from the decoders the other blocks describe.
        bool token_types = false;
        for (const TensorInfo& t : m.tensors) token_types = token_types || t.name.rfind("token_types", 0) == 0;
        const bool post_norm = !m.layers.empty() && m.layers[0].norm_placement == NormPlacement::PostSum;
        ImGui::TextColored(readable(ImVec4(0.45f, 0.75f, 0.45f, 1)), "encoder stack: no generation, no KV cache across turns");
        bullet_text("bidirectional attention: every token sees every other (no causal mask)");
        bullet_text("%s", post_norm ? "post-norm: LayerNorm(x + f(x)) after each sub-layer"
                                          : (m.layers.empty() ? "" : (std::string(to_string(m.layers[0].norm_placement)) + "-norm").c_str()));
        bullet_text("%s%s", m.learned_positions ? "learned position embeddings" : "no learned positions",
                          token_types ? " + token-type embeddings" : "");
        bullet_text("pooling: %s (the text's embedding)", to_string(m.pooling));
    }

    ImGui::BeginChild("stack");
    ImGui::PushTextWrapPos(0.0f);
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
        // Left half: attention; right half: FFN (MoE in orange). Each half's lines wrap within
        // it and the block is as tall as the longer half, so no text is cut at any width.
        const float half = w * 0.5f;
        const float wrap_l = std::max(half - 12, 1.0f), wrap_r = std::max(w - half - 10, 1.0f);
        const LayerInfo* li = b.layer >= 0 && b.layer < int(m.layers.size()) ? &m.layers[size_t(b.layer)] : nullptr;
        const bool parallel = li && li->parallel;
        char head[96];
        if (parallel)  // both halves read the layer input and add into the residual together
            snprintf(head, sizeof head, "L%d  parallel: %s | %s of one input", b.layer, li->attn_norm.c_str(),
                     li->ffn_norm.c_str());
        else
            snprintf(head, sizeof head, "L%d  %s-norm", b.layer, b.norm == "post-sum" ? "post" : b.norm.c_str());
        std::string alibi;
        if (li && li->attention.max_alibi_bias > 0 && !li->attention.alibi_slopes.empty()) {
            // The distance penalty per head: -slope * |q_pos - k_pos|, steepest for head 0.
            char t[96];
            const std::vector<float>& sl = li->attention.alibi_slopes;
            snprintf(t, sizeof t, "\nALiBi (no positions): slopes %.3g .. %.3g over %zu heads",
                     double(*std::max_element(sl.begin(), sl.end())), double(*std::min_element(sl.begin(), sl.end())),
                     sl.size());
            alibi = t;
        }
        const bool rwkv = li && li->mixer == MixerKind::Rwkv7;
        const bool ssm = li && (li->mixer == MixerKind::Mamba2 || li->mixer == MixerKind::Mamba1);
        std::string left = std::string(head) + "\n" + b.attention + alibi +
                           (ssm ? "\nstate " + bytes_text(li->state_bytes) + "/sequence f32"
                                : "\nKV " + bytes_text(b.kv_bytes_per_token) + "/token f32");
        if (rwkv) {  // no attention: the time mix over the layer's state (two token shifts, wkv per head)
            char t[160];
            snprintf(t, sizeof t, "\nRWKV-7 time mix: %d wkv heads of %d, loras %d/%d/%d/%d\nstate %s/sequence f32",
                     li->rwkv.n_head, li->rwkv.head_size, li->rwkv.decay_rank, li->rwkv.iclr_rank,
                     li->rwkv.value_rank, li->rwkv.gate_rank, bytes_text(li->state_bytes).c_str());
            left = std::string(head) + t;
        }
        const std::string right = std::string(rwkv ? "RWKV-7 channel mix" : b.ffn_kind == "moe" ? "MoE FFN" : "dense FFN") +
                                  (parallel ? " (beside attention)" : "") + "\n" + b.ffn + "\n" +
                                  bytes_text(b.weight_bytes) + " " + b.weight_types;
        const float h = std::max(ImGui::CalcTextSize(left.c_str(), nullptr, false, wrap_l).y,
                                 ImGui::CalcTextSize(right.c_str(), nullptr, false, wrap_r).y) + line * 0.4f;
        const bool selected = b.layer == app.sel_layer;
        if (ImGui::InvisibleButton("block", ImVec2(w, h))) app.focus_layer(b.layer);
        const bool hovered = ImGui::IsItemHovered();
        // Without RoPE but with learned positions (GPT-2, BERT) a layer is plainly global.
        const bool learned_global = b.attention_kind == "nope" && m.learned_positions;
        dl->AddRectFilled(p, ImVec2(p.x + half - 2, p.y + h), attention_color(learned_global ? "global" : b.attention_kind), 4);
        dl->AddRectFilled(ImVec2(p.x + half, p.y), ImVec2(p.x + w, p.y + h),
                          b.ffn_kind == "moe" ? IM_COL32(190, 110, 40, 255) : IM_COL32(95, 95, 105, 255), 4);
        if (selected || hovered)
            dl->AddRect(p, ImVec2(p.x + w, p.y + h), selected ? IM_COL32(255, 255, 255, 255) : IM_COL32(255, 255, 255, 120), 4,
                        0, 2);
        const ImU32 text = IM_COL32(255, 255, 255, 255);
        dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(p.x + 6, p.y + 2), text, left.c_str(), nullptr, wrap_l);
        dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(p.x + half + 6, p.y + 2), text, right.c_str(), nullptr,
                    wrap_r);
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
    ImGui::PopTextWrapPos();
    ImGui::EndChild();
    end_panel();
}

}  // namespace vkllm::studio
