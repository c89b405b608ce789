// Mixture-of-experts ops against the CPU reference: moe_route vs cpu::route (router kinds, ties,
// k = 1 and k = n_expert, groups, sigmoid + bias), moe_sort vs a stable counting sort, the grouped
// expert matmul vs cpu::matmul per expert on the same bytes (every weight type, both paths, binding
// windows, workgroup-count limits), the weighted combine, the load probe, and the whole MoE FFN
// (route -> sort -> gate/up -> swiglu -> down -> weighted sum) vs a CPU composition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "op_test_data.h"
#include "test_support.h"

namespace vkllm {
namespace {

using gguf::TensorType;

using test::download;
using test::upload;

// ---------------------------------------------------------------------------------------------
// Routing

struct RouteCase {
    const char* name;
    int n_expert, top_k;
    cpu::RouterParams::Gating gating = cpu::RouterParams::Softmax;
    bool norm_topk = false, bias = false, softmax_after_topk = false;
    int n_group = 1, topk_group = 1;
    float weights_scale = 1.0f;
};

const RouteCase kRouteCases[] = {
    {"softmax 8/2 (OLMoE)", 8, 2},
    {"softmax 64/8 norm (Qwen3)", 64, 8, cpu::RouterParams::Softmax, true},
    {"softmax after top-k 8/2 (Mixtral)", 8, 2, cpu::RouterParams::Softmax, false, false, true},
    {"softmax after top-k 32/4 norm (gpt-oss)", 32, 4, cpu::RouterParams::Softmax, true, false, true},
    {"k = 1", 16, 1},
    {"k = n_expert 8", 8, 8, cpu::RouterParams::Softmax, true},
    {"k = n_expert 64 sigmoid", 64, 64, cpu::RouterParams::Sigmoid},
    {"sigmoid + bias, groups 8/4 (DeepSeek V3 small)", 64, 8, cpu::RouterParams::Sigmoid, true, true, false, 8, 4, 2.5f},
    {"sigmoid + bias, groups 8/4, 256 experts (DeepSeek V3)", 256, 8, cpu::RouterParams::Sigmoid, true, true, false, 8, 4, 2.5f},
    {"softmax groups 8/3 scale 16 (DeepSeek V2)", 64, 6, cpu::RouterParams::Softmax, false, false, false, 8, 3, 16.0f},
    {"one expert per group", 8, 2, cpu::RouterParams::Softmax, false, false, false, 8, 3},
    {"60 experts (not a power of two)", 60, 4, cpu::RouterParams::Softmax, true},
    {"sigmoid, scale 0 means 1", 16, 3, cpu::RouterParams::Sigmoid, true, false, false, 1, 1, 0.0f},
};

cpu::RouterParams cpu_params(const RouteCase& c, const float* bias) {
    cpu::RouterParams p;
    p.n_expert = c.n_expert;
    p.top_k = c.top_k;
    p.gating = c.gating;
    p.norm_topk = c.norm_topk;
    p.selection_bias = c.bias ? bias : nullptr;
    p.n_group = c.n_group;
    p.topk_group = c.topk_group;
    p.weights_scale = c.weights_scale;
    p.softmax_after_topk = c.softmax_after_topk;
    return p;
}

// The same rule (core/router.h) with the bias on the GPU.
ops::RouterParams gpu_params(const RouteCase& c, const gpu::Buffer* bias) {
    ops::RouterParams p;
    static_cast<RouterRule&>(p) = cpu_params(c, nullptr);
    p.selection_bias = c.bias ? bias : nullptr;
    return p;
}

// Routes `logits` on the GPU (at an element offset) and on the CPU; experts must agree exactly.
void check_route(gpu::Context& ctx, const RouteCase& c, const std::vector<float>& logits, int64_t n_tokens,
                 const std::vector<float>& bias, const std::string& what) {
    const size_t n_out = size_t(n_tokens * c.top_k);
    std::vector<int32_t> ref_e(n_out);
    std::vector<float> ref_w(n_out);
    const cpu::RouterParams cp = cpu_params(c, bias.data());
    cpu::route(logits.data(), n_tokens, cp, ref_e.data(), ref_w.data());

    std::vector<float> shifted(3, 99.0f);  // logits at offset 3
    shifted.insert(shifted.end(), logits.begin(), logits.end());
    gpu::Buffer lb = upload(ctx, shifted), bb = upload(ctx, bias);
    gpu::Buffer eb(ctx, n_out * 4, gpu::Memory::Device), wb(ctx, n_out * 4, gpu::Memory::Device);
    gpu::Stream s(ctx);
    s.begin();
    ops::moe_route(s, ops::f32_rows(lb, n_tokens, c.n_expert, 3), gpu_params(c, &bb), ops::i32_rows(eb, n_tokens, c.top_k),
                   ops::f32_rows(wb, n_tokens, c.top_k));
    s.submit_and_wait();
    EXPECT_EQ(download<int32_t>(eb, n_out), ref_e) << what;
    const auto got_w = download<float>(wb, n_out);
    EXPECT_LT(test::nmse(got_w, ref_w), 1e-11) << what;
    EXPECT_LT(test::max_abs_diff(got_w, ref_w), 1e-5) << what;
}

class MoeRoute : public test::GpuTest {};

TEST_F(MoeRoute, MatchesReferenceForEveryRouterKind) {
    for (const RouteCase& c : kRouteCases) {
        for (int64_t n_tokens : {1, 3, 17}) {
            const auto logits = test::random_floats(size_t(n_tokens * c.n_expert), uint32_t(n_tokens + c.n_expert), -3, 3);
            const auto bias = test::random_floats(size_t(c.n_expert), 7, -0.5f, 0.5f);
            check_route(ctx(), c, logits, n_tokens, bias, std::string(c.name) + ", " + std::to_string(n_tokens) + " tokens");
        }
    }
}

// Logits from a few integer values tie often (and whole rows tie); bias values tie too. Equal
// scores, and equal group scores, go to the lower index.
TEST_F(MoeRoute, TiesGoToTheLowerIndex) {
    for (const RouteCase& c : kRouteCases) {
        const int64_t n_tokens = 9;
        std::mt19937 rng(uint32_t(c.n_expert * 31 + c.top_k));
        std::vector<float> logits(size_t(n_tokens * c.n_expert));
        for (auto& v : logits) v = float(int(rng() % 3)) - 1.0f;
        std::fill(logits.begin(), logits.begin() + c.n_expert, 0.5f);  // token 0: one tie over all
        std::vector<float> bias(size_t(c.n_expert));
        for (auto& v : bias) v = 0.25f * float(int(rng() % 2));
        check_route(ctx(), c, logits, n_tokens, bias, std::string(c.name) + ", tied logits");
    }
    // A row of equal logits picks the first experts, in order.
    RouteCase c{"all equal", 64, 8};
    std::vector<float> logits(64, 1.0f);
    std::vector<int32_t> ref_e(8);
    std::vector<float> ref_w(8);
    cpu::route(logits.data(), 1, cpu_params(c, nullptr), ref_e.data(), ref_w.data());
    std::vector<int32_t> first(8);
    std::iota(first.begin(), first.end(), 0);
    ASSERT_EQ(ref_e, first);
    check_route(ctx(), c, logits, 1, {}, "all equal");
}

TEST_F(MoeRoute, RejectsBadParameters) {
    gpu::Buffer b(ctx(), 1024, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    auto route = [&](int n_expert, int top_k, int n_group, int topk_group) {
        ops::RouterParams p;
        p.n_expert = n_expert;
        p.top_k = top_k;
        p.n_group = n_group;
        p.topk_group = topk_group;
        ops::moe_route(s, ops::f32_rows(b, 2, n_expert), p, ops::i32_rows(b, 2, top_k), ops::f32_rows(b, 2, top_k));
    };
    EXPECT_THROW(route(8, 0, 1, 1), ops::ShapeError);
    EXPECT_THROW(route(8, 9, 1, 1), ops::ShapeError);
    EXPECT_THROW(route(ops::kMaxExperts + 1, 2, 1, 1), ops::ShapeError);
    EXPECT_THROW(route(12, 2, 5, 2), ops::ShapeError);  // 12 experts in 5 groups
    EXPECT_THROW(route(16, 5, 4, 1), ops::ShapeError);  // 5 from one group of 4
    EXPECT_THROW(route(256, 8, 1, 1), ops::ShapeError);  // logits do not fit the buffer
    s.submit_and_wait();
}

// ---------------------------------------------------------------------------------------------
// Sort

// Expert ids of n_tokens tokens, top_k distinct each, drawn from the experts e with e % 5 != 3
// (so some experts receive no pair).
std::vector<int32_t> random_routing(int64_t n_tokens, int top_k, int n_expert, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> pool;
    for (int e = 0; e < n_expert; ++e)
        if (e % 5 != 3 || n_expert - n_expert / 5 < top_k) pool.push_back(e);
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::shuffle(pool.begin(), pool.end(), rng);
        ids.insert(ids.end(), pool.begin(), pool.begin() + top_k);
    }
    return ids;
}

class MoeSort : public test::GpuTest {};

TEST_F(MoeSort, GroupsPairsByExpertInPairOrder) {
    struct Case {
        int n_expert;
        int64_t n_tokens;
        int top_k;
        bool invalid_ids;
    };
    for (const Case c : {Case{8, 1, 2, false}, Case{8, 17, 2, false}, Case{64, 17, 8, false},
                         Case{256, 90, 8, false}, Case{64, 0, 8, false}, Case{16, 40, 3, true}}) {
        std::vector<int32_t> ids = random_routing(c.n_tokens, c.top_k, c.n_expert, uint32_t(c.n_expert + c.n_tokens));
        if (c.invalid_ids) ids[5] = -1, ids[17] = c.n_expert, ids[30] = 1 << 20;  // left out of the sort
        const int64_t n_pairs = int64_t(ids.size());
        // Reference: a stable counting sort.
        std::vector<int32_t> ref(size_t(ops::moe_sort_ints(c.n_expert, n_pairs)), 0);
        int32_t* counts = ref.data();
        int32_t* offsets = counts + c.n_expert;
        int32_t* list = offsets + c.n_expert + 1;
        for (int32_t e : ids)
            if (e >= 0 && e < c.n_expert) ++counts[e];
        for (int e = 0; e < c.n_expert; ++e) offsets[e + 1] = offsets[e] + counts[e];
        std::vector<int32_t> cursor(offsets, offsets + c.n_expert);
        for (int64_t p = 0; p < n_pairs; ++p)
            if (ids[size_t(p)] >= 0 && ids[size_t(p)] < c.n_expert) list[cursor[size_t(ids[size_t(p)])]++] = int32_t(p);
        const size_t valid = size_t(offsets[c.n_expert]);
        ref.resize(size_t(2 * c.n_expert + 1) + valid);

        gpu::Buffer ib = upload(ctx(), ids);
        gpu::Buffer sb(ctx(), ops::moe_sort_ints(c.n_expert, n_pairs) * 4, gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_sort(s, ops::i32_vector(ib, n_pairs), c.n_expert,
                      ops::i32_vector(sb, int64_t(ops::moe_sort_ints(c.n_expert, n_pairs))));
        s.submit_and_wait();
        EXPECT_EQ(download<int32_t>(sb, ref.size()), ref)
            << c.n_expert << " experts, " << c.n_tokens << " tokens, top " << c.top_k;
    }
}

// ---------------------------------------------------------------------------------------------
// Grouped expert matmul

uint32_t block_of(TensorType t) { return gguf::type_traits(t)->block_size; }

// A random 3-D expert tensor {n_in, n_out, n_expert} quantised to `type`, and expert biases.
struct TestExperts {
    TensorType type;
    int64_t n_in, n_out, n_expert;
    std::vector<uint8_t> bytes;
    std::vector<float> bias;  // [n_expert, n_out]
    gpu::Buffer buffer, bias_buffer;

    ops::ExpertWeights gpu(bool with_bias = false) const {
        return {type, &buffer, n_in, n_out, n_expert, with_bias ? &bias_buffer : nullptr};
    }
    cpu::WeightView cpu(int64_t e) const {
        cpu::WeightView all{type, bytes.data(), n_in, n_out * n_expert};
        return {type, bytes.data() + size_t(e * n_out) * cpu::weight_row_bytes(all), n_in, n_out};
    }
};

TestExperts make_experts(gpu::Context& ctx, TensorType type, int64_t n_in, int64_t n_out, int64_t n_expert,
                         uint32_t seed) {
    const auto values = test::random_floats(size_t(n_in * n_out * n_expert), seed);
    TestExperts w{type, n_in, n_out, n_expert, gguf::quantize(type, values.data(), values.size()),
                  test::random_floats(size_t(n_out * n_expert), seed + 1), {}, {}};
    w.buffer = gpu::Buffer(ctx, ops::weight_buffer_bytes(type, n_in, n_out * n_expert), gpu::Memory::Device);
    w.buffer.upload(w.bytes.data(), w.bytes.size());
    w.bias_buffer = upload(ctx, w.bias);
    return w;
}

// y[p] = W_{ids[p]} x[row(p)] (+ bias) per pair on the CPU.
std::vector<float> expert_matmul_ref(const TestExperts& w, const std::vector<float>& x, const std::vector<int32_t>& ids,
                                     int top_k, bool x_per_pair, bool with_bias) {
    std::vector<float> y(ids.size() * size_t(w.n_out));
    for (size_t p = 0; p < ids.size(); ++p) {
        const size_t row = x_per_pair ? p : p / size_t(top_k);
        float* yp = y.data() + p * size_t(w.n_out);
        cpu::matmul(w.cpu(ids[p]), x.data() + row * size_t(w.n_in), yp, 1,
                    with_bias ? w.bias.data() + size_t(ids[p] * w.n_out) : nullptr);
    }
    return y;
}

// Runs moe_matmul (after moe_sort when use_sort) with x and y at offsets in buffers of
// sentinels; checks y against the reference and that nothing outside it changed.
void check_expert_matmul(gpu::Context& ctx, const TestExperts& w, int64_t n_tokens, int top_k, bool x_per_pair,
                         bool use_sort, bool with_bias, double tol = 1e-9) {
    // The fp32 kernels: on a device with NVIDIA's cooperative matrices the tiled path would round
    // to fp16 (test_matmul_coopmat holds that path to its own bound).
    test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");
    const std::vector<int32_t> ids = random_routing(n_tokens, top_k, int(w.n_expert), uint32_t(n_tokens * 3 + top_k));
    const size_t n_pairs = ids.size(), x_rows = x_per_pair ? n_pairs : size_t(n_tokens);
    const auto x = test::random_floats(x_rows * size_t(w.n_in), uint32_t(n_tokens + w.n_in), -2, 2);
    const auto ref = expert_matmul_ref(w, x, ids, top_k, x_per_pair, with_bias);

    const size_t x_off = 1, y_off = 6;
    std::vector<float> x_all(x_off, 5.0f), y_all(y_off + ref.size() + 3, -3.5f);
    x_all.insert(x_all.end(), x.begin(), x.end());
    gpu::Buffer xb = upload(ctx, x_all), yb = upload(ctx, y_all), ib = upload(ctx, ids);
    gpu::Buffer sb(ctx, ops::moe_sort_ints(int(w.n_expert), int64_t(n_pairs)) * 4, gpu::Memory::Device);
    ops::MoeRouting r;
    r.experts = &ib;
    r.sorted = use_sort ? &sb : nullptr;
    r.n_tokens = n_tokens;
    r.top_k = top_k;

    gpu::Stream s(ctx);
    s.begin();
    if (use_sort) {
        ops::moe_sort(s, ops::i32_vector(ib, int64_t(n_pairs)), int(w.n_expert),
                      ops::i32_vector(sb, int64_t(ops::moe_sort_ints(int(w.n_expert), int64_t(n_pairs)))));
        s.barrier("the sorted pairs before the grouped matmul reads them");
    }
    ops::moe_matmul(s, w.gpu(with_bias), ops::f32_rows(xb, int64_t(x_rows), w.n_in, x_off), x_per_pair, r,
                    ops::f32_rows(yb, int64_t(n_pairs), w.n_out, y_off));
    s.submit_and_wait();
    const auto got_all = download<float>(yb, y_all.size());
    const std::vector<float> got(got_all.begin() + y_off, got_all.begin() + long(y_off + ref.size()));
    const std::string what = std::string(gguf::type_traits(w.type)->name) + " " + std::to_string(w.n_expert) +
                             " experts top " + std::to_string(top_k) + ", " + std::to_string(n_tokens) + " tokens" +
                             (x_per_pair ? ", x per pair" : "") + (use_sort ? ", sorted" : ", unsorted") +
                             (with_bias ? ", bias" : "");
    EXPECT_LT(test::nmse(got, ref), tol) << what;
    for (size_t i = 0; i < y_all.size(); ++i)
        if (i < y_off || i >= y_off + ref.size()) {
            ASSERT_EQ(got_all[i], -3.5f) << what << ": y[" << i << "] changed";
        }
}


std::string type_name(const ::testing::TestParamInfo<TensorType>& info) {
    return gguf::type_traits(info.param)->name;
}

// Row lengths: a partial group of 32 for float types, whole blocks otherwise.
int64_t test_n_in(TensorType t) { return block_of(t) == 1 ? 45 : block_of(t) == 32 ? 64 : 256; }

class MoeMatmulType : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {};

// Few tokens take the per-pair matrix-vector path, 17 tokens the tiles (and the matrix-vector
// path again without the sort); inputs per token and per pair; some experts get no pair.
TEST_P(MoeMatmulType, MatchesPerExpertReference) {
    const TensorType type = GetParam();
    for (auto [n_expert, top_k] : {std::pair{8, 2}, std::pair{64, 8}}) {
        const TestExperts w = make_experts(ctx(), type, test_n_in(type), 37, n_expert, uint32_t(n_expert));
        for (int64_t n_tokens : {1, 3, 17}) {
            const bool per_pair = n_tokens == 3;
            check_expert_matmul(ctx(), w, n_tokens, top_k, per_pair, /*use_sort=*/true, /*with_bias=*/n_tokens == 17);
        }
        check_expert_matmul(ctx(), w, 17, top_k, /*x_per_pair=*/true, /*use_sort=*/false, /*with_bias=*/true);
        check_expert_matmul(ctx(), w, 17, top_k, /*x_per_pair=*/true, /*use_sort=*/true, /*with_bias=*/false);
    }
}

// Gate and up experts in one buffer (gate at a nonzero offset, up after it), as the forward
// uploads them for decode.
struct ExpertPair {
    TestExperts gate, up;
    gpu::Buffer buffer;
    uint64_t gate_offset = 256, up_offset = 0;
    ops::ExpertWeights gpu_gate() const { return {gate.type, &buffer, gate.n_in, gate.n_out, gate.n_expert, nullptr, gate_offset}; }
    ops::ExpertWeights gpu_up() const { return {up.type, &buffer, up.n_in, up.n_out, up.n_expert, nullptr, up_offset}; }
};
ExpertPair make_pair(gpu::Context& ctx, TensorType type, int64_t n_in, int64_t n_out, int64_t n_expert) {
    ExpertPair p{make_experts(ctx, type, n_in, n_out, n_expert, 11), make_experts(ctx, type, n_in, n_out, n_expert, 12), {}};
    p.up_offset = (p.gate_offset + p.gate.bytes.size() + 255) / 256 * 256;
    p.buffer = gpu::Buffer(ctx, p.up_offset + ops::weight_buffer_bytes(type, n_in, n_out * n_expert), gpu::Memory::Device);
    p.buffer.upload(p.gate.bytes.data(), p.gate.bytes.size(), p.gate_offset);
    p.buffer.upload(p.up.bytes.data(), p.up.bytes.size(), p.up_offset);
    return p;
}

// Decode's expert FFN input: moe_matvec_swiglu equals moe_matmul of gate and of up and then
// swiglu bit for bit (the same sums in the same order), with exact x and with x rounded in the
// shader; and the shader's rounding (round_x) equals round_activations then a plain moe_matmul.
// Inputs per token and per pair, weights at offsets in a shared buffer (checked against the CPU).
// The types: float rows with a partial group of 32 (F32, F16: also rounded to fp16), a block of 32
// rounded to 8 bits (Q8_0: the rounding is the same code for every such type), a super-block the
// shader cannot round (Q4_K); each type's dot itself is MatchesPerExpertReference's, the same code
// in the fused shader. (Every variant is a cold lavapipe compile of seconds to a minute, so the
// list is kept to what covers the fused shader's paths.)
class MoeSwigluType : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {};

TEST_P(MoeSwigluType, FusedSwigluAndInShaderRoundingMatchTheUnfusedPath) {
    const TensorType type = GetParam();
    const int64_t n_in = test_n_in(type), n_out = 37, n_expert = 8;
    const int top_k = 2;
    const ExpertPair pair = make_pair(ctx(), type, n_in, n_out, n_expert);
    ASSERT_TRUE(ops::moe_matvec_swiglu_fits(ctx(), pair.gpu_gate(), pair.gpu_up()));
    EXPECT_FALSE(ops::moe_matvec_swiglu_fits(ctx(), pair.gpu_up(), pair.gpu_gate()));   // up before gate
    EXPECT_FALSE(ops::moe_matvec_swiglu_fits(ctx(), pair.gate.gpu(), pair.up.gpu()));  // two buffers
    EXPECT_FALSE(ops::moe_matvec_swiglu_fits(ctx(), pair.gate.gpu(true), pair.up.gpu(true)));  // biases
    const bool rounds = ops::matvec_rounds_activations(type);
    for (int64_t n_tokens : {1, 3})
        for (bool x_per_pair : {false, true}) {
            SCOPED_TRACE(std::to_string(n_tokens) + " tokens" + (x_per_pair ? ", x per pair" : ""));
            const std::vector<int32_t> ids = random_routing(n_tokens, top_k, int(n_expert), uint32_t(n_tokens + 7));
            const size_t n_pairs = ids.size(), x_rows = x_per_pair ? n_pairs : size_t(n_tokens);
            auto x = test::random_floats(x_rows * size_t(n_in) + 1, uint32_t(n_in + n_tokens), -2, 2);  // x at offset 1
            x[size_t(1 + n_in / 2)] = 120.0f;
            gpu::Buffer xb = upload(ctx(), x), ib = upload(ctx(), ids);
            ops::MoeRouting r{&ib, nullptr, nullptr, n_tokens, top_k};
            std::vector<float> xs(x.begin() + 1, x.end());
            const auto ref_g = expert_matmul_ref(pair.gate, xs, ids, top_k, x_per_pair, false);
            const auto ref_u = expert_matmul_ref(pair.up, xs, ids, top_k, x_per_pair, false);
            for (bool round_x : {false, true}) {
                if (round_x && !rounds) continue;
                const size_t n = n_pairs * size_t(n_out);
                gpu::Buffer fused(ctx(), (n + 3) * 4, gpu::Memory::Device), g(ctx(), n * 4, gpu::Memory::Device),
                    u(ctx(), n * 4, gpu::Memory::Device);
                gpu::Stream s(ctx());
                s.begin();
                const ops::TensorView xv = ops::f32_rows(xb, int64_t(x_rows), n_in, 1);
                const ops::TensorView gv = ops::f32_rows(g, int64_t(n_pairs), n_out), uv = ops::f32_rows(u, int64_t(n_pairs), n_out);
                ops::moe_matvec_swiglu(s, pair.gpu_gate(), pair.gpu_up(), xv, x_per_pair, r,
                                       ops::f32_rows(fused, int64_t(n_pairs), n_out, 3), round_x);
                ops::moe_matmul(s, pair.gpu_gate(), xv, x_per_pair, r, gv, round_x);
                ops::moe_matmul(s, pair.gpu_up(), xv, x_per_pair, r, uv, round_x);
                s.barrier("gate and up before swiglu");
                ops::swiglu(s, gv, uv, gv);
                s.submit_and_wait();
                const auto all = download<float>(fused, n + 3);
                EXPECT_EQ(std::vector<float>(all.begin() + 3, all.end()), download<float>(g, n))
                    << (round_x ? "rounded x" : "exact x");
                if (!round_x) {
                    std::vector<float> ref(n), got(all.begin() + 3, all.end());
                    for (size_t i = 0; i < n; ++i) ref[i] = ref_g[i] / (1.0f + std::exp(-ref_g[i])) * ref_u[i];
                    EXPECT_LT(test::nmse(got, ref), 1e-7);
                    continue;
                }
                // round_x is round_activations, then the plain expert matvec.
                gpu::Buffer rounded(ctx(), x.size() * 4, gpu::Memory::Device), plain(ctx(), n * 4, gpu::Memory::Device),
                    in_shader(ctx(), n * 4, gpu::Memory::Device);
                s.begin();
                const ops::TensorView rv = ops::f32_rows(rounded, int64_t(x_rows), n_in);
                ops::round_activations(s, xv, rv, ops::activation_rounding(type));
                ops::moe_matmul(s, pair.gpu_gate(), xv, x_per_pair, r, ops::f32_rows(in_shader, int64_t(n_pairs), n_out),
                                /*round_x=*/true);
                s.barrier("rounded x before the plain expert matvec");
                ops::moe_matmul(s, pair.gpu_gate(), rv, x_per_pair, r, ops::f32_rows(plain, int64_t(n_pairs), n_out));
                s.submit_and_wait();
                const auto a = download<float>(in_shader, n), b = download<float>(plain, n);
                for (size_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 1e-6f * (1.0f + std::fabs(b[i]))) << "output " << i;
            }
        }
    if (!rounds) {  // types whose rounding spans threads (Q8_K blocks) refuse it
        gpu::Buffer x(ctx(), size_t(n_in) * 4, gpu::Memory::Device), ids = upload(ctx(), std::vector<int32_t>{0, 1});
        gpu::Buffer y(ctx(), size_t(2 * n_out) * 4, gpu::Memory::Device);
        ops::MoeRouting r{&ids, nullptr, nullptr, 1, 2};
        gpu::Stream s(ctx());
        s.begin();
        EXPECT_THROW(ops::moe_matmul(s, pair.gpu_gate(), ops::f32_rows(x, 1, n_in), false, r, ops::f32_rows(y, 2, n_out), true),
                     ops::ShapeError);
        s.submit_and_wait();
    }
}

INSTANTIATE_TEST_SUITE_P(Types, MoeSwigluType,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_K),
                         type_name);

INSTANTIATE_TEST_SUITE_P(AllTypes, MoeMatmulType, ::testing::ValuesIn(test::kGpuWeightTypes), type_name);

class MoeMatmul : public test::GpuTest {};

// A binding limit below the tensor's size splits it into windows of whole experts; one below an
// expert's size splits each expert into row windows. Both paths.
TEST_F(MoeMatmul, SplitsExpertsOverBindingWindows) {
    const uint64_t align = std::max<uint64_t>(ctx().caps().min_storage_buffer_offset_alignment, 4);
    {
        const TestExperts w = make_experts(ctx(), TensorType::Q4_0, 64, 20, 8, 3);  // 720 bytes per expert
        // Three experts per window; 9 tokens' x (2304 bytes) still fits.
        test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 2600));
        for (int64_t n_tokens : {1, 9}) check_expert_matmul(ctx(), w, n_tokens, 2, false, true, true);
    }
    {
        const TestExperts w = make_experts(ctx(), TensorType::Q6_K, 256, 100, 2, 4);  // 21000 bytes per expert
        // About 58 rows per window; 5 tokens' x (5120 bytes) still fits.
        test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(2 * align + 16 + 3 * 1024 * 4));
        for (int64_t n_tokens : {1, 5}) check_expert_matmul(ctx(), w, n_tokens, 1, false, true, true);
    }
}

