// The chat: turns, streaming answers coloured by surprisal or expert, token tooltips with the
// alternatives and the sampler funnel, sampler controls, edit-and-rerun.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "code_blocks.h"
#include "heatmap.h"
#include "legends.h"
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

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
        end_table();
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
    if (!begin_data_table("funnel", 3, int(e.funnel.stages.size()))) return;
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
        ImGui::ProgressBar(f.mass, ImVec2(ui_px(110), 0), label);
    }
    end_data_table();
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
    if (!begin_data_table("encoded", 3, int(e.predictions.size()), 12)) return;
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
    end_data_table();
}

}  // namespace

namespace {

// A fenced code block: its language and a copy button, then the code in a framed box in the
// monospace font, scrolled sideways rather than wrapped.
void code_block(StudioApp& app, const std::string& code, const std::string& language, int id) {
    ImGui::PushID(id);
    ImGui::TextDisabled("%s", language.empty() ? "code" : language.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("copy code")) {
        ImGui::SetClipboardText(code.c_str());
        app.message = "copied the code block";
    }
    ImFont* mono = app.code_font ? app.code_font : ImGui::GetFont();
    int lines = 1;
    for (char c : code) lines += c == '\n';
    const ImGuiStyle& st = ImGui::GetStyle();
    const float h = float(std::min(lines, 30)) * mono->FontSize + st.WindowPadding.y * 2 + st.ScrollbarSize;
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::GetStyleColorVec4(ImGuiCol_FrameBg));
    ImGui::BeginChild("code", ImVec2(0, h), true, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::PushFont(mono);
    ImGui::PushTextWrapPos(-1.0f);  // code keeps its lines: the box scrolls sideways
    ImGui::TextUnformatted(code.c_str(), code.c_str() + code.size());
    ImGui::PopTextWrapPos();
    ImGui::PopFont();
    ImGui::EndChild();
    ImGui::PopStyleColor();
    ImGui::PopID();
}

// One message: prose span by span (each token coloured and with its tooltip), code blocks apart.
void draw_message(StudioApp& app, const ChatTurn& t, int n_expert) {
    const WorkerState& s = *app.state;
    // The message's text and where each token's bytes start in it.
    std::string text;
    std::vector<size_t> starts;
    bool ended = false;
    if (t.tokens.empty()) {
        text = t.text;
    } else {
        for (const TokenEvent& e : t.tokens) {
            starts.push_back(text.size());
            text += e.text;
            ended = ended || e.end_of_generation;
        }
    }
    auto background = [&](const TokenEvent& e) -> ImU32 {
        if (app.settings.color_mode == 1)
            // Fainter on the light theme: dark text stays readable on the dark ramp end.
            return ramp_color(std::min(surprisal_bits(e.logprob) / 12.0f, 1.0f), app.settings.dark ? 0.55f : 0.3f);
        if (app.settings.color_mode == 2) return expert_color(top_expert(*s.probes, app.settings.color_layer, e.position), n_expert);
        return 0;
    };
    const std::vector<TextSegment> segments = split_code_blocks(text);
    bool line_open = false;  // a prose span left the cursor on its line
    for (size_t k = 0; k < segments.size(); ++k) {
        const TextSegment& seg = segments[k];
        if (seg.code) {
            if (line_open) ImGui::NewLine();
            line_open = false;
            code_block(app, text.substr(seg.begin, seg.end - seg.begin), seg.language, int(k));
            continue;
        }
        if (t.tokens.empty()) {
            ImGui::PushTextWrapPos(0);
            ImGui::TextUnformatted(text.c_str() + seg.begin, text.c_str() + seg.end);
            ImGui::PopTextWrapPos();
            continue;
        }
        // The tokens' parts inside this segment.
        for (size_t i = 0; i < t.tokens.size(); ++i) {
            const TokenEvent& e = t.tokens[i];
            const size_t b = std::max(starts[i], seg.begin), end = std::min(starts[i] + e.text.size(), seg.end);
            if (b >= end) continue;
            if (wrapped_span(text.substr(b, end - b), background(e))) {
                app.hover_pos = e.position;
                token_tooltip(app, e);
            }
            line_open = true;
        }
    }
    if (ended) {
        const TokenEvent& e = t.tokens.back();
        if (wrapped_span("[end]", background(e))) {
            app.hover_pos = e.position;
            token_tooltip(app, e);
        }
        line_open = true;
    }
    if (line_open) ImGui::NewLine();
}

// What the chat box's callback needs: the app, and whether this frame's Enter sends.
struct InputBox {
    StudioApp* app = nullptr;
    bool enter_sends = false;
};

// The chat box's callback, every frame it has the keyboard. Enter sends from here, while the box
// keeps the keyboard (ImGui's own Enter would let go of it, and letters typed right after Enter
// would find no box for a frame or two): the box's text is sent and deleted in place. Up and
// Down bring back sent messages (InputHistory): ImGui has no history callback for a multi-line
// box, so this callback looks at the arrow keys.
int input_callback(ImGuiInputTextCallbackData* d) {
    auto* box = static_cast<InputBox*>(d->UserData);
    StudioApp* app = box->app;
    if (box->enter_sends) {
        box->enter_sends = false;
        const std::string text(d->Buf, size_t(d->BufTextLen));  // ImGui's copy of the box
        snprintf(app->input, sizeof app->input, "%s", text.c_str());
        if (app->send_input()) d->DeleteChars(0, d->BufTextLen);
        return 0;
    }
    const bool up = ImGui::IsKeyPressed(GLFW_KEY_UP), down = ImGui::IsKeyPressed(GLFW_KEY_DOWN);
    if (!up && !down) return 0;
    const std::string current(d->Buf, size_t(d->BufTextLen));
    if (const auto r = app->input_history.recall(current, up)) {
        d->DeleteChars(0, d->BufTextLen);
        d->InsertChars(0, r->c_str());
        d->CursorPos = d->SelectionStart = d->SelectionEnd = d->BufTextLen;
    }
    return 0;
}

// A row of buttons that wraps when the panel is narrow.
bool flow_button(const char* label, bool first) {
    const float w = ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2;
    if (!first && fits_after_last_item(w)) ImGui::SameLine();
    return ImGui::Button(label);
}

// The context meter, and the choice when the context is full.
float context_rows(const StudioApp& app) {
    const bool choice = app.state->context_full && !app.context_choice_dismissed;
    return ImGui::GetFrameHeightWithSpacing() * (choice ? 3.0f : 1.0f);
}

void context_meter(StudioApp& app) {
    const WorkerState& s = *app.state;
    const int used = int(s.context.size());
    const float f = s.n_ctx > 0 ? std::min(1.0f, float(used) / float(s.n_ctx)) : 0.0f;
    char label[64];
    snprintf(label, sizeof label, "context %d / %d tokens", used, s.n_ctx);
    ImGui::PushStyleColor(ImGuiCol_PlotHistogram, f >= 0.9f ? ImVec4(0.85f, 0.3f, 0.25f, 1) : f >= 0.7f ? ImVec4(0.9f, 0.65f, 0.2f, 1)
                                                                                            : ImVec4(0.3f, 0.6f, 0.9f, 1));
    ImGui::ProgressBar(f, ImVec2(-1, 0), label);
    ImGui::PopStyleColor();
    if (!s.context_full || app.context_choice_dismissed) return;
    ImGui::TextColored(readable(ImVec4(1, 0.7f, 0.3f, 1)), "The context is full: the answer stopped.");
    if (ImGui::Button("Drop the oldest turns and go on")) app.worker.shift_context(app.settings.generation);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Drops the oldest exchanges (the system prompt stays) until half the context is free,\n"
                          "re-evaluates what is kept, and lets you chat on.");
    if (flow_button("Stop here", false)) app.context_choice_dismissed = true;
}


}  // namespace

