// ops::get_rows (embedding lookup with dequantization) against cpu::get_rows on the same bytes,
// for every weight type the GPU decodes, including tables split into binding windows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
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


std::vector<int64_t> row_lengths(TensorType t) {
    switch (gguf::type_traits(t)->block_size) {
        case 1: return {1, 17, 100};
        case 32: return {32, 96};
        default: return {256, 512};
    }
}

class GetRows : public test::GpuTest, public ::testing::WithParamInterface<TensorType> {
protected:
    // Looks up `ids` in a random table of n_rows x n_in and compares with the reference; ids
    // outside the table must give zero rows.
    void check(int64_t n_in, int64_t n_rows, const std::vector<int32_t>& ids) {
        const TensorType type = GetParam();
        auto values = test::random_floats(size_t(n_in * n_rows), uint32_t(n_in * 3 + n_rows));
        const std::vector<uint8_t> bytes = gguf::quantize(type, values.data(), values.size());
        gpu::Buffer table(ctx(), ops::weight_buffer_bytes(type, n_in, n_rows), gpu::Memory::Device);
        table.upload(bytes.data(), bytes.size());

        const int64_t n = int64_t(ids.size());
        std::vector<float> ref(size_t(n * n_in), 0.0f);
        const cpu::WeightView view{type, bytes.data(), n_in, n_rows};
        for (int64_t t = 0; t < n; ++t)
            if (ids[size_t(t)] >= 0 && ids[size_t(t)] < n_rows) cpu::get_rows(view, &ids[size_t(t)], 1, &ref[size_t(t * n_in)]);

        gpu::Buffer id_buf(ctx(), ids.size() * 4, gpu::Memory::Device);
        id_buf.upload(ids.data(), ids.size() * 4);
        gpu::Buffer out(ctx(), ref.size() * 4, gpu::Memory::Device);
        std::vector<float> junk(ref.size(), 123.0f);  // must all be overwritten
        out.upload(junk.data(), junk.size() * 4);
        gpu::Stream s(ctx());
        s.begin();
        ops::get_rows(s, {type, &table, n_in, n_rows}, ops::i32_vector(id_buf, n), ops::f32_rows(out, n, n_in));
        s.submit_and_wait();
        std::vector<float> got(ref.size());
        out.download(got.data(), got.size() * 4);
        const std::string what = std::string(gguf::type_traits(type)->name) + " n_in " + std::to_string(n_in) +
                                 " rows " + std::to_string(n_rows) + " ids " + std::to_string(n);
        EXPECT_LT(test::nmse(got, ref), 1e-12) << what;
        EXPECT_LT(test::max_abs_diff(got, ref), 1e-5) << what;
    }
};

std::vector<int32_t> random_ids(size_t n, int64_t n_rows, uint32_t seed) {
    auto r = test::random_floats(n, seed, 0.0f, float(n_rows));
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = std::min<int32_t>(int32_t(r[i]), int32_t(n_rows - 1));
    return ids;
}

TEST_P(GetRows, MatchesReference) {
    for (int64_t n_in : row_lengths(GetParam()))
        for (int64_t n_rows : {1, 7, 100})
            for (size_t n : {1, 5, 67}) check(n_in, n_rows, random_ids(n, n_rows, uint32_t(n + n_rows)));
}

TEST_P(GetRows, RepeatedAndOutOfRangeIdsGiveRowsAndZeros) {
    const int64_t n_in = row_lengths(GetParam()).back();
    check(n_in, 9, {3, 3, 8, 0, -1, 9, 1000, 3});
}

// A binding limit of a few rows: the table is bound one row window at a time.
TEST_P(GetRows, SplitsTablesLargerThanOneBinding) {
    const int64_t n_in = row_lengths(GetParam()).back(), n_rows = 50;
    const uint64_t row_bytes = ops::weight_buffer_bytes(GetParam(), n_in, 1);
    const uint64_t align = std::max<uint64_t>(ctx().caps().min_storage_buffer_offset_alignment, 4);
    const uint64_t limit = 2 * align + 16 + std::max<uint64_t>(4 * row_bytes, 4 * uint64_t(n_in) * 4);
    test::ScopedEnv env("VKLLM_MAX_BINDING_BYTES", std::to_string(limit));
    std::vector<int32_t> ids = random_ids(40, n_rows, 3);
    ids.push_back(-5);
    ids.push_back(int32_t(n_rows) - 1);
    check(n_in, n_rows, ids);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GetRows, ::testing::ValuesIn(test::kGpuWeightTypes),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                             return std::string(gguf::type_traits(info.param)->name);
                         });

}  // namespace
}  // namespace vkllm
