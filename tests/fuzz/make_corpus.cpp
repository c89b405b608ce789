// Writes the fuzzer's seed corpus: a few tiny valid GGUF files covering every metadata type,
// nested arrays, every tensor type the CPU decodes, a custom alignment, and version 2.
// Usage: fuzz_gguf_make_corpus OUT_DIR
#include <cstdio>
#include <cstring>
#include <string>

#include "gguf/gguf.h"
#include "gguf/quant.h"

using namespace vkllm::gguf;

namespace {

std::vector<float> ramp(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * float(int(i * 37 % 101) - 50) / 50.0f;
    return v;
}

void add_quantized(Writer& w, const std::string& name, TensorType t, std::vector<uint64_t> dims) {
    size_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<float> x = ramp(n, 1.5f);
    w.add_tensor(name, t, std::move(dims), quantize(t, x.data(), n));
}

Value scalar(ValueType t, uint64_t u, int64_t i, double f) {
    Value v;
    v.type = t, v.u = u, v.i = i, v.f = f;
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];

    Writer empty;
    empty.write(dir + "/empty_v3.gguf");

    // The same small file as version 2 (identical layout, only the version field differs).
    Writer small;
    small.set("general.architecture", Value::from_string("llama"));
    small.add_tensor_f32("w", {8}, ramp(8, 1.0f));
    std::vector<uint8_t> v2 = small.to_bytes();
    v2[4] = 2;
    if (FILE* f = std::fopen((dir + "/small_v2.gguf").c_str(), "wb")) {
        std::fwrite(v2.data(), 1, v2.size(), f);
        std::fclose(f);
    }

    Writer llama;
    llama.set("general.architecture", Value::from_string("llama"));
    llama.set("general.name", Value::from_string("tiny"));
    llama.set("general.file_type", Value::from_u32(7));
    llama.set("llama.context_length", Value::from_u32(128));
    llama.set("llama.embedding_length", Value::from_u32(32));
    llama.set("llama.block_count", Value::from_u32(1));
    llama.set("llama.feed_forward_length", Value::from_u32(64));
    llama.set("llama.attention.head_count", Value::from_u32(4));
    llama.set("llama.attention.head_count_kv", Value::from_u32(2));
    llama.set("llama.rope.freq_base", Value::from_f32(10000.0f));
    llama.set("llama.attention.layer_norm_rms_epsilon", Value::from_f32(1e-5f));
    llama.set("tokenizer.ggml.model", Value::from_string("llama"));
    llama.set("tokenizer.ggml.tokens", Value::from_strings({"<unk>", "<s>", "</s>", "a", "b"}));
    llama.set("tokenizer.ggml.scores", Value::from_f32s({0, 0, 0, -1, -2}));
    llama.set("tokenizer.ggml.token_type", Value::from_i32s({2, 3, 3, 1, 1}));
    llama.set("tokenizer.ggml.bos_token_id", Value::from_u32(1));
    llama.add_tensor_f32("token_embd.weight", {32, 5}, ramp(160, 0.5f));
    llama.add_tensor_f32("blk.0.attn_norm.weight", {32}, ramp(32, 1.0f));
    add_quantized(llama, "blk.0.attn_q.weight", TensorType::Q8_0, {32, 4});
    add_quantized(llama, "blk.0.ffn_down.weight", TensorType::F16, {8, 4});
    llama.write(dir + "/llama_tiny.gguf");

    Writer meta;
    meta.set("u8", scalar(ValueType::UINT8, 200, 0, 0));
    meta.set("i8", scalar(ValueType::INT8, 0, -5, 0));
    meta.set("u16", scalar(ValueType::UINT16, 60000, 0, 0));
    meta.set("i16", scalar(ValueType::INT16, 0, -300, 0));
    meta.set("u32", Value::from_u32(1u << 31));
    meta.set("i32", Value::from_i32(-7));
    meta.set("f32", Value::from_f32(0.25f));
    meta.set("bool", Value::from_bool(true));
    meta.set("str", Value::from_string("text"));
    meta.set("u64", Value::from_u64(uint64_t(1) << 40));
    meta.set("i64", scalar(ValueType::INT64, 0, -(int64_t(1) << 40), 0));
    meta.set("f64", scalar(ValueType::FLOAT64, 0, 0, 2.5));
    Value inner = Value::from_strings({"x", "y"});
    Value outer;
    outer.type = ValueType::ARRAY, outer.elem_type = ValueType::ARRAY, outer.arr = {inner, inner};
    meta.set("nested", outer);
    meta.set("empty", Value::from_i32s({}));
    meta.write(dir + "/every_value_type.gguf");

    Writer quants;  // one block of every type the CPU decodes
    for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                         TensorType::MXFP4, TensorType::BF16, TensorType::F16})
        add_quantized(quants, std::string(type_traits(t)->name), t, {32});
    quants.write(dir + "/block32_types.gguf");

    Writer kquants;
    kquants.set("general.alignment", Value::from_u32(64));
    for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
        add_quantized(kquants, std::string(type_traits(t)->name), t, {256});
    kquants.write(dir + "/kquants_align64.gguf");
    return 0;
}