// Few workgroups per grid dimension: pairs and tiles go over several dispatches, rows over windows.
TEST_F(MoeMatmul, RespectsWorkgroupCountLimits) {
    const TestExperts w = make_experts(ctx(), TensorType::Q8_0, 64, 150, 8, 5);
    test::ScopedEnv env("VKLLM_MAX_WORKGROUP_COUNT", "3");
    for (int64_t n_tokens : {2, 17}) check_expert_matmul(ctx(), w, n_tokens, 2, false, true, false);
}

TEST_F(MoeMatmul, RejectsActivationsThatDoNotFit) {
    const TestExperts w = make_experts(ctx(), TensorType::F32, 32, 8, 4, 6);
    gpu::Buffer ids = upload(ctx(), std::vector<int32_t>{0, 1, 2, 3}), small(ctx(), 64, gpu::Memory::Device);
    gpu::Buffer big(ctx(), 4096, gpu::Memory::Device);
    ops::MoeRouting r;
    r.experts = &ids;
    r.n_tokens = 2;
    r.top_k = 2;
    gpu::Stream s(ctx());
    s.begin();
    auto expert_matmul = [&](const gpu::Buffer& x, int64_t x_rows, const gpu::Buffer& y, int64_t y_rows,
                             uint64_t y_offset = 0) {
        ops::moe_matmul(s, w.gpu(), ops::f32_rows(x, x_rows, 32), false, r, ops::f32_rows(y, y_rows, 8, y_offset));
    };
    EXPECT_THROW(expert_matmul(small, 2, big, 4), ops::ShapeError);      // x: 2 x 32 floats
    EXPECT_THROW(expert_matmul(big, 2, small, 4), ops::ShapeError);      // y: 4 x 8 floats
    EXPECT_THROW(expert_matmul(big, 2, big, 4, 16), ops::ShapeError);    // overlap
    EXPECT_THROW(expert_matmul(big, 4, big, 4, 512), ops::ShapeError);   // x has a row per pair, not per token
    EXPECT_THROW(expert_matmul(big, 2, big, 2, 512), ops::ShapeError);   // y has a row per token, not per pair
    s.submit_and_wait();
}

