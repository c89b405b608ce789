// vkllm::quantize_mix and quantize_mix_imatrix (vkllm/gguf.h): llama-quantize's
// named mixes, from a file path to a file, without or with an importance matrix.
#include <stdexcept>

#include "gguf/quant.h"
#include "gguf/quant_mix.h"
#include "gguf/requantize.h"
#include "model/families.h"
#include "model/metadata_keys.h"
#include "model/quantized_output.h"
#include "vkllm/gguf.h"
#include "vkllm/imatrix.h"

namespace vkllm {

std::vector<std::string> quantize_mix_names() {
    std::vector<std::string> out;
    for (const gguf::QuantMix& m : gguf::quant_mixes()) out.push_back(m.name);
    return out;
}

namespace {

// A named mix from a file path to a file, with an importance matrix (read from imatrix_path) or
// none; what quantize_mix and quantize_mix_imatrix share.
QuantizeReport quantize_mix_from(const std::string& in_path, const std::string& out_path, const std::string& name,
                                 const QuantizeMixOptions& options, const std::string* imatrix_path) {
    const gguf::QuantMix* mix = gguf::find_quant_mix(name);
    if (!mix) {
        std::string known;
        for (const std::string& n : quantize_mix_names()) known += " " + n;
        throw std::invalid_argument("unknown or unsupported target type '" + name + "' (known:" + known + ")");
    }
    const Imatrix imatrix = imatrix_path ? read_imatrix(*imatrix_path) : Imatrix{};
    if (!options.dry_run) model::check_quantize_output(in_path, out_path);

    const auto in = gguf::File::open(in_path);
    const gguf::MixArchRules rules =
        model::quant_mix_rules(in->get_string(std::string(model::keys::kArchitecture)).value_or(""));
    const std::vector<gguf::TensorConversion> plan =
        gguf::plan_mix(*in, *mix, rules, options.pure, /*with_imatrix=*/imatrix_path != nullptr);
    QuantizeReport report;
    auto type_name = [](gguf::TensorType t) { return gguf::ggml_type_name_of(uint32_t(t)); };
    for (const gguf::TensorConversion& c : plan) report.tensors.push_back({c.name, type_name(c.from), type_name(c.to), c.note});
    if (options.dry_run) {
        for (const gguf::TensorInfo& t : in->tensors()) report.bytes_in += t.n_bytes;
        return report;
    }
    if (const auto missing = gguf::unwritable_types(plan); !missing.empty()) {
        std::string list;
        for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
        throw std::invalid_argument(std::string(mix->name) + ": llama.cpp's mix puts tensors of this file in " + list +
                                    ", which vkllm cannot write yet");
    }

    gguf::Requantized result =
        gguf::requantize_planned(*in, plan, mix->file_type, options.progress, imatrix_path ? &imatrix : nullptr);
    if (imatrix_path) {  // what llama-quantize records of the matrix it used
        result.writer.set("quantize.imatrix.file", gguf::Value::from_string(*imatrix_path));
        if (!imatrix.datasets.empty())
            result.writer.set("quantize.imatrix.dataset", gguf::Value::from_string(imatrix.datasets.front()));
        result.writer.set("quantize.imatrix.entries_count", gguf::Value::from_u32(uint32_t(imatrix.entries.size())));
        if (imatrix.chunk_count > 0)
            result.writer.set("quantize.imatrix.chunks_count", gguf::Value::from_u32(uint32_t(imatrix.chunk_count)));
    }

    model::write_quantized(result.writer, out_path);
    report.tensors.clear();
    for (const gguf::TensorConversion& c : result.tensors)
        report.tensors.push_back({c.name, type_name(c.from), type_name(c.to), c.note});
    report.bytes_in = result.bytes_in;
    report.bytes_out = result.bytes_out;
    return report;
}

}  // namespace

QuantizeReport quantize_mix(const std::string& in_path, const std::string& out_path, const std::string& name,
                            const QuantizeMixOptions& options) {
    return quantize_mix_from(in_path, out_path, name, options, nullptr);
}

QuantizeReport quantize_mix_imatrix(const std::string& in_path, const std::string& out_path, const std::string& name,
                                    const std::string& imatrix_path, const QuantizeMixOptions& options) {
    return quantize_mix_from(in_path, out_path, name, options, &imatrix_path);
}

}  // namespace vkllm
