// Attention: a layer x head grid of small maps, one large map of the selected head with the
// sliding window as a band and learned sinks as their own column, per-head statistics, and
// "what attends to this token" across layers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "head_detail.h"
#include "heatmap.h"
#include "legends.h"
#include "linked_text.h"
#include <imgui.h>
#include "panel_frame.h"
#include "studio_app.h"

namespace vkllm::studio {

namespace {

// Maps are recomputed only when the worker publishes a new state.
struct MatrixCache {
    uint64_t version = ~0ull;
    std::map<std::tuple<int, int, bool>, std::vector<float>> maps;
    const std::vector<float>& get(const AttentionHistory& a, int head, bool log_scale, uint64_t v) {
        if (v != version) maps.clear(), version = v;
        auto key = std::make_tuple(a.layer, head, log_scale);
        auto it = maps.find(key);
        if (it == maps.end()) it = maps.emplace(key, attention_matrix(a, head, log_scale)).first;
        return it->second;
    }
};
MatrixCache g_cache;

std::string short_text(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\n' ? ' ' : c;
    return out.size() > 16 ? out.substr(0, 16) + "..." : out;
}

void cell_tooltip(StudioApp& app, const AttentionHistory& a, int head, int q, int k) {
    const int qpos = a.query_pos[size_t(q)];
    ImGui::BeginTooltip();
    ImGui::Text("layer %d head %d", a.layer, head);
    ImGui::Text("query %d \"%s\"", qpos, short_text(app.token_text(qpos)).c_str());
    ImGui::Text("key   %d \"%s\"", k, short_text(app.token_text(k)).c_str());
    ImGui::Text("p = %.4f", a.at(head, q, k));
    if (a.has_sinks) ImGui::Text("sink mass of this row %.4f", a.sink_at(head, q));
    ImGui::TextDisabled("click: what attends to key %d", k);
    ImGui::EndTooltip();
}

}  // namespace

// The linked text view (bertviz-style): the text as it flows; hovering a token draws a line to
// each key it attends (the selected head's weights or their mean over the layer's heads), the
// line's width and the key's shading by the weight relative to the row's largest.
namespace {
struct LinkedText {
    bool mean_heads = false;
    int pinned = -1;     // a clicked token, shown while no other is hovered
    bool open = false;   // set by a script: open the view on the next frame
};
LinkedText g_linked;
}  // namespace

void pin_linked_token(int position, bool mean_heads) {
    g_linked.pinned = position;
    g_linked.mean_heads = mean_heads;
    g_linked.open = true;
}

static void draw_linked_text(StudioApp& app, const AttentionHistory& a) {
    bool& mean_heads = g_linked.mean_heads;
    ImGui::Checkbox("mean over heads", &mean_heads);
    ImGui::SameLine();
    ImGui::TextDisabled("hover or click a token: lines to the tokens it attends (layer %d, %s)", a.layer,
                        mean_heads ? "every head" : ("head " + std::to_string(app.sel_head)).c_str());
    ImGui::Dummy(ImVec2(0, ui_px(20)));  // room for the arcs above the first line
    const int n = a.n_key;
    const float avail = ImGui::GetContentRegionAvail().x, line = ImGui::GetTextLineHeight() * 1.8f;
    const ImVec2 start = ImGui::GetCursorScreenPos();
    std::vector<ImVec2> box_lo(size_t(std::max(n, 0))), box_hi(box_lo.size());
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->ChannelsSplit(2);  // 0: shading under the text, 1: the text
    dl->ChannelsSetCurrent(1);
    float x = 0, y = 0;
    int hovered = -1;
    for (int k = 0; k < n; ++k) {
        const std::string piece = short_text(app.token_text(k));
        const float w = std::max(ImGui::CalcTextSize(piece.c_str()).x, ui_px(4));
        if (x > 0 && x + w > avail) x = 0, y += line;
        box_lo[size_t(k)] = ImVec2(start.x + x, start.y + y);
        box_hi[size_t(k)] = ImVec2(start.x + x + w, start.y + y + ImGui::GetTextLineHeight());
        ImGui::SetCursorScreenPos(box_lo[size_t(k)]);
        ImGui::TextUnformatted(piece.c_str());
        if (ImGui::IsItemHovered()) hovered = k;
        if (ImGui::IsItemClicked()) g_linked.pinned = g_linked.pinned == k ? -1 : k;
        x += w + ui_px(2);
    }
    const bool pinned = hovered < 0 && g_linked.pinned >= 0 && g_linked.pinned < n;
    if (pinned) hovered = g_linked.pinned;
    dl->ChannelsSetCurrent(0);
    std::vector<float> wts = hovered >= 0 ? attention_from_query(a, mean_heads ? -1 : app.sel_head, hovered) : std::vector<float>{};
    float top = 1e-9f;
    for (float v : wts) top = std::max(top, v);
    for (size_t k = 0; k < wts.size(); ++k)
        if (wts[k] / top > 0.02f)
            dl->AddRectFilled(box_lo[k], box_hi[k], IM_COL32(80, 160, 255, int(40 + 160 * wts[k] / top)), 2.0f);
    dl->ChannelsMerge();
    if (hovered >= 0) {
        const ImVec2 from((box_lo[size_t(hovered)].x + box_hi[size_t(hovered)].x) * 0.5f, box_lo[size_t(hovered)].y);
        dl->AddRect(box_lo[size_t(hovered)], box_hi[size_t(hovered)], IM_COL32(255, 90, 90, 255), 2.0f);
        for (size_t k = 0; k < wts.size(); ++k) {
            const float r = wts[k] / top;
            if (r <= 0.02f || int(k) == hovered) continue;
            const ImVec2 to((box_lo[k].x + box_hi[k].x) * 0.5f, box_lo[k].y);
            // An arc above the text: both ends at the tokens' tops, the control points raised.
            const float lift = std::min(ui_px(20), 8.0f + std::fabs(to.x - from.x) * 0.15f + std::fabs(to.y - from.y) * 0.3f);
            dl->AddBezierCubic(from, ImVec2(from.x, std::min(from.y, to.y) - lift), ImVec2(to.x, std::min(from.y, to.y) - lift),
                               to, IM_COL32(255, 170, 60, int(60 + 195 * r)), 1.0f + 3.0f * r);
        }
        if (pinned) {
            // No tooltip for a pinned token: it stays while the mouse is elsewhere.
        } else if (wts.empty()) {
            ImGui::SetTooltip("position %d has no query row in this map", hovered);
        } else {
            const int best = int(std::max_element(wts.begin(), wts.end()) - wts.begin());
            ImGui::SetTooltip("%d \"%s\" attends most to %d \"%s\" (%.3f)", hovered,
                              short_text(app.token_text(hovered)).c_str(), best, short_text(app.token_text(best)).c_str(),
                              wts[size_t(best)]);
        }
    }
    ImGui::SetCursorScreenPos(ImVec2(start.x, start.y + y + line));
    ImGui::Dummy(ImVec2(0, 0));
}

// The selected head's thumbnail (max-pooled on the GPU) and, beside it, its newest query's top
// keys.
static void draw_head_detail(StudioApp& app, int layer, int head) {
    const HeadDetailView d = head_detail(*app.state->probes, layer, head);
    if (!d.has_top && !d.has_thumbnail) return;
    ImGui::Text("layer %d head %d", layer, head);
    if (d.has_thumbnail) {
        const AttentionThumbnail& t = d.thumbnail;
        float hi = 1e-6f;
        for (float x : t.max_prob) hi = std::max(hi, x);
        const float side = std::min(ImGui::GetContentRegionAvail().x * 0.4f, ui_px(200));
        const float cell = side / float(std::max(t.cols, 1));
        const HeatmapHover hv = draw_heatmap("thumbnail", t.max_prob.data(), t.rows, t.cols,
                                             ImVec2(cell * float(t.cols), cell * float(t.rows)), 0.0f, hi);
        if (hv.hovered() && hv.row < t.rows && hv.col < t.cols) {
            const int q0 = t.query_first + hv.row * t.cell, k0 = hv.col * t.cell;
            ImGui::SetTooltip("queries %d..%d \"%s\"...\nkeys %d..%d \"%s\"...\nlargest p %.4f", q0,
                              q0 + t.cell - 1, short_text(app.token_text(q0)).c_str(), k0, k0 + t.cell - 1,
                              short_text(app.token_text(k0)).c_str(), t.at(hv.row, hv.col));
        }
        ImGui::SameLine();
    }
    ImGui::BeginGroup();
    if (d.has_thumbnail)
        ImGui::TextWrapped("thumbnail of the prompt's map, computed on the GPU: each cell the largest p over %d "
                           "queries x %d keys (queries from %d, keys from 0); hover a cell",
                           d.thumbnail.cell, d.thumbnail.cell, d.thumbnail.query_first);
    if (d.has_top) {
        ImGui::Text("query %d \"%s\" attends most to:", d.query_pos, short_text(app.token_text(d.query_pos)).c_str());
        for (const auto& [k, p] : d.top)
            ImGui::BulletText("%d \"%s\"  %.3f", k, short_text(app.token_text(k)).c_str(), p);
    }
    ImGui::EndGroup();
}

// Models whose maps do not fit the probe budget: the layer x head overview from the GPU's
// summaries (entropy, first-token mass or mean distance per cell) and the selected layer's table.
static void draw_summary_overview(StudioApp& app) {
    const AttentionView& v = app.vm.attention;
    static int metric = 0;  // 0 entropy, 1 first-token mass, 2 mean distance
    ImGui::TextWrapped("This model's full maps would not fit the probe budget (ProbeConfig::max_bytes); the overview shows "
                       "each head's statistics, computed on the GPU over the conversation's %d query rows.",
                       v.layers.front().n_query);
    ImGui::RadioButton("entropy", &metric, 0);
    ImGui::SameLine();
    ImGui::RadioButton("first-token mass", &metric, 1);
    ImGui::SameLine();
    ImGui::RadioButton("mean distance", &metric, 2);
    int n_head = 0;
    for (const AttentionLayerView& l : v.layers) n_head = std::max(n_head, l.n_head);
    std::vector<float> grid(v.layers.size() * size_t(n_head), 0.0f);
    float hi = 1e-6f;
    for (size_t i = 0; i < v.layers.size(); ++i)
        for (const HeadStats& st : v.layers[i].heads) {
            const float x = metric == 0 ? st.entropy : metric == 1 ? st.first_token_mass : st.mean_distance;
            grid[i * size_t(n_head) + size_t(st.head)] = x;
            hi = std::max(hi, x);
        }
    if (metric == 1) hi = 1.0f;
    static const char* const kMetric[] = {"entropy (nats)", "first-token mass", "mean distance (positions)"};
    // Rows are layers ("L12" beside each row where a line fits, the number every few rows
    // otherwise), columns heads (numbered below where they fit); both follow the zoom.
    MapLabels labels;
    labels.row = [&v](int i) { return "L" + std::to_string(v.layers[size_t(i)].layer); };
    labels.row_number = [&v](int i) { return v.layers[size_t(i)].layer; };
    labels.col = [](int i) { return std::to_string(i); };
    labels.row_margin = ImGui::CalcTextSize("layer").x + ui_px(8);
    const float avail = ImGui::GetContentRegionAvail().x - labels.row_margin;
    const float cell = std::clamp((avail - ui_px(8)) / float(std::max(n_head, 1)), ui_px(4), ui_px(28));
    const float cell_h = std::clamp(cell, ui_px(6), ui_px(20));
    map_axis_titles("layer", "head", labels.row_margin);
    const HeatmapHover hv = draw_heatmap("summary", grid.data(), int(v.layers.size()), n_head,
                                         ImVec2(cell * float(n_head), cell_h * float(v.layers.size())), 0.0f, hi,
                                         nullptr, labels);
    if (hv.hovered() && hv.row < int(v.layers.size())) {
        const AttentionLayerView& l = v.layers[size_t(hv.row)];
        if (hv.col < int(l.heads.size())) {
            const HeadStats& st = l.heads[size_t(hv.col)];
            const float x = grid[size_t(hv.row) * size_t(n_head) + size_t(hv.col)];
            ImGui::SetTooltip("layer %d head %d (%s)\n%s: %.3f\n\nentropy %.3f nats\nfirst-token mass %.3f\n"
                              "mean distance %.1f\n(click: select this head)",
                              l.layer, st.head, l.kind.c_str(), kMetric[metric], x, st.entropy, st.first_token_mass,
                              st.mean_distance);
        }
        if (ImGui::IsItemClicked()) app.sel_layer = l.layer, app.sel_head = hv.col;
    }
    char hi_text[32];
    std::snprintf(hi_text, sizeof hi_text, "%.3g", hi);
    ramp_legend(kMetric[metric], "0", hi_text);
    app.sel_layer = std::clamp(app.sel_layer, 0, int(v.layers.size()) - 1);
    const AttentionLayerView& l = v.layers[size_t(app.sel_layer)];
    draw_head_detail(app, l.layer, std::clamp(app.sel_head, 0, std::max(l.n_head - 1, 0)));
    ImGui::Text("layer %d (%s): %d heads", l.layer, l.kind.c_str(), l.n_head);
    if (begin_data_table("summary_heads", 4, int(l.heads.size()), 12)) {
        ImGui::TableSetupColumn("head");
        ImGui::TableSetupColumn("entropy");
        ImGui::TableSetupColumn("first-token mass");
        ImGui::TableSetupColumn("mean distance");
        ImGui::TableHeadersRow();
        for (const HeadStats& st : l.heads) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (ImGui::Selectable(std::to_string(st.head).c_str(), st.head == app.sel_head,
                                  ImGuiSelectableFlags_SpanAllColumns))
                app.sel_head = st.head;
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", st.entropy);
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", st.first_token_mass);
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", st.mean_distance);
        }
        end_data_table();
    }
}

