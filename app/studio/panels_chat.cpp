// The chat: turns, streaming answers coloured by surprisal or expert, token tooltips with the
// alternatives and the sampler funnel, sampler controls, edit-and-rerun.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heatmap.h"
#include <imgui.h>
#include "studio_app.h"

namespace vkllm::studio {

namespace {

ImU32 expert_color(int expert, int n_expert) {
    if (expert < 0) return 0;
    const float hue = float(expert) / float(std::max(n_expert, 1));
    float r, g, b;
    ImGui::ColorConvertHSVtoRGB(hue, 0.55f, 0.85f, r, g, b);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 0.55f));
}

// The expert the token at `position` went to first at `layer` (-1 when unknown).
int top_expert(const ProbeHistory& h, int layer, int position) {
    const RoutingHistory* r = h.routing_layer(layer);
    if (!r) return -1;
    for (size_t t = 0; t < r->positions.size(); ++t)
        if (r->positions[t] == position) return r->experts[t * size_t(r->top_k)];
    return -1;
}

void token_tooltip(StudioApp& app, const TokenEvent& e) {
    ImGui::BeginTooltip();
    ImGui::Text("token %d at position %d: \"%s\"", e.id, e.position, e.piece.c_str());
    ImGui::Text("p = %.4f   surprisal %.2f bits", std::exp(e.logprob), surprisal_bits(e.logprob));
    if (!e.top.empty() && ImGui::BeginTable("alts", 2, ImGuiTableFlags_SizingFixedFit)) {
        for (const TokenAlternative& a : e.top) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%s%s", a.id == e.id ? "> " : "  ", a.piece.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%.4f", std::exp(a.logprob));
        }
        ImGui::EndTable();
    }
    const std::vector<std::vector<int32_t>> path = token_path(*app.state->probes, e.position);
    std::string p;
    for (size_t i = 0; i < path.size(); ++i) {
        if (path[i].empty()) continue;
        p += "L" + std::to_string(app.state->probes->routing[i].layer) + ":";
        for (int32_t x : path[i]) p += " " + std::to_string(x);
        p += "  ";
    }
    if (!p.empty()) ImGui::Text("experts %s", p.c_str());
    ImGui::EndTooltip();
}

// Draws a text span by span with wrapping; returns true when the mouse is over it.
bool wrapped_span(const std::string& text, ImU32 background) {
    bool hovered = false;
    const float right = ImGui::GetWindowContentRegionMax().x;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t nl = text.find('\n', start);
        const std::string part = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (!part.empty()) {
            const ImVec2 size = ImGui::CalcTextSize(part.c_str());
            if (ImGui::GetCursorPosX() + size.x > right && ImGui::GetCursorPosX() > ImGui::GetWindowContentRegionMin().x + 1)
                ImGui::NewLine();
            const ImVec2 p = ImGui::GetCursorScreenPos();
            if (background)
                ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), background, 2.0f);
            ImGui::TextUnformatted(part.c_str());
            hovered = hovered || ImGui::IsItemHovered();
            ImGui::SameLine(0, 0);
        }
        if (nl == std::string::npos) break;
        ImGui::NewLine();
        start = nl + 1;
    }
    return hovered;
}

void sampler_controls(StudioApp& app) {
    SamplerParams& s = app.settings.generation.sampler;
    ImGui::PushItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
    ImGui::SliderFloat("temperature", &s.temperature, 0.0f, 2.0f, "%.2f");
    ImGui::SliderInt("top-k", &s.top_k, 0, 200);
    ImGui::SliderFloat("top-p", &s.top_p, 0.0f, 1.0f, "%.2f");
    ImGui::SliderFloat("min-p", &s.min_p, 0.0f, 1.0f, "%.2f");
    ImGui::SliderFloat("repeat penalty", &s.repeat_penalty, 0.5f, 2.0f, "%.2f");
    ImGui::SliderFloat("presence penalty", &s.presence_penalty, 0.0f, 2.0f, "%.2f");
    ImGui::SliderFloat("frequency penalty", &s.frequency_penalty, 0.0f, 2.0f, "%.2f");
    ImGui::SliderInt("repeat last n", &s.repeat_last_n, -1, 512);
    int seed = int(s.seed);
    if (ImGui::InputInt("seed", &seed)) s.seed = uint64_t(std::max(seed, 0));
    ImGui::SliderInt("max tokens", &app.settings.generation.max_tokens, 1, 1024);
    ImGui::PopItemWidth();
}

