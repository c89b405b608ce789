// Weight interventions (Model::weight, set_weight, restore_weights, weight_edits): the GPU
// forward after an edit against the CPU reference forward on a GGUF written with the same edit,
// on F32, Q8_0 and Q4_0 weights, expert tensors, MLA per-head tensors (each zoo family) and fused
// tensors; only the edited block's bytes change on the GPU, and restore_weights() gives back the
// very same logits.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "gpu/device.h"
#include "gpu_test.h"
#include "model/model_internal.h"
#include "reference/reference_forward.h"
#include "random_model/random_model.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

std::string file_name(const WeightRef& w) {
    return (w.layer >= 0 ? "blk." + std::to_string(w.layer) + "." : std::string()) + w.tensor + ".weight";
}

// Where one element lies in a file tensor: the block holding it.
struct BlockPlace {
    const gguf::TensorInfo* tensor = nullptr;
    int64_t file_row = 0;   // expert tensors: expert * rows + row
    uint64_t offset = 0;    // of the block in the tensor's bytes
    uint32_t n_bytes = 0, n_elements = 0, index = 0;
};

BlockPlace place(const gguf::File& f, const WeightRef& w) {
    BlockPlace p;
    p.tensor = f.find_tensor(file_name(w));
    EXPECT_NE(p.tensor, nullptr) << file_name(w);
    if (!p.tensor) throw std::runtime_error("no tensor " + file_name(w));
    const gguf::TypeTraits traits = *gguf::type_traits(p.tensor->type);
    p.file_row = (w.expert >= 0 ? int64_t(w.expert) * int64_t(p.tensor->dims[1]) : 0) + w.row;
    p.offset = uint64_t(p.file_row) * gguf::row_size(p.tensor->type, p.tensor->dims[0]) +
               uint64_t(w.col / traits.block_size) * traits.type_size;
    p.n_bytes = traits.type_size;
    p.n_elements = traits.block_size;
    p.index = uint32_t(w.col % traits.block_size);
    return p;
}

float element(const BlockPlace& p, const uint8_t* tensor_bytes) {
    std::vector<float> v(p.n_elements);
    gguf::dequantize_row(p.tensor->type, tensor_bytes + p.offset, v.data(), p.n_elements);
    return v[p.index];
}

// Sets the element in a copy of the tensor's bytes as an edit must: decode its block, set,
// encode the block again.
void set_element(const BlockPlace& p, std::vector<uint8_t>& tensor_bytes, float value) {
    std::vector<float> v(p.n_elements);
    gguf::dequantize_row(p.tensor->type, tensor_bytes.data() + p.offset, v.data(), p.n_elements);
    v[p.index] = value;
    gguf::quantize_row(p.tensor->type, v.data(), tensor_bytes.data() + p.offset, p.n_elements);
}

using Edits = std::vector<std::pair<WeightRef, float>>;

// `f` again, with the edits applied in order to its tensors' bytes (everything else as it was).
std::vector<uint8_t> edited_image(const gguf::File& f, const Edits& edits) {
    gguf::Writer w;
    for (const std::string& key : f.keys_in_order()) w.set(key, *f.find(key));
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
        for (const auto& [ref, value] : edits)
            if (file_name(ref) == t.name) set_element(place(f, ref), bytes, value);
        w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
    }
    return w.to_bytes();
}

std::unique_ptr<gguf::File> edited_copy(const gguf::File& f, const Edits& edits) {
    std::vector<uint8_t> image = edited_image(f, edits);
    return gguf::File::from_memory(image.data(), image.size(), f.path() + " (edited)");
}

// The GPU buffer holding a file row of a tensor, and the byte offset of that row in it.
std::pair<const gpu::Buffer*, uint64_t> gpu_row(const Model& m, const WeightRef& w, int64_t file_row) {
    const model::UploadedMatrix* u = m.internals().weights().uploaded(file_name(w));
    EXPECT_NE(u, nullptr);
    for (const model::UploadedPart& part : u->parts)
        if (file_row >= part.first_row && file_row < part.first_row + part.n_rows)
            return {part.buffer,
                    part.offset + uint64_t(file_row - part.first_row) * gguf::row_size(u->type, size_t(u->n_in))};
    ADD_FAILURE() << "row " << file_row << " of " << file_name(w) << " is on no GPU buffer";
    return {nullptr, 0};
}