// The bias ALiBi adds to the selected head's logits, -m * |query - key|, on the map's axes and
// zoom code, with its own legend (0 on the diagonal down to the farthest key's bias).
namespace {
bool g_show_alibi = false;
}  // namespace

static void draw_alibi_bias(StudioApp& app, const AttentionHistory& a, float slope, ImVec2 size, const MapLabels& labels) {
    static std::vector<float> bias;
    static std::tuple<const AttentionHistory*, uint64_t, float> key{};
    const auto now = std::make_tuple(&a, app.state->version, slope);
    if (now != key) bias = alibi_bias_map(a.query_pos, a.n_key, slope, a.causal), key = now;
    int far = 0;  // the largest distance a row sees
    for (int q : a.query_pos) far = std::max({far, q, a.causal ? 0 : a.n_key - 1 - q});
    const float lo = -slope * float(std::max(far, 1));
    const HeatmapHover hv = draw_heatmap("alibi", bias.data(), int(a.query_pos.size()), a.n_key, size, lo, 0.0f, nullptr, labels);
    if (hv.hovered()) {
        const int q = a.query_pos[size_t(hv.row)], k = hv.col;
        if (a.causal && k > q)
            ImGui::SetTooltip("query %d, key %d: after the query (masked)", q, k);
        else
            ImGui::SetTooltip("query %d \"%s\", key %d \"%s\"\nbias -m * |%d - %d| = %.4g\n(added to the logit before the softmax)",
                              q, short_text(app.token_text(q)).c_str(), k, short_text(app.token_text(k)).c_str(), q, k,
                              double(bias[size_t(hv.row) * size_t(a.n_key) + size_t(k)]));
    }
    ImGui::TextDisabled("ALiBi bias of layer %d head %d; rows: queries, columns: keys; keys after a query are masked",
                        a.layer, app.sel_head);
    char lo_text[32];
    std::snprintf(lo_text, sizeof lo_text, "%.3g", double(lo));
    ramp_legend("bias -m|q-k|", lo_text, "0");
}