// The int8 expert matvecs (Capabilities::integer_dot_matvec) give the float path's results up to
// float summation, for every type that has them; the fused SwiGLU (the same per-type dot over two
// sets of rows) on Q8_0.
TEST_F(MoeMatmul, IntegerDotEqualsTheFloatPath) {
    std::unique_ptr<gpu::Context> int_ctx = test::context_with_integer_dot(1),
                                  float_ctx = test::context_with_integer_dot(0);
    if (!int_ctx->caps().integer_dot_product)
        GTEST_SKIP() << "this device (or VKLLM_LIMITS profile) has no integer dot product";
    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1}) {
        SCOPED_TRACE(gguf::type_traits(type)->name);
        const int64_t n_in = 96, n_out = 21, n_expert = 6;
        auto x = test::random_floats(size_t(2 * n_in), 3, -2, 2);
        const std::vector<int32_t> ids{4, 1, 0, 5};
        auto run = [&](gpu::Context& ctx) {
            const ExpertPair pair = make_pair(ctx, type, n_in, n_out, n_expert);
            gpu::Buffer xb = upload(ctx, x), ib = upload(ctx, ids);
            gpu::Buffer y(ctx, size_t(4 * n_out) * 4, gpu::Memory::Device), glu(ctx, size_t(4 * n_out) * 4, gpu::Memory::Device);
            ops::MoeRouting r{&ib, nullptr, nullptr, 2, 2};
            gpu::Stream s(ctx);
            s.begin();
            const ops::TensorView xv = ops::f32_rows(xb, 2, n_in);
            ops::moe_matmul(s, pair.gpu_gate(), xv, false, r, ops::f32_rows(y, 4, n_out), /*round_x=*/true);
            if (type == TensorType::Q8_0)
                ops::moe_matvec_swiglu(s, pair.gpu_gate(), pair.gpu_up(), xv, false, r, ops::f32_rows(glu, 4, n_out),
                                       /*round_x=*/true);
            s.submit_and_wait();
            return std::make_pair(download<float>(y, size_t(4 * n_out)),
                                  type == TensorType::Q8_0 ? download<float>(glu, size_t(4 * n_out)) : std::vector<float>());
        };
        const auto [yi, gi] = run(*int_ctx);
        const auto [yf, gf] = run(*float_ctx);
        for (size_t i = 0; i < yf.size(); ++i) ASSERT_NEAR(yi[i], yf[i], 2e-6f * (1.0f + std::fabs(yf[i]))) << "output " << i;
        ASSERT_EQ(gi.size(), gf.size());
        for (size_t i = 0; i < gf.size(); ++i) ASSERT_NEAR(gi[i], gf[i], 1e-5f * (1.0f + std::fabs(gf[i]))) << "swiglu output " << i;
    }
}