std::vector<uint8_t> download(const gpu::Buffer& b) {
    std::vector<uint8_t> bytes(b.size());
    b.download(bytes.data(), bytes.size());
    return bytes;
}

class WeightEditTest : public test::GpuTest {
protected:
    // Applies `edits` to `model` and checks each element's old and new value, the GPU bytes
    // (only the edited blocks change), the logits against the CPU reference forward on an edited
    // copy of the file, and that restore_weights() undoes it all.
    enum class Oracle { CpuReference, ReloadedFile };
    void check_edits(Model& model, const Edits& edits, Oracle oracle = Oracle::CpuReference) {
        const gguf::File& file = model.internals().file();
        const std::vector<int32_t> prompt = model.tokenize("Once upon a time, Tom saw a big dog", true);
        SessionOptions so;
        so.kv_cache = KvCacheType::F32;  // exact, as the reference forward keeps K/V
        so.n_ctx = 64;
        so.llama_cpp_rounding = false;  // exact f32 on both sides
        Session session(model, so);
        const std::vector<float> before = session.eval(prompt, true);

        // The GPU bytes of every buffer an edit touches, before, and where each edited block is.
        struct GpuBlock {
            const gpu::Buffer* buffer;
            uint64_t offset;
            BlockPlace place;
        };
        std::vector<std::pair<const gpu::Buffer*, std::vector<uint8_t>>> buffers;
        std::vector<GpuBlock> blocks;
        for (const auto& [ref, value] : edits) {
            const BlockPlace p = place(file, ref);
            auto [buffer, row_offset] = gpu_row(model, ref, p.file_row);
            ASSERT_NE(buffer, nullptr);
            const uint64_t row_start = uint64_t(p.file_row) * gguf::row_size(p.tensor->type, p.tensor->dims[0]);
            blocks.push_back({buffer, row_offset + (p.offset - row_start), p});
            bool seen = false;
            for (const auto& b : buffers) seen = seen || b.first == buffer;
            if (!seen) buffers.push_back({buffer, download(*buffer)});
        }

        // Apply, checking each old value (what the file holds, or an earlier edit's result) and
        // the value read back (exact for F32; the re-encoded block's value when quantised).
        std::map<std::string, std::vector<uint8_t>> tensors;  // edited tensors' expected bytes so far
        for (const auto& [ref, value] : edits) {
            const BlockPlace p = place(file, ref);
            auto it = tensors.find(p.tensor->name);
            if (it == tensors.end())
                it = tensors.emplace(p.tensor->name, std::vector<uint8_t>(p.tensor->data, p.tensor->data + p.tensor->n_bytes)).first;
            std::vector<uint8_t>& bytes = it->second;
            const float old = element(p, bytes.data());
            EXPECT_EQ(model.weight(ref), old) << file_name(ref);
            EXPECT_EQ(model.set_weight(ref, value), old) << file_name(ref);
            set_element(p, bytes, value);
            const float now = element(p, bytes.data());
            if (p.tensor->type == gguf::TensorType::F32) {
                EXPECT_EQ(now, value);
            }
            EXPECT_EQ(model.weight(ref), now) << file_name(ref);
        }
        EXPECT_FALSE(model.weight_edits().empty());

        // Only the edited blocks' bytes moved, and they hold what the edited file holds.
        auto copy = edited_copy(file, edits);
        for (const auto& [buffer, old_bytes] : buffers) {
            const std::vector<uint8_t> now = download(*buffer);
            ASSERT_EQ(now.size(), old_bytes.size());
            size_t changed_outside = 0;
            for (size_t i = 0; i < now.size(); ++i) {
                bool inside = false;
                for (const GpuBlock& b : blocks)
                    inside = inside || (b.buffer == buffer && i >= b.offset && i < b.offset + b.place.n_bytes);
                if (!inside && now[i] != old_bytes[i]) ++changed_outside;
            }
            EXPECT_EQ(changed_outside, 0u);
            for (const GpuBlock& b : blocks) {
                if (b.buffer != buffer) continue;
                const uint8_t* want = copy->find_tensor(b.place.tensor->name)->data + b.place.offset;
                EXPECT_EQ(std::vector<uint8_t>(now.begin() + long(b.offset), now.begin() + long(b.offset + b.place.n_bytes)),
                          std::vector<uint8_t>(want, want + b.place.n_bytes))
                    << b.place.tensor->name << " row " << b.place.file_row;
            }
        }

        // The GPU forward with the edits against the CPU reference forward on the edited file,
        // or (layouts the reference does not walk: fused tensors) against the same GPU forward of
        // the edited file loaded as a model of its own (identical bytes on the GPU: identical logits).
        session.reset();
        const std::vector<float> after = session.eval(prompt, true);
        if (oracle == Oracle::CpuReference) {
            model::ReferenceForward ref(*copy, model.internals().spec(), so.n_ctx, /*round_activations=*/false);
            EXPECT_LT(test::nmse(after, ref.eval(prompt)), 1e-8);
        } else {
            std::vector<uint8_t> image = edited_image(file, edits);
            auto reloaded = Model::load_from_memory(image.data(), image.size(), "edited copy");
            Session fresh(*reloaded, so);
            EXPECT_EQ(after, fresh.eval(prompt, true));
        }
        EXPECT_GT(test::nmse(after, before), 1e-6) << "the edit should move the logits";

        // Restore: the file's bytes and the same logits, bit for bit.
        model.restore_weights();
        EXPECT_TRUE(model.weight_edits().empty());
        for (const auto& [buffer, old_bytes] : buffers) EXPECT_EQ(download(*buffer), old_bytes);
        for (const auto& [ref, value] : edits) EXPECT_EQ(model.weight(ref), element(place(file, ref), place(file, ref).tensor->data));
        session.reset();
        EXPECT_EQ(session.eval(prompt, true), before);
    }
};

