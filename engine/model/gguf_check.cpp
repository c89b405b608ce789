// check_tensors (vkllm/gguf.h): NaN and infinity counts of every tensor of a GGUF file.
#include <cmath>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "vkllm/gguf.h"

namespace vkllm {

TensorCheckReport check_tensors(const GgufFile& file) {
    TensorCheckReport report;
    const std::vector<TensorInfo>& listed = file.tensors();  // the same tensors, types as names
    const std::vector<gguf::TensorInfo>& tensors = file.internal().tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const gguf::TensorInfo& t = tensors[i];
        const std::string type = i < listed.size() ? listed[i].type : "?";
        const size_t row_length = size_t(t.row_length());
        const size_t n_rows = size_t(t.n_rows());
        std::vector<float> row(row_length);
        NonFiniteTensor bad{t.name, type, 0, 0, 0};
        try {
            const size_t row_bytes = gguf::row_size(t.type, row_length);
            for (size_t r = 0; r < n_rows; ++r) {
                gguf::dequantize_row(t.type, t.data + r * row_bytes, row.data(), row_length);
                for (size_t c = 0; c < row_length; ++c) {
                    const float v = row[c];
                    if (std::isfinite(v)) continue;
                    if (bad.n_nan + bad.n_inf == 0) bad.first_index = uint64_t(r) * row_length + c;
                    (std::isnan(v) ? bad.n_nan : bad.n_inf)++;
                }
            }
        } catch (const gguf::UnsupportedType&) {
            report.skipped.push_back(t.name + " (" + type + ")");
            continue;
        }
        report.tensors_checked++;
        report.elements_checked += uint64_t(n_rows) * row_length;
        if (bad.n_nan + bad.n_inf) report.non_finite.push_back(bad);
    }
    return report;
}

}  // namespace vkllm