// ---------------------------------------------------------------------------------------------
// Combine and load probe

class MoeCombine : public test::GpuTest {};

TEST_F(MoeCombine, WeightedSumMatchesReference) {
    for (int64_t n_tokens : {1, 3, 17}) {
        for (int top_k : {1, 2, 8}) {
            for (bool accumulate : {false, true}) {
                const int64_t n = 37;
                const size_t n_pairs = size_t(n_tokens * top_k);
                const auto y = test::random_floats(n_pairs * n, uint32_t(n_tokens + top_k));
                const auto wts = test::random_floats(n_pairs, uint32_t(n_tokens * top_k), 0, 1);
                auto out0 = test::random_floats(size_t(n_tokens * n), 9);
                std::vector<float> ref = accumulate ? out0 : std::vector<float>(out0.size(), 0.0f);
                for (int64_t t = 0; t < n_tokens; ++t)
                    for (int64_t c = 0; c < n; ++c) {
                        float sum = 0.0f;
                        for (int k = 0; k < top_k; ++k)
                            sum += wts[size_t(t * top_k + k)] * y[size_t((t * top_k + k) * n + c)];
                        ref[size_t(t * n + c)] += sum;
                    }
                out0.insert(out0.begin(), 2, 0.0f);  // out at offset 2
                gpu::Buffer yb = upload(ctx(), y), wb = upload(ctx(), wts), ob = upload(ctx(), out0);
                ops::MoeRouting r;
                r.experts = &wb;  // not read by moe_combine
                r.weights = &wb;
                r.n_tokens = n_tokens;
                r.top_k = top_k;
                gpu::Stream s(ctx());
                s.begin();
                ops::moe_combine(s, ops::f32_rows(yb, int64_t(n_pairs), n), r, ops::f32_rows(ob, n_tokens, n, 2), accumulate);
                s.submit_and_wait();
                auto got = download<float>(ob, out0.size());
                got.erase(got.begin(), got.begin() + 2);
                EXPECT_LT(test::nmse(got, ref), 1e-12) << n_tokens << " tokens, top " << top_k;
            }
        }
    }
}