TEST_F(WeightEditTest, F32EditFollowsTheReferenceAndRestores) {
    auto model = Model::load(zoo("zoo-dense"));
    check_edits(*model, {{{1, "ffn_down", 5, 17, -1}, 6.0f}});
    check_edits(*model, {{{0, "attn_q", 3, 40, -1}, -4.5f}, {{1, "attn_output", 60, 2, -1}, 3.25f}});
}

TEST_F(WeightEditTest, TokenEmbeddingEditOutsideTheLayers) {
    auto model = Model::load(zoo("zoo-dense"));
    const int32_t tom = model->tokenize("Once upon a time, Tom saw a big dog", true)[2];
    check_edits(*model, {{{-1, "token_embd", tom, 7, -1}, 5.0f}});
}

// zoo-dense rewritten in a quantised type, loaded from memory.
std::unique_ptr<Model> quantized_zoo_dense(gguf::TensorType type) {
    auto f32 = gguf::File::open(zoo("zoo-dense"));
    std::vector<uint8_t> image = gguf::requantize(*f32, type).writer.to_bytes();
    return Model::load_from_memory(image.data(), image.size(), "zoo-dense-" + std::string(gguf::type_traits(type)->name));
}

TEST_F(WeightEditTest, Q8_0BlockIsReencoded) {
    auto model = quantized_zoo_dense(gguf::TensorType::Q8_0);
    ASSERT_EQ(model->internals().file().find_tensor("blk.1.ffn_down.weight")->type, gguf::TensorType::Q8_0);
    check_edits(*model, {{{1, "ffn_down", 5, 17, -1}, 6.0f}});
    // Several edits of one block (cols 32..63 are one Q8_0 block), one element twice: restore
    // must give the bytes from before the first.
    check_edits(*model, {{{0, "ffn_up", 9, 40, -1}, 2.0f}, {{0, "ffn_up", 9, 41, -1}, -3.0f}, {{0, "ffn_up", 9, 40, -1}, 0.5f}});
}

TEST_F(WeightEditTest, Q4_0BlockIsReencoded) {
    auto model = quantized_zoo_dense(gguf::TensorType::Q4_0);
    ASSERT_EQ(model->internals().file().find_tensor("blk.0.attn_v.weight")->type, gguf::TensorType::Q4_0);
    check_edits(*model, {{{0, "attn_v", 7, 70, -1}, -5.0f}, {{1, "ffn_gate", 100, 3, -1}, 4.0f}});
}

