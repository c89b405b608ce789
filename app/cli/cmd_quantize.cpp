// vkllm quantize IN.gguf OUT.gguf TYPE: rewrite a model's weights in another tensor type.
// The policy (which tensors change, fallbacks for odd row lengths) is in gguf/requantize.h.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "commands.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "options.h"

namespace vkllm::cli {

namespace {

constexpr const char* kUsage =
    "vkllm quantize IN.gguf OUT.gguf TYPE   (TYPE: F32 F16 BF16 Q8_0 Q5_1 Q5_0 Q4_1 Q4_0 Q6_K Q5_K Q4_K Q3_K Q2_K MXFP4)";

bool same_file(const std::string& a, const std::string& b) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

const char* type_name(gguf::TensorType t) {
    auto tr = gguf::type_traits(t);
    return tr ? tr->name : "?";
}

int quantize(const Args& args) {
    if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) throw HelpRequested();
    if (args.size() != 3) throw UsageError("expected 3 arguments, got " + std::to_string(args.size()));
    const std::string& in_path = args[0];
    const std::string& out_path = args[1];
    auto target = gguf::type_from_name(args[2]);
    if (!target || !gguf::can_quantize(*target))
        throw UsageError("unknown or unsupported target type '" + args[2] + "'");
    auto in = gguf::File::open(in_path);
    if (same_file(in_path, out_path))
        throw std::runtime_error("refusing to overwrite the input file '" + in_path + "'; choose another output path");
    gguf::Requantized result = gguf::requantize(*in, *target);

    std::map<std::string, int> converted, kept;  // "FROM -> TO" / "TYPE (why)" -> count
    for (const auto& c : result.tensors) {
        if (c.from != c.to) {
            std::string k = std::string(type_name(c.from)) + " -> " + type_name(c.to);
            if (!c.note.empty()) k += " (" + c.note + ")";
            converted[k]++;
        } else {
            kept[std::string(type_name(c.from)) + (c.note.empty() ? "" : " (" + c.note + ")")]++;
        }
    }
    result.writer.write(out_path);

    std::printf("%s -> %s as %s\n", in_path.c_str(), out_path.c_str(), type_name(*target));
    for (const auto& [what, n] : converted) std::printf("  converted %4d  %s\n", n, what.c_str());
    for (const auto& [what, n] : kept) std::printf("  kept      %4d  %s\n", n, what.c_str());
    std::printf("tensor bytes: %" PRIu64 " -> %" PRIu64 " (%.1f%%)\n", result.bytes_in, result.bytes_out,
                result.bytes_in ? 100.0 * double(result.bytes_out) / double(result.bytes_in) : 100.0);
    return 0;
}

}  // namespace

int cmd_quantize(const Args& args) { return with_usage(kUsage, quantize, args); }

}  // namespace vkllm::cli