void draw_chat_panel(StudioApp& app) {
    if (!begin_panel(app, PanelChat)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    if (ImGui::CollapsingHeader("System prompt")) {
        if (ImGui::InputTextMultiline("##system", app.system_prompt, sizeof app.system_prompt,
                                      ImVec2(-1, ImGui::GetTextLineHeight() * 4)))
            app.settings.generation.system = app.system_prompt;
        ImGui::TextDisabled(s.chat_template ? "sent as the template's system message"
                                            : "plain continuation: the text before the conversation");
    }
    if (ImGui::CollapsingHeader("Sampler")) sampler_controls(app);
    ImGui::SetNextItemWidth(ui_px(120));
    ImGui::Combo("colour", &app.settings.color_mode, "plain\0surprisal\0expert\0");
    int n_expert = 0;
    if (app.settings.color_mode == 2 && s.info) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ui_px(90));
        ImGui::SliderInt("MoE layer", &app.settings.color_layer, 0, std::max(0, s.info->n_layer - 1));
        app.settings.color_layer = std::clamp(app.settings.color_layer, 0, std::max(0, s.info->n_layer - 1));
        n_expert = s.info->layers.empty() ? 0 : s.info->layers[size_t(app.settings.color_layer)].ffn.n_expert;
    }
    const char* mode = s.encoder ? "(encoder)" : s.chat_template ? "(chat template)" : "(plain continuation)";
    if (fits_after_last_item(ImGui::CalcTextSize(mode).x)) ImGui::SameLine();
    ImGui::TextDisabled("%s", mode);
    // What the colours mean.
    if (app.settings.color_mode == 1) ramp_legend("surprisal", "0", "12+ bits", app.settings.dark ? 0.55f : 0.3f);
    else if (app.settings.color_mode == 2) {
        if (n_expert == 0) ImGui::TextDisabled("layer %d has no experts", app.settings.color_layer);
        else expert_legend(n_expert);
    }

    const float input_h = ImGui::GetTextLineHeight() * 3 + ImGui::GetStyle().FramePadding.y * 2;
    const float footer = input_h + ImGui::GetFrameHeightWithSpacing() * 2 + context_rows(app) + ImGui::GetStyle().ItemSpacing.y * 2;
    ImGui::BeginChild("turns", ImVec2(0, -footer), true);
    ImGui::PushTextWrapPos(0.0f);
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
        ImGui::SameLine();
        if (ImGui::SmallButton("copy")) {
            ImGui::SetClipboardText(t.text.c_str());
            app.message = "copied message " + std::to_string(i);
        }
        if (app.editing == i) {
            ImGui::InputTextMultiline("##edit", app.edit_buffer, sizeof app.edit_buffer, ImVec2(-1, ui_px(80)));
            if (ImGui::Button("Rerun from here")) {
                app.worker.edit_and_rerun(i, app.edit_buffer, app.settings.generation);
                app.editing = -1;
            }
            ImGui::SameLine();
            if (ImGui::Button("Cancel")) app.editing = -1;
        } else {
            draw_message(app, t, n_expert);
        }
        ImGui::Separator();
        ImGui::PopID();
    }
    if (s.encoder) encoder_view(s);
    if (!s.messages.empty() && !s.messages.back().tokens.empty()) funnel_table(s.messages.back().tokens.back());
    if (s.generating && ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - 40) ImGui::SetScrollHereY(1.0f);
    ImGui::PopTextWrapPos();
    ImGui::EndChild();

    context_meter(app);
    // The box: Enter sends, Shift+Enter (or Ctrl+Enter) starts a new line, Up in an empty box
    // brings back the last message. ImGui's multi-line box sends on Enter with
    // CtrlEnterForNewLine and takes Ctrl+Enter as its new line; Shift+Enter is passed to it as
    // Ctrl+Enter for the one frame it is pressed. A plain Enter while the box has the keyboard is
    // hidden from it for that frame and sent by the callback instead (the box stays active).
    ImGuiIO& io = ImGui::GetIO();
    const bool enter = ImGui::IsKeyPressed(GLFW_KEY_ENTER) || ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER);
    const bool ctrl = io.KeyCtrl;
    const ImGuiKeyModFlags mods = io.KeyMods;
    if (enter && io.KeyShift) {
        io.KeyCtrl = true;
        io.KeyMods |= ImGuiKeyModFlags_Ctrl;
    }
    InputBox box{&app, enter && app.input_active && !io.KeyShift && !io.KeyCtrl};
    // A key (or keyboard navigation's "input", which Enter also is) reads as pressed in the frame
    // its down-duration is 0; -1 reads as up.
    float* const enter_down[3] = {&io.KeysDownDuration[GLFW_KEY_ENTER], &io.KeysDownDuration[GLFW_KEY_KP_ENTER],
                                  &io.NavInputsDownDuration[ImGuiNavInput_Input]};
    const float enter_was[3] = {*enter_down[0], *enter_down[1], *enter_down[2]};
    if (box.enter_sends)
        for (float* d : enter_down) *d = -1.0f;
    if (app.focus_input) {
        if (!app.input_active) ImGui::SetKeyboardFocusHere();
        app.focus_input = false;
    }
    const bool submitted = ImGui::InputTextMultiline(
        "##input", app.input, sizeof app.input, ImVec2(-1, input_h),
        ImGuiInputTextFlags_CtrlEnterForNewLine | ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackAlways,
        input_callback, &box);
    io.KeyCtrl = ctrl;
    io.KeyMods = mods;
    for (int i = 0; i < 3; ++i) *enter_down[i] = enter_was[i];
    app.input_active = ImGui::IsItemActive();
    if (submitted) {
        app.send_input();
        app.focus_input = true;  // an Enter in the frame the box took the keyboard let go of it
    }
    if (flow_button(s.encoder ? "Encode (Enter)" : "Send (Enter)", true)) app.send_input();
    if (flow_button("Stop (Esc)", false)) app.worker.stop();
    if (flow_button("Regenerate (Ctrl+R)", false)) app.worker.regenerate(app.settings.generation);
    if (flow_button("Clear", false)) app.worker.clear_chat();
    end_panel();
}

}  // namespace vkllm::studio