// K-quants: blocks of 256 elements with their own sub-block scales (a random Llama whose rows
// are 256 and 512 long).
TEST_F(WeightEditTest, Q4_KBlockOf256IsReencoded) {
    random_model::RandomModelConfig c;
    c.seed = 11;
    c.n_embd = 256;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_ff = 512;
    c.n_layer = 2;
    c.type = gguf::TensorType::Q4_K;
    auto vocab = gguf::File::open(zoo("zoo-dense"));
    std::vector<uint8_t> image = random_model::build_random_model(c, *vocab).to_bytes();
    auto model = Model::load_from_memory(image.data(), image.size(), "random-llama-q4_k");
    ASSERT_EQ(model->internals().file().find_tensor("blk.0.ffn_down.weight")->type, gguf::TensorType::Q4_K);
    check_edits(*model, {{{0, "ffn_down", 100, 300, -1}, 3.0f}, {{1, "attn_q", 5, 7, -1}, -2.0f}});
}

TEST_F(WeightEditTest, EditsAreListedOncePerElementInOrder) {
    auto model = quantized_zoo_dense(gguf::TensorType::Q8_0);
    const WeightRef a{0, "ffn_up", 9, 40, -1}, b{1, "attn_k", 2, 3, -1};
    model->set_weight(a, 1.0f);
    model->set_weight(b, 1.0f);
    model->set_weight(a, 2.0f);
    const std::vector<WeightRef> edits = model->weight_edits();
    ASSERT_EQ(edits.size(), 2u);
    EXPECT_EQ(edits[0].tensor, "ffn_up");
    EXPECT_EQ(edits[0].col, 40);
    EXPECT_EQ(edits[1].tensor, "attn_k");
    EXPECT_EQ(edits[1].layer, 1);
    model->restore_weights();
    EXPECT_TRUE(model->weight_edits().empty());
}

// zoo-moe: the same element of every expert's ffn_down (so the prompt's routing surely sees
// one), and the router.
TEST_F(WeightEditTest, ExpertTensorsAreAddressedByExpert) {
    auto model = Model::load(zoo("zoo-moe"));
    const int n_expert = model->info().layers[1].ffn.n_expert;
    ASSERT_GT(n_expert, 1);
    Edits edits;
    for (int e = 0; e < n_expert; ++e) edits.push_back({{1, "ffn_down_exps", 11, 20, e}, 4.0f + float(e)});
    check_edits(*model, edits);
    check_edits(*model, {{{0, "ffn_gate_inp", 2, 30, -1}, 9.0f}});
}

// zoo-moe rewritten in Q8_0: an expert's block re-encoded, against the reference.
TEST_F(WeightEditTest, QuantisedExpertBlockFollowsTheReference) {
    auto f32 = gguf::File::open(zoo("zoo-moe"));
    std::vector<uint8_t> image = gguf::requantize(*f32, gguf::TensorType::Q8_0).writer.to_bytes();
    auto model = Model::load_from_memory(image.data(), image.size(), "zoo-moe-q8_0");
    ASSERT_EQ(model->internals().file().find_tensor("blk.1.ffn_up_exps.weight")->type, gguf::TensorType::Q8_0);
    const int n_expert = model->info().layers[1].ffn.n_expert;
    Edits edits;
    for (int e = 0; e < n_expert; ++e) edits.push_back({{1, "ffn_up_exps", 7, 33, e}, -5.0f});
    check_edits(*model, edits);
}

// zoo-swa (Gemma 3): a sliding-window layer's query and a global layer's FFN.
TEST_F(WeightEditTest, SlidingWindowModelFollowsTheReference) {
    auto model = Model::load(zoo("zoo-swa"));
    const model::ModelSpec& spec = model->internals().spec();
    int local = -1, global = -1;
    for (int l = 0; l < spec.n_layer; ++l) (spec.layers[size_t(l)].attn.window > 0 ? local : global) = l;
    ASSERT_GE(local, 0);
    ASSERT_GE(global, 0);
    check_edits(*model, {{{local, "attn_q", 4, 9, -1}, 5.0f}, {{global, "ffn_down", 3, 12, -1}, -6.0f}});
}

