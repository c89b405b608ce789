// vkllm quantize IN.gguf OUT.gguf TYPE: rewrite a model's weights in another tensor type.
// The policy (which tensors change, fallbacks for odd row lengths) is quantize_file's (vkllm/gguf.h).
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "options.h"
#include "vkllm/gguf.h"

namespace vkllm::cli {

namespace {

std::string usage_text() {
    static const std::string text = [] {
        std::string t = "vkllm quantize IN.gguf OUT.gguf TYPE   (TYPE:";
        for (const std::string& type : quantize_types()) t += " " + type;
        return t + ")";
    }();
    return text;
}

int quantize(const Args& args) {
    if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) throw HelpRequested();
    if (args.size() != 3) throw UsageError("expected 3 arguments, got " + std::to_string(args.size()));
    const std::string& in_path = args[0];
    const std::string& out_path = args[1];
    std::string type = args[2];  // type names are case-insensitive: "q8_0" is Q8_0
    for (char& c : type) c = char(std::toupper(static_cast<unsigned char>(c)));
    bool known = false;
    for (const std::string& t : quantize_types()) known |= t == type;
    if (!known) throw UsageError("unknown or unsupported target type '" + args[2] + "'");
    auto in = GgufFile::open(in_path);
    const QuantizeReport report = quantize_file(*in, out_path, type);

    std::map<std::string, int> converted, kept;  // "FROM -> TO" / "TYPE (why)" -> count
    for (const QuantizedTensor& t : report.tensors) {
        const std::string why = t.note.empty() ? "" : " (" + t.note + ")";
        if (t.from != t.to) converted[t.from + " -> " + t.to + why]++;
        else kept[t.from + why]++;
    }
    std::printf("%s -> %s as %s\n", in_path.c_str(), out_path.c_str(), type.c_str());
    for (const auto& [what, n] : converted) std::printf("  converted %4d  %s\n", n, what.c_str());
    for (const auto& [what, n] : kept) std::printf("  kept      %4d  %s\n", n, what.c_str());
    std::printf("tensor bytes: %" PRIu64 " -> %" PRIu64 " (%.1f%%)\n", report.bytes_in, report.bytes_out,
                report.bytes_in ? 100.0 * double(report.bytes_out) / double(report.bytes_in) : 100.0);
    // Re-encoding quantised weights in a larger type restores none of the precision they lost.
    bool from_quantised = false;
    for (const QuantizedTensor& t : report.tensors)
        from_quantised |= t.from != t.to && t.from != "F32" && t.from != "F16" && t.from != "BF16";
    if (from_quantised && report.bytes_out > report.bytes_in)
        std::fprintf(stderr, "vkllm quantize: warning: %s is larger than the quantised types it converts from: the "
                             "file grows, but the precision the weights lost is not restored\n", type.c_str());
    return 0;
}

}  // namespace

int cmd_quantize(const Args& args) { return with_usage(usage_text().c_str(), quantize, args); }

}  // namespace vkllm::cli
