// Checks of a session's probe results against the CPU reference forward (vkllm_reference) of the
// same tokens: attention maps, residual-stream statistics and tensors, ffn_down's statistics (dense
// layers, shared and routed experts) and routing. Each names the layer, head or expert that
// differs. Used by tests/model/test_probes_reference.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "model/spec.h"
#include "probe_test.h"
#include "reference/reference_forward.h"
#include "vkllm/session.h"

namespace vkllm::test {

struct RowStats {
    float max_abs = 0, median_abs = 0;
    size_t row = 0;
    int col = 0;
};
// Straightforward statistics of rows of n values (the probes' oracle).
inline RowStats stats_of(const std::vector<float>& v, int n) {
    RowStats e;
    std::vector<float> mags;
    for (size_t i = 0; i < v.size(); ++i) {
        mags.push_back(std::fabs(v[i]));
        if (mags[i] > e.max_abs) {
            e.max_abs = mags[i];
            e.row = i / size_t(n);
            e.col = int(i % size_t(n));
        }
    }
    std::sort(mags.begin(), mags.end());
    e.median_abs = mags[mags.size() / 2];
    return e;
}

// Every map of the eval against the reference's probabilities (1e-4), the masked keys exactly 0,
// each row plus its sink 1.
inline void expect_maps_match(const ProbeResults& r, const model::ReferenceForward& ref, const model::ModelSpec& spec) {
    ASSERT_EQ(r.attention.size(), ref.attention.size());
    for (const AttentionMap& m : r.attention) {
        const int H = m.n_head, nq = m.n_query(), nk = m.n_key();
        const std::vector<float>& pr = ref.attention.at(m.layer);
        ASSERT_EQ(pr.size(), size_t(nq) * size_t(H) * size_t(nk)) << "layer " << m.layer;
        const int window = spec.layers[size_t(m.layer)].attn.window;
        EXPECT_EQ(m.window, window);
        EXPECT_EQ(m.sink.empty(), ref.attention_sink.count(m.layer) == 0);
        for (int q = 0; q < nq; ++q)
            for (int h = 0; h < H; ++h) {
                double sum = m.sink.empty() ? 0.0 : m.sink[size_t(h) * size_t(nq) + size_t(q)];
                for (int k = 0; k < nk; ++k) {
                    const float p = m.at(h, q, k);
                    sum += p;
                    const int qp = m.query_pos[size_t(q)], kp = m.key_pos[size_t(k)];
                    if (kp > qp || (window > 0 && kp <= qp - window)) {
                        ASSERT_EQ(p, 0.0f) << "layer " << m.layer << " q " << qp << " k " << kp;
                    }
                    ASSERT_NEAR(p, pr[(size_t(q) * size_t(H) + size_t(h)) * size_t(nk) + size_t(k)], 1e-4)
                        << "layer " << m.layer << " head " << h << " query " << qp << " key " << kp;
                }
                EXPECT_NEAR(sum, 1.0, 1e-5) << "layer " << m.layer << " head " << h << " query " << q;
            }
    }
}

// Residual statistics of every layer (and after the embeddings) and the whole tensors asked for,
// over the reference's residual stream of the same tokens (positions 0..).
inline void expect_residual_matches(const ProbeResults& r, const model::ReferenceForward& ref, int E) {
    ASSERT_EQ(r.residual.size(), ref.residual.size());
    for (const ResidualStat& s : r.residual) {
        const std::vector<float>& x = ref.residual[size_t(s.layer + 1)];
        const size_t T = x.size() / size_t(E);
        const RowStats e = stats_of(x, E);
        EXPECT_NEAR(s.max_abs, e.max_abs, 1e-4 * e.max_abs) << "layer " << s.layer;
        EXPECT_EQ(s.token, int(e.row)) << "layer " << s.layer;
        EXPECT_EQ(s.channel, e.col) << "layer " << s.layer;
        EXPECT_NEAR(s.median_abs, e.median_abs, 1e-3 * e.median_abs + 1e-6);
        ASSERT_EQ(s.token_max_abs.size(), T);
        for (size_t t = 0; t < T; ++t) {
            const RowStats et = stats_of(std::vector<float>(x.begin() + long(t) * E, x.begin() + long(t + 1) * E), E);
            EXPECT_NEAR(s.token_max_abs[t], et.max_abs, 1e-4 * et.max_abs);
            EXPECT_EQ(s.token_channel[t], et.col) << "layer " << s.layer << " token " << t;
        }
        for (const ResidualEntry& te : s.top)
            EXPECT_NEAR(te.value, x[size_t(te.token) * size_t(E) + size_t(te.channel)], 1e-4 * e.max_abs);
    }
    for (const ResidualTensor& t : r.residual_full)
        EXPECT_LT(rel_diff(t.values, ref.residual[size_t(t.layer + 1)]), 1e-5) << "layer " << t.layer;
}

// ffn_down's (input, output) statistics: dense layers and shared experts (expert -1) over every
// token, each routed expert over the (token, slot) pairs the reference routed to it.
inline void expect_ffn_down_matches(const ProbeResults& r, const model::ReferenceForward& ref, const model::ModelSpec& spec) {
    const int E = spec.n_embd;
    size_t expected = 0;
    for (int l = 0; l < spec.n_layer; ++l) {
        expected += ref.ffn_in[size_t(l)].empty() ? 0 : 1;
        if (ref.routing.count(l)) {
            const auto& ex = ref.routing.at(l).experts;
            expected += std::set<int32_t>(ex.begin(), ex.end()).size();
        }
    }
    ASSERT_EQ(r.ffn_down.size(), expected);
    for (const FfnDownStat& f : r.ffn_down) {
        const size_t l = size_t(f.layer);
        std::vector<float> in, out;
        std::vector<int> token;  // of each row
        if (f.expert < 0) {
            in = ref.ffn_in[l];
            out = ref.ffn_out[l];
            for (size_t t = 0; t < out.size() / size_t(E); ++t) token.push_back(int(t));
        } else {
            const auto& route = ref.routing.at(f.layer);
            const size_t n_ff = ref.expert_in[l].size() / route.experts.size();
            for (size_t p = 0; p < route.experts.size(); ++p) {
                if (route.experts[p] != f.expert) continue;
                in.insert(in.end(), ref.expert_in[l].begin() + long(p * n_ff), ref.expert_in[l].begin() + long((p + 1) * n_ff));
                out.insert(out.end(), ref.expert_out[l].begin() + long(p * size_t(E)),
                           ref.expert_out[l].begin() + long((p + 1) * size_t(E)));
                token.push_back(int(p / size_t(route.top_k)));
            }
        }
        ASSERT_FALSE(token.empty()) << "layer " << f.layer << " expert " << f.expert;
        const RowStats ei = stats_of(in, int(in.size() / token.size())), eo = stats_of(out, E);
        const std::string where = "layer " + std::to_string(f.layer) + " expert " + std::to_string(f.expert);
        EXPECT_NEAR(f.in_max_abs, ei.max_abs, 1e-4 * ei.max_abs) << where;
        EXPECT_EQ(f.in_token, token[ei.row]) << where;
        EXPECT_EQ(f.in_channel, ei.col) << where;
        EXPECT_NEAR(f.in_median_abs, ei.median_abs, 1e-3 * ei.median_abs + 1e-7) << where;
        EXPECT_NEAR(f.out_max_abs, eo.max_abs, 1e-4 * eo.max_abs) << where;
        EXPECT_EQ(f.out_token, token[eo.row]) << where;
        EXPECT_EQ(f.out_channel, eo.col) << where;
        EXPECT_NEAR(f.out_median_abs, eo.median_abs, 1e-3 * eo.median_abs + 1e-7) << where;
    }
}

// Each token's chosen experts (exactly) and gate weights.
inline void expect_routing_matches(const ProbeResults& r, const model::ReferenceForward& ref) {
    ASSERT_EQ(r.routing.size(), ref.routing.size());
    for (const RoutingProbe& rp : r.routing) {
        const auto& want = ref.routing.at(rp.layer);
        EXPECT_EQ(rp.top_k, want.top_k);
        EXPECT_EQ(rp.experts, want.experts) << "layer " << rp.layer;
        ASSERT_EQ(rp.weights.size(), want.weights.size());
        for (size_t p = 0; p < rp.weights.size(); ++p)
            EXPECT_NEAR(rp.weights[p], want.weights[p], 1e-5) << "layer " << rp.layer << " pair " << p;
    }
}

}  // namespace vkllm::test