// Fused tensors (Phi-3: attn_qkv and ffn_up = [gate; up]) are split on upload: a file row maps
// into its part.
TEST_F(WeightEditTest, FusedTensorRowsMapIntoTheirParts) {
    random_model::RandomModelConfig c;
    c.arch = "phi3";
    c.seed = 7;
    c.n_embd = 64;
    c.n_head = 4;
    c.n_head_kv = 4;
    c.n_ff = 96;
    c.n_layer = 2;
    auto vocab = gguf::File::open(zoo("zoo-dense"));
    std::vector<uint8_t> image = random_model::build_random_model(c, *vocab).to_bytes();
    auto model = Model::load_from_memory(image.data(), image.size(), "random-phi3");
    ASSERT_TRUE(model->info().layers[0].attention.fused_qkv);
    // attn_qkv rows: q 0..63, k 64..127, v 128..191; ffn_up rows: gate 0..95, up 96..191.
    check_edits(*model, {{{0, "attn_qkv", 10, 5, -1}, 3.0f}, {{0, "attn_qkv", 70, 6, -1}, -3.0f},
                         {{1, "attn_qkv", 150, 7, -1}, 5.0f}}, Oracle::ReloadedFile);
    check_edits(*model, {{{0, "ffn_up", 20, 1, -1}, 4.0f}, {{1, "ffn_up", 120, 2, -1}, -4.0f}}, Oracle::ReloadedFile);
}

TEST_F(WeightEditTest, MlaPerHeadTensorsAreAddressedByHead) {
    auto model = Model::load(zoo("zoo-mla"));
    const model::ModelSpec& spec = model->internals().spec();
    int layer = -1;
    for (int l = 0; l < spec.n_layer && layer < 0; ++l)
        if (model->internals().weights().uploaded("blk." + std::to_string(l) + ".attn_k_b.weight")) layer = l;
    ASSERT_GE(layer, 0);
    check_edits(*model, {{{layer, "attn_k_b", 1, 2, 0}, 3.0f}, {{layer, "attn_v_b", 2, 1, 1}, -3.0f}});
    check_edits(*model, {{{layer, "attn_kv_a_mqa", 3, 5, -1}, 4.0f}});
}

TEST_F(WeightEditTest, BadReferencesAreClearErrors) {
    auto model = Model::load(zoo("zoo-dense"));
    const ModelInfo& info = model->info();
    auto message = [&](const WeightRef& w, float value = 1.0f) -> std::string {
        try {
            model->set_weight(w, value);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        ADD_FAILURE() << "no std::invalid_argument for " << w.tensor;
        return "";
    };
    EXPECT_NE(message({0, "attn_qq", 0, 0, -1}).find("no weight matrix 'attn_qq'"), std::string::npos);
    EXPECT_NE(message({0, "attn_qq", 0, 0, -1}).find("attn_q"), std::string::npos);  // lists the editable ones
    EXPECT_NE(message({0, "attn_norm", 0, 0, -1}).find("attn_norm"), std::string::npos);
    EXPECT_NE(message({info.n_layer, "attn_q", 0, 0, -1}).find("layer " + std::to_string(info.n_layer)),
              std::string::npos);
    EXPECT_NE(message({-2, "attn_q", 0, 0, -1}).find("out of range"), std::string::npos);
    EXPECT_NE(message({0, "attn_q", info.n_embd, 0, -1}).find("row is out of range"), std::string::npos);
    EXPECT_NE(message({0, "attn_q", -1, 0, -1}).find("row is out of range"), std::string::npos);
    EXPECT_NE(message({1, "ffn_down", 0, info.layers[1].ffn.n_ff, -1}).find("col is out of range"), std::string::npos);
    EXPECT_NE(message({0, "ffn_up", 0, 0, 2}).find("not an expert tensor"), std::string::npos);
    EXPECT_NE(message({0, "attn_q", 0, 0, -1}, NAN).find("finite"), std::string::npos);
    EXPECT_NE(message({-1, "output_norm", 0, 0, -1}).find("token_embd"), std::string::npos);
    EXPECT_THROW(model->weight({0, "attn_q", 0, -3, -1}), std::invalid_argument);
    EXPECT_TRUE(model->weight_edits().empty());

    auto moe = Model::load(zoo("zoo-moe"));
    const int n_expert = moe->info().layers[0].ffn.n_expert;
    EXPECT_THROW(moe->set_weight({0, "ffn_down_exps", 0, 0, -1}, 1.0f), std::invalid_argument);
    EXPECT_THROW(moe->set_weight({0, "ffn_down_exps", 0, 0, n_expert}, 1.0f), std::invalid_argument);
    EXPECT_TRUE(moe->weight_edits().empty());
}

}  // namespace
}  // namespace vkllm