void funnel_table(const TokenEvent& e) {
    ImGui::TextDisabled("sampler funnel of the newest token \"%s\" (rank %d, p %.3f when drawn):", e.piece.c_str(),
                        e.funnel.chosen_rank, e.funnel.chosen_p);
    if (!ImGui::BeginTable("funnel", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
    ImGui::TableSetupColumn("stage");
    ImGui::TableSetupColumn("candidates");
    ImGui::TableSetupColumn("mass");
    ImGui::TableHeadersRow();
    for (const FunnelStage& f : e.funnel.stages) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(f.stage.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%d", f.candidates);
        ImGui::TableNextColumn();
        char label[32];
        snprintf(label, sizeof label, "%.1f%%", f.mass * 100.0f);
        ImGui::ProgressBar(f.mass, ImVec2(-1, 0), label);
    }
    ImGui::EndTable();
}

// An encoder's reading of the newest text: its tokens with the masked-token prediction at each
// position ([MASK] rows marked: fill-mask) and the pooled embedding. Nothing is generated.
void encoder_view(const WorkerState& s) {
    ImGui::TextColored(readable(ImVec4(0.5f, 0.8f, 0.5f, 1)), "encoder: no generation");
    ImGui::TextWrapped("%s reads the whole text in one pass, every token attending to every other; sending a text "
                       "evaluates it for the attention, activation and lens panels.",
                       s.info ? s.info->arch.c_str() : "the model");
    const EncoderView& e = s.encoded;
    if (!e.valid) return;
    ImGui::Text("%zu tokens in %.1f ms; %s-pooled embedding, |e| = %.4f", e.predictions.size(), e.ms, e.pooling.c_str(),
                e.embedding_norm);
    std::string dims;
    for (size_t i = 0; i < std::min<size_t>(6, e.embedding.size()); ++i) {
        char v[24];
        snprintf(v, sizeof v, "%s%.3f", i ? ", " : "", e.embedding[i]);
        dims += v;
    }
    ImGui::TextDisabled("e[0..5] = %s%s", dims.c_str(), e.embedding.size() > 6 ? ", ..." : "");
    if (!ImGui::BeginTable("encoded", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
    ImGui::TableSetupColumn("pos");
    ImGui::TableSetupColumn("token");
    ImGui::TableSetupColumn("predicted here (masked-token head)");
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < e.predictions.size(); ++i) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%zu", i);
        ImGui::TableNextColumn();
        const std::string piece = i < s.context_pieces.size() ? s.context_pieces[i] : "?";
        if (e.masked[i]) ImGui::TextColored(readable(ImVec4(1, 0.7f, 0.2f, 1)), "%s", piece.c_str());
        else ImGui::TextUnformatted(piece.c_str());
        ImGui::TableNextColumn();
        std::string top;
        for (size_t k = 0; k < std::min<size_t>(3, e.predictions[i].size()); ++k) {
            char p[96];
            snprintf(p, sizeof p, "%s%s %.2f", k ? "  " : "", e.predictions[i][k].piece.c_str(),
                     std::exp(e.predictions[i][k].logprob));
            top += p;
        }
        ImGui::TextUnformatted(top.c_str());
    }
    ImGui::EndTable();
}

}  // namespace

void draw_chat_panel(StudioApp& app) {
    if (!ImGui::Begin(panel_title(PanelChat), &app.settings.open[PanelChat])) {
        ImGui::End();
        return;
    }
    const WorkerState& s = *app.state;
    if (ImGui::CollapsingHeader("Sampler")) sampler_controls(app);
    ImGui::SetNextItemWidth(ui_px(140));
    ImGui::Combo("colour", &app.settings.color_mode, "plain\0surprisal\0expert\0");
    int n_expert = 0;
    if (app.settings.color_mode == 2 && s.info) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ui_px(100));
        ImGui::SliderInt("MoE layer", &app.settings.color_layer, 0, std::max(0, s.info->n_layer - 1));
        app.settings.color_layer = std::clamp(app.settings.color_layer, 0, std::max(0, s.info->n_layer - 1));
        n_expert = s.info->layers.empty() ? 0 : s.info->layers[size_t(app.settings.color_layer)].ffn.n_expert;
        if (n_expert == 0) ImGui::TextDisabled("layer %d has no experts", app.settings.color_layer);
    }
    ImGui::SameLine();
    ImGui::TextDisabled(s.encoder ? "(encoder)" : s.chat_template ? "(chat template)" : "(plain continuation)");

    const float footer = ImGui::GetFrameHeight() * 2.5f + ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y * 2;
    ImGui::BeginChild("turns", ImVec2(0, -footer), true);
    app.hover_pos = -1;
    for (int i = 0; i < int(s.messages.size()); ++i) {
        const ChatTurn& t = s.messages[size_t(i)];
        ImGui::PushID(i);
        ImGui::TextColored(readable(t.role == "user" ? ImVec4(0.4f, 0.7f, 1, 1) : ImVec4(0.5f, 0.9f, 0.5f, 1)), "%s",
                           t.role.c_str());
        ImGui::SameLine();
        if (!s.busy && ImGui::SmallButton("edit")) {
            app.editing = i;
            snprintf(app.edit_buffer, sizeof app.edit_buffer, "%s", t.text.c_str());
        }
        if (app.editing == i) {
            ImGui::InputTextMultiline("##edit", app.edit_buffer, sizeof app.edit_buffer, ImVec2(-1, ui_px(80)));
            if (ImGui::Button("Rerun from here")) {
                app.worker.edit_and_rerun(i, app.edit_buffer, app.settings.generation);
                app.editing = -1;
            }
            ImGui::SameLine();
            if (ImGui::Button("Cancel")) app.editing = -1;
        } else if (t.tokens.empty()) {
            ImGui::PushTextWrapPos(0);
            ImGui::TextUnformatted(t.text.c_str());
            ImGui::PopTextWrapPos();
        } else {
            for (const TokenEvent& e : t.tokens) {
                if (e.text.empty() && !e.end_of_generation) continue;
                ImU32 bg = 0;
                if (app.settings.color_mode == 1)
                    // Fainter on the light theme: dark text stays readable on the dark ramp end.
                    bg = ramp_color(std::min(surprisal_bits(e.logprob) / 12.0f, 1.0f), app.settings.dark ? 0.55f : 0.3f);
                else if (app.settings.color_mode == 2)
                    bg = expert_color(top_expert(*s.probes, app.settings.color_layer, e.position), n_expert);
                if (wrapped_span(e.end_of_generation ? "[end]" : e.text, bg)) {
                    app.hover_pos = e.position;
                    token_tooltip(app, e);
                }
            }
            ImGui::NewLine();
        }
        ImGui::Separator();
        ImGui::PopID();
    }
    if (s.encoder) encoder_view(s);
    if (!s.messages.empty() && !s.messages.back().tokens.empty()) funnel_table(s.messages.back().tokens.back());
    if (s.generating && ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - 40) ImGui::SetScrollHereY(1.0f);
    ImGui::EndChild();
    ImGui::InputTextMultiline("##input", app.input, sizeof app.input, ImVec2(-1, ImGui::GetFrameHeight() * 2.5f));
    if (ImGui::Button(s.encoder ? "Encode (Ctrl+Enter)" : "Send (Ctrl+Enter)")) app.send_input();
    ImGui::SameLine();
    if (ImGui::Button("Stop (Esc)")) app.worker.stop();
    ImGui::SameLine();
    if (ImGui::Button("Regenerate (Ctrl+R)")) app.worker.regenerate(app.settings.generation);
    ImGui::SameLine();
    if (ImGui::Button("Clear")) app.worker.clear_chat();
    ImGui::End();
}

}  // namespace vkllm::studio
