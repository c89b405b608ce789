// Reference matmul, embedding lookup and argmax over (possibly quantized) ggml-layout weights.
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"

namespace vkllm::cpu {

namespace {

void check_weight(const WeightView& w, const char* op) {
    if (!w.data) throw ShapeError(std::string(op) + ": weight data is null");
    if (w.n_in <= 0 || w.n_out <= 0)
        throw ShapeError(std::string(op) + ": weight dims {" + std::to_string(w.n_in) + ", " +
                         std::to_string(w.n_out) + "} must be positive");
}

// Elements per partial sum for weights whose dot llama.cpp's CPU backend accumulates in float a
// block at a time, or 0 to sum the whole row in double. IQ4_NL: its x86 gemm (the repacked
// iq4_nl_8x8) adds each 32-block's integer dot times d_w d_x to a float accumulator with an fma,
// so its sum is rounded to float after every block; with activations rounded to Q8_0 each
// block's dot is exact in double, so rounding the running sum after each block gives llama.cpp's
// value. Summed exactly over the row instead, the iq4_nl golden put an activation of the next
// layer on the other side of its 8-bit rounding (0.042 from llama.cpp's logits at one position).
int float_sum_block(gguf::TensorType t) { return t == gguf::TensorType::IQ4_NL ? 32 : 0; }

// Row . x, as llama.cpp's CPU backend sums it for weights of type t (float_sum_block).
float row_dot(gguf::TensorType t, const float* row, const float* x, int64_t n, const float* bias) {
    const int block = float_sum_block(t);
    if (block == 0) {
        double acc = 0.0;
        for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(row[i]) * x[i];
        if (bias) acc += *bias;
        return static_cast<float>(acc);
    }
    float acc = 0.0f;
    for (int64_t b = 0; b < n; b += block) {
        double p = 0.0;
        for (int64_t i = b; i < b + block; ++i) p += static_cast<double>(row[i]) * x[i];
        acc = static_cast<float>(static_cast<double>(acc) + p);
    }
    return bias ? acc + *bias : acc;
}

}  // namespace

size_t weight_row_bytes(const WeightView& w) {
    auto traits = gguf::type_traits(w.type);
    if (!traits || !traits->dequantizable)
        throw ShapeError("weight of tensor type " + std::to_string(static_cast<uint32_t>(w.type)) +
                         (traits ? std::string(" (") + traits->name + ")" : std::string()) +
                         " cannot be dequantized on the CPU");
    if (w.n_in % traits->block_size != 0)
        throw ShapeError(std::string("weight row length ") + std::to_string(w.n_in) + " is not a multiple of the " +
                         traits->name + " block size " + std::to_string(traits->block_size));
    return static_cast<size_t>(w.n_in / traits->block_size) * traits->type_size;
}

void dequantize_weight_row(const WeightView& w, int64_t row, float* dst) {
    check_weight(w, "dequantize_weight_row");
    if (row < 0 || row >= w.n_out)
        throw ShapeError("dequantize_weight_row: row " + std::to_string(row) + " outside [0, " +
                         std::to_string(w.n_out) + ")");
    const size_t row_bytes = weight_row_bytes(w);
    gguf::dequantize_row(w.type, w.data + static_cast<size_t>(row) * row_bytes, dst, static_cast<size_t>(w.n_in));
}

void matmul(const WeightView& w, const float* x, float* y, int64_t n_tokens, const float* bias) {
    check_weight(w, "matmul");
    if (n_tokens < 0) throw ShapeError("matmul: negative n_tokens");
    std::vector<float> row(static_cast<size_t>(w.n_in));  // [n_in] one dequantized weight row
    for (int64_t o = 0; o < w.n_out; ++o) {
        dequantize_weight_row(w, o, row.data());
        for (int64_t t = 0; t < n_tokens; ++t) {
            y[t * w.n_out + o] = row_dot(w.type, row.data(), x + t * w.n_in, w.n_in, bias ? bias + o : nullptr);
        }
    }
}

void matmul_transposed(const WeightView& w, const float* x, float* y, int64_t n_tokens) {
    check_weight(w, "matmul_transposed");
    if (n_tokens < 0) throw ShapeError("matmul_transposed: negative n_tokens");
    std::vector<double> acc(static_cast<size_t>(n_tokens * w.n_in), 0.0);
    std::vector<float> row(static_cast<size_t>(w.n_in));  // [n_in] one dequantized weight row
    for (int64_t o = 0; o < w.n_out; ++o) {
        dequantize_weight_row(w, o, row.data());
        for (int64_t t = 0; t < n_tokens; ++t) {
            const double xo = x[t * w.n_out + o];
            for (int64_t i = 0; i < w.n_in; ++i) acc[static_cast<size_t>(t * w.n_in + i)] += row[i] * xo;
        }
    }
    for (size_t i = 0; i < acc.size(); ++i) y[i] = static_cast<float>(acc[i]);
}

void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out) {
    check_weight(table, "get_rows");
    for (int64_t t = 0; t < n; ++t) {
        if (ids[t] < 0 || ids[t] >= table.n_out)
            throw ShapeError("get_rows: id " + std::to_string(ids[t]) + " at index " + std::to_string(t) +
                             " is outside the table's " + std::to_string(table.n_out) + " rows");
        dequantize_weight_row(table, ids[t], out + t * table.n_in);
    }
}

int64_t argmax(const float* x, int64_t n) {
    if (n <= 0) throw ShapeError("argmax: empty input");
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) continue;
        if (best < 0 || x[i] > x[best]) best = i;  // strict: the first maximum wins
    }
    return best < 0 ? 0 : best;
}

}  // namespace vkllm::cpu