void draw_attention_panel(StudioApp& app) {
    if (!begin_panel(app, PanelAttention)) {
        end_panel();
        return;
    }
    const WorkerState& s = *app.state;
    const ProbeHistory& h = *s.probes;
    if (h.attention.empty() && !app.vm.attention.layers.empty()) {
        draw_summary_overview(app);
        end_panel();
        return;
    }
    if (h.attention.empty() || h.attention.front().query_pos.empty()) {
        ImGui::TextDisabled("Send a message: the attention maps of every layer appear here while it answers.");
        end_panel();
        return;
    }
    ImGui::Checkbox("log scale", &app.settings.log_scale);
    const bool log_scale = app.settings.log_scale;
    const float lo = log_scale ? -4.0f : 0.0f, hi = log_scale ? 0.0f : 1.0f;
    app.sel_layer = std::clamp(app.sel_layer, 0, int(h.attention.size()) - 1);
    const AttentionHistory* sel = nullptr;
    for (const AttentionHistory& a : h.attention)
        if (a.layer == app.sel_layer) sel = &a;
    if (!sel) sel = &h.attention.front();
    app.sel_head = std::clamp(app.sel_head, 0, sel->n_head - 1);
    ImGui::SameLine();
    ImGui::Text("| layer %d head %d | %d queries x %d keys", sel->layer, app.sel_head, int(sel->query_pos.size()), sel->n_key);

    // Left: the grid of small maps; right: the selected head large.
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const int n_head_max = std::max_element(h.attention.begin(), h.attention.end(), [](const auto& a, const auto& b) {
                               return a.n_head < b.n_head;
                           })->n_head;
    const float thumb =
        std::clamp((avail_w * 0.42f - ui_px(70)) / float(std::max(n_head_max, 1)) - 4.0f, ui_px(14), ui_px(64));
    ImGui::BeginChild("grid", ImVec2(ui_px(70) + (thumb + 4) * float(n_head_max), 0), false);
    for (const AttentionHistory& a : h.attention) {
        const AttentionLayerView* lv = nullptr;
        for (const AttentionLayerView& l : app.vm.attention.layers)
            if (l.layer == a.layer) lv = &l;
        ImGui::PushID(a.layer);
        const bool global = a.window <= 0 && a.chunk <= 0;
        ImGui::BeginGroup();
        ImGui::TextColored(readable(global ? ImVec4(1, 0.8f, 0.3f, 1) : ImVec4(0.5f, 0.85f, 0.6f, 1)), "L%d", a.layer);
        ImGui::TextDisabled(global ? "global" : "w %d", a.window > 0 ? a.window : a.chunk);
        ImGui::EndGroup();
        ImGui::SameLine(ui_px(62));
        for (int head = 0; head < a.n_head; ++head) {
            ImGui::PushID(head);
            const std::vector<float>& m = g_cache.get(a, head, log_scale, s.version);
            const bool selected = a.layer == sel->layer && head == app.sel_head;
            const ImVec2 p = ImGui::GetCursorScreenPos();
            draw_heatmap("thumb", m.data(), int(a.query_pos.size()), a.n_key, ImVec2(thumb, thumb), lo, hi);
            if (ImGui::IsItemClicked()) app.sel_layer = a.layer, app.sel_head = head;
            if (ImGui::IsItemHovered() && lv && head < int(lv->heads.size())) {
                const HeadStats& st = lv->heads[size_t(head)];
                ImGui::SetTooltip("layer %d head %d\nentropy %.2f nats\nfirst-token mass %.3f\nmean distance %.1f", a.layer,
                                  head, st.entropy, st.first_token_mass, st.mean_distance);
            }
            if (selected)
                ImGui::GetWindowDrawList()->AddRect(p, ImVec2(p.x + thumb, p.y + thumb), IM_COL32(255, 80, 80, 255), 0, 0, 2);
            ImGui::SameLine(0, 4);
            ImGui::PopID();
        }
        ImGui::NewLine();
        ImGui::PopID();
    }
    ImGui::EndChild();
    ImGui::SameLine();

    ImGui::BeginChild("large", ImVec2(0, 0), false);
    ImGui::PushTextWrapPos(0.0f);
    const int nq = int(sel->query_pos.size()), nk = sel->n_key;
    // The map's width leaves room for the row labels (heatmap.h) and the sink column.
    const float side = std::max(64.0f, std::min(ImGui::GetContentRegionAvail().x - ui_px(72) - (sel->has_sinks ? 24 : 0),
                                                ImGui::GetContentRegionAvail().y * 0.62f));
    const std::vector<float>& m = g_cache.get(*sel, app.sel_head, log_scale, s.version);
    const float map_h = side * std::min(1.0f, float(nq) / float(std::max(nk, 1)) * 1.0f + 0.0f);
    const int window = sel->window;
    const std::vector<int>& qpos = sel->query_pos;
    const MapLabels token_labels{[&](int q) { return app.token_text(qpos[size_t(q)]); },
                                 [&](int k) { return app.token_text(k); }, [&](int q) { return qpos[size_t(q)]; }};
    // ALiBi: the head's slope in its caption, and a toggle that draws the bias it adds in place
    // of the map (a script's "zoom alibi ..." shows it too).
    const float slope = s.info ? alibi_slope(*s.info, sel->layer, app.sel_head) : 0.0f;
    if (map_zoom_pending("alibi")) g_show_alibi = true;
    if (slope > 0) {
        ImGui::TextWrapped("head %d: ALiBi slope m = %.6g", app.sel_head, slope);
        // Beside the caption where the line has room, under it otherwise.
        const float box = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("show the bias").x;
        const float caption = ImGui::CalcTextSize("head 00: ALiBi slope m = 0.000000").x + ImGui::GetStyle().ItemSpacing.x;
        if (ImGui::GetContentRegionAvail().x >= caption + box) ImGui::SameLine(caption);
        ImGui::Checkbox("show the bias", &g_show_alibi);
    }
    if (slope > 0 && g_show_alibi) {
        draw_alibi_bias(app, *sel, slope, ImVec2(side, std::max(map_h, 32.0f)), token_labels);
    } else {
        HeatmapHover hv = draw_heatmap("big", m.data(), nq, nk, ImVec2(side, std::max(map_h, 32.0f)), lo, hi,
                                       [&](ImDrawList* dl, ImVec2 o, ImVec2 cell) {
                                           // The sliding window's edge: key = query - window + 1.
                                           if (window > 0) {
                                               for (int q = 0; q < nq; ++q) {
                                                   const float x = o.x + float(std::max(qpos[size_t(q)] - window + 1, 0)) * cell.x;
                                                   dl->AddLine(ImVec2(x, o.y + float(q) * cell.y),
                                                               ImVec2(x, o.y + float(q + 1) * cell.y),
                                                               IM_COL32(255, 120, 60, 220), 1.5f);
                                               }
                                           }
                                           if (app.picked_key >= 0 && app.picked_key < nk) {
                                               const float x = o.x + (float(app.picked_key) + 0.5f) * cell.x;
                                               dl->AddLine(ImVec2(x, o.y), ImVec2(x, o.y + float(nq) * cell.y),
                                                           IM_COL32(255, 60, 60, 160), 1.0f);
                                           }
                                       },
                                       token_labels);
        if (hv.hovered()) {
            cell_tooltip(app, *sel, app.sel_head, hv.row, hv.col);
            if (ImGui::IsItemClicked()) app.picked_key = hv.col;
        }
        if (sel->has_sinks) {
            // Learned sinks: one column of their own beside the map.
            ImGui::SameLine(0, 6);
            std::vector<float> col(static_cast<size_t>(nq));
            for (int q = 0; q < nq; ++q) {
                const float p = sel->sink_at(app.sel_head, q);
                col[size_t(q)] = log_scale ? std::log10(std::max(p, 1e-6f)) : p;
            }
            draw_heatmap("sink", col.data(), nq, 1, ImVec2(ui_px(14), std::max(map_h, 32.0f)), lo, hi);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("learned sink mass per query row");
        }
        ImGui::TextDisabled("%s%s layer%s; rows: queries, columns: keys", sel->causal ? "" : "bidirectional ",
                            window > 0 ? "sliding-window" : "global", window > 0 ? " (orange line: the window's edge)" : "");
        if (log_scale) ramp_legend("p", "1e-4", "1");
        else ramp_legend("p", "0", "1");
    }
    if (!sel->causal) ImGui::TextDisabled("an encoder's map: every query attends to the keys after it too");
    if (g_linked.open) ImGui::SetNextItemOpen(true), g_linked.open = false;
    if (ImGui::CollapsingHeader("Linked text view")) draw_linked_text(app, *sel);

    // Per-head statistics of the selected layer.
    for (const AttentionLayerView& l : app.vm.attention.layers) {
        if (l.layer != sel->layer) continue;
        if (begin_data_table("heads", l.sinks ? 5 : 4, int(l.heads.size()), 8)) {
            ImGui::TableSetupColumn("head");
            ImGui::TableSetupColumn("entropy");
            ImGui::TableSetupColumn("first-token mass");
            ImGui::TableSetupColumn("mean distance");
            if (l.sinks) ImGui::TableSetupColumn("sink mass");
            ImGui::TableHeadersRow();
            for (const HeadStats& st : l.heads) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                if (ImGui::Selectable(std::to_string(st.head).c_str(), st.head == app.sel_head,
                                      ImGuiSelectableFlags_SpanAllColumns))
                    app.sel_head = st.head;
                ImGui::TableNextColumn();
                ImGui::Text("%.3f", st.entropy);
                ImGui::TableNextColumn();
                ImGui::Text("%.3f", st.first_token_mass);
                ImGui::TableNextColumn();
                ImGui::Text("%.2f", st.mean_distance);
                if (l.sinks) {
                    ImGui::TableNextColumn();
                    ImGui::Text("%.3f", st.sink_mass);
                }
            }
            end_data_table();
        }
    }

    // What attends to the picked token, across layers and heads.
    const int key = app.picked_key >= 0 ? app.picked_key : app.hover_pos;
    if (key >= 0 && key < nk) {
        ImGui::Text("attention to token %d \"%s\" (mean over later queries), layers x heads:", key,
                    short_text(app.token_text(key)).c_str());
        const std::vector<std::vector<float>> to = attention_to_key(h, key);
        int heads = 0;
        for (const auto& r : to) heads = std::max(heads, int(r.size()));
        std::vector<float> grid(to.size() * size_t(heads), 0.0f);
        for (size_t l = 0; l < to.size(); ++l)
            for (size_t hh = 0; hh < to[l].size(); ++hh) grid[l * size_t(heads) + hh] = to[l][hh];
        HeatmapHover g = draw_heatmap("tokey", grid.data(), int(to.size()), heads,
                                      ImVec2(std::min(18.0f * float(heads), ImGui::GetContentRegionAvail().x), 14.0f * float(to.size())),
                                      0.0f, 1.0f);
        if (g.hovered())
            ImGui::SetTooltip("layer %d head %d: %.3f", h.attention[size_t(g.row)].layer, g.col,
                              grid[size_t(g.row) * size_t(heads) + size_t(g.col)]);
        if (app.picked_key >= 0 && ImGui::SmallButton("clear pick")) app.picked_key = -1;
    } else {
        ImGui::TextDisabled("Click a key in the map (or hover a token in the chat) to see what attends to it.");
    }
    ImGui::PopTextWrapPos();
    ImGui::EndChild();
    end_panel();
}

}  // namespace vkllm::studio