class MoeProbe : public test::GpuTest {};

TEST_F(MoeProbe, CountsPairsAndWeightsPerExpert) {
    for (auto [n_expert, top_k, n_tokens] : {std::tuple{8, 2, 1}, std::tuple{64, 8, 17}, std::tuple{16, 3, 300}}) {
        const auto ids = random_routing(n_tokens, top_k, n_expert, uint32_t(n_tokens));
        const auto wts = test::random_floats(ids.size(), 3, 0, 1);
        std::vector<double> ref(size_t(2 * n_expert), 0.0);
        for (size_t p = 0; p < ids.size(); ++p) {
            ref[size_t(2 * ids[p])] += 1.0;
            ref[size_t(2 * ids[p] + 1)] += wts[p];
        }
        gpu::Buffer ib = upload(ctx(), ids), wb = upload(ctx(), wts), lb(ctx(), 8 * size_t(n_expert), gpu::Memory::Device);
        ops::MoeRouting r;
        r.experts = &ib;
        r.weights = &wb;
        r.n_tokens = n_tokens;
        r.top_k = top_k;
        gpu::Stream s(ctx());
        s.begin();
        ops::moe_expert_load(s, r, ops::f32_rows(lb, n_expert, 2));
        s.barrier("the first probe's values before the second adds to them");
        ops::moe_expert_load(s, r, ops::f32_rows(lb, n_expert, 2), /*accumulate=*/true);  // two steps counted
        s.submit_and_wait();
        const auto got = download<float>(lb, size_t(2 * n_expert));
        for (int e = 0; e < n_expert; ++e) {
            EXPECT_EQ(got[size_t(2 * e)], 2.0 * ref[size_t(2 * e)]) << "expert " << e;
            EXPECT_NEAR(got[size_t(2 * e + 1)], 2.0 * ref[size_t(2 * e + 1)], 1e-4) << "expert " << e;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The whole MoE FFN: route -> sort -> gate, up -> swiglu -> down -> weighted sum into the residual.

class MoeFfn : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {};

TEST_P(MoeFfn, ComposedMatchesCpu) {
    test::ScopedEnv fp32_kernels("VKLLM_COOPMAT", "0");  // its 17-token case: the fp32 expert matmul
    const TensorType type = GetParam();
    const int64_t n_embd = block_of(type) == 256 ? 256 : 64, n_ff = block_of(type) == 256 ? 256 : 96;
    for (const RouteCase& rc : {RouteCase{"Mixtral 8/2", 8, 2, cpu::RouterParams::Softmax, false, false, true},
                                RouteCase{"Qwen3 64/8", 64, 8, cpu::RouterParams::Softmax, true}}) {
        const int n_expert = rc.n_expert, top_k = rc.top_k;
        const TestExperts gate = make_experts(ctx(), type, n_embd, n_ff, n_expert, 11);
        const TestExperts up = make_experts(ctx(), type, n_embd, n_ff, n_expert, 12);
        const TestExperts down = make_experts(ctx(), type, n_ff, n_embd, n_expert, 13);
        for (int64_t n_tokens : {1, 3, 17}) {
            const size_t n_pairs = size_t(n_tokens * top_k);
            const auto x = test::random_floats(size_t(n_tokens * n_embd), uint32_t(n_tokens), -1, 1);
            const auto logits = test::random_floats(size_t(n_tokens * n_expert), uint32_t(n_tokens + 1), -2, 2);
            const auto residual = test::random_floats(size_t(n_tokens * n_embd), uint32_t(n_tokens + 2));

            // CPU composition.
            std::vector<int32_t> ids(n_pairs);
            std::vector<float> wts(n_pairs);
            cpu::route(logits.data(), n_tokens, cpu_params(rc, nullptr), ids.data(), wts.data());
            const auto g = expert_matmul_ref(gate, x, ids, top_k, false, false);
            const auto u = expert_matmul_ref(up, x, ids, top_k, false, false);
            std::vector<float> act(g.size());
            cpu::swiglu(g.data(), u.data(), act.data(), int64_t(n_pairs), n_ff);
            const auto d = expert_matmul_ref(down, act, ids, top_k, true, false);
            std::vector<float> ref = residual;
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int64_t c = 0; c < n_embd; ++c) {
                    float sum = 0.0f;
                    for (int k = 0; k < top_k; ++k)
                        sum += wts[size_t(t * top_k + k)] * d[size_t((t * top_k + k) * n_embd + c)];
                    ref[size_t(t * n_embd + c)] += sum;
                }

            // GPU, one command buffer.
            gpu::Buffer xb = upload(ctx(), x), lb = upload(ctx(), logits), ob = upload(ctx(), residual);
            gpu::Buffer eb(ctx(), n_pairs * 4, gpu::Memory::Device), wb(ctx(), n_pairs * 4, gpu::Memory::Device);
            gpu::Buffer sb(ctx(), ops::moe_sort_ints(n_expert, int64_t(n_pairs)) * 4, gpu::Memory::Device);
            gpu::Buffer gb(ctx(), n_pairs * n_ff * 4, gpu::Memory::Device), ub(ctx(), n_pairs * n_ff * 4, gpu::Memory::Device);
            gpu::Buffer db(ctx(), n_pairs * n_embd * 4, gpu::Memory::Device);
            ops::MoeRouting r{&eb, &wb, &sb, n_tokens, top_k};
            gpu::Stream s(ctx());
            s.begin();
            const int64_t P = int64_t(n_pairs);
            ops::moe_route(s, ops::f32_rows(lb, n_tokens, n_expert), gpu_params(rc, nullptr), ops::i32_rows(eb, n_tokens, top_k),
                           ops::f32_rows(wb, n_tokens, top_k));
            s.barrier("routing before the sort and the expert matmuls");
            ops::moe_sort(s, ops::i32_vector(eb, P), n_expert, ops::i32_vector(sb, int64_t(ops::moe_sort_ints(n_expert, P))));
            s.barrier("sorted pairs before the grouped matmuls");
            const ops::TensorView xv = ops::f32_rows(xb, n_tokens, n_embd);
            const ops::TensorView gv = ops::f32_rows(gb, P, n_ff), uv = ops::f32_rows(ub, P, n_ff);
            const ops::TensorView dv = ops::f32_rows(db, P, n_embd);
            ops::moe_matmul(s, gate.gpu(), xv, false, r, gv);
            ops::moe_matmul(s, up.gpu(), xv, false, r, uv);
            s.barrier("gate and up before swiglu");
            ops::swiglu(s, gv, uv, gv);
            s.barrier("activations before down");
            ops::moe_matmul(s, down.gpu(), gv, true, r, dv);
            s.barrier("expert outputs before the weighted sum");
            ops::moe_combine(s, dv, r, ops::f32_rows(ob, n_tokens, n_embd), /*accumulate=*/true);
            s.submit_and_wait();

            EXPECT_EQ(download<int32_t>(eb, n_pairs), ids) << rc.name << ", " << n_tokens << " tokens";
            EXPECT_LT(test::nmse(download<float>(ob, ref.size()), ref), 1e-9)
                << gguf::type_traits(type)->name << " " << rc.name << ", " << n_tokens << " tokens";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, MoeFfn,
                         ::testing::Values(TensorType::F16, TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                                           TensorType::Q6_K, TensorType::MXFP4),
                         type_name);

}  // namespace
}  // namespace vkllm
