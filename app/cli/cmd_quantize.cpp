// vkllm quantize IN.gguf OUT.gguf TYPE [--imatrix FILE] [--pure] [--dry-run] [--keep-super-weights [--clip-sigmas K]]:
// rewrite a model's weights as llama-quantize does: TYPE is one of its names (Q4_K_M, Q3_K_S,
// Q8_0, ...) and each tensor gets the type llama.cpp's rules give it (quantize_mix, vkllm/gguf.h);
// --imatrix encodes each weight with its columns' importance (quantize_mix_imatrix).
// --keep-super-weights is quantize_keeping_super_weights's (vkllm/super_weights.h,
// docs/super-weights.md): every weight in one type.
#include <unistd.h>

#include <cctype>
#include <cinttypes>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "options.h"
#include "vkllm/gguf.h"
#include "vkllm/super_weights.h"

namespace vkllm::cli {

namespace {

std::string usage_text() {
    static const std::string text = [] {
        std::string t = "vkllm quantize IN.gguf OUT.gguf TYPE [--imatrix FILE] [--pure] [--dry-run]\n"
                        "               [--keep-super-weights [--clip-sigmas K]]\n"
                        "  TYPE: llama-quantize's names, each tensor typed by llama.cpp's rules:\n   ";
        size_t col = 3;
        for (const std::string& type : quantize_mix_names()) {
            if (col + type.size() + 1 > 96) {
                t += "\n   ";
                col = 3;
            }
            t += " " + type;
            col += type.size() + 1;
        }
        const KeepSuperWeightsOptions defaults;
        return t + "\n  --imatrix FILE        an importance matrix (llama-imatrix's file, GGUF or .dat; docs/imatrix.md):\n"
                   "                        each weight is encoded minding its columns' importance. Mixes that\n"
                   "                        put tensors in IQ1_S/M, IQ2_XXS/XS/S or IQ3_XXS, and Q2_K_S, are\n"
                   "                        refused without one, as llama-quantize refuses them\n"
                   "  --pure                every quantized weight in TYPE's base type (no per-tensor rules)\n"
                   "  --dry-run             print the type each tensor would get; write nothing\n"
                   "  --keep-super-weights  find the super weights (GPU), keep them exact as a correction applied\n"
                   "                        after ffn_down, clip ffn_down's other outliers (TYPE: one tensor\n"
                   "                        type, every weight in it)\n"
                   "  --clip-sigmas K       with --keep-super-weights: clip at K x the tensor's RMS (0: none;\n"
                   "                        default " + std::to_string(defaults.clip_sigmas).substr(0, 4) + ")";
    }();
    return text;
}

// A progress bar on standard error when it is a terminal: "[#####.....] 12/40 tensors".
class ProgressBar {
public:
    ProgressBar() : on_(::isatty(2) == 1) {}
    void operator()(size_t done, size_t total) {
        if (!on_ || total == 0) return;
        const int width = 40, filled = int(double(done) / double(total) * width);
        std::string bar(size_t(filled), '#');
        bar.append(size_t(width - filled), '.');
        std::fprintf(stderr, "\r[%s] %zu/%zu tensors", bar.c_str(), done, total);
        if (done == total) std::fprintf(stderr, "\n");
        std::fflush(stderr);
    }

private:
    bool on_;
};

void print_super_weights(const SuperQuantizeReport& r) {
    std::printf("super weights: %zu found", r.super_weights.size());
    if (r.clip_sigmas > 0)
        std::printf("; %llu ffn_down weights clipped at %g x RMS", static_cast<unsigned long long>(r.clipped),
                    double(r.clip_sigmas));
    std::printf("\n");
    for (const KeptSuperWeight& k : r.super_weights) {
        std::printf("  layer %d %s [%lld, %lld] = %g", k.found.layer, k.found.tensor.c_str(),
                    static_cast<long long>(k.found.row), static_cast<long long>(k.found.col), double(k.found.value));
        if (k.kept) std::printf(": kept (stored %g, correction %+g)\n", double(k.stored), double(k.delta));
        else std::printf(": not kept (%s)\n", k.note.c_str());
    }
}

int quantize(const Args& all) {
    if (all.size() == 1 && (all[0] == "-h" || all[0] == "--help")) throw HelpRequested();
    Args args;
    bool keep = false, pure = false, dry_run = false;
    KeepSuperWeightsOptions keep_options;
    bool clip_given = false;
    std::string imatrix;
    for (size_t i = 0; i < all.size(); ++i) {
        if (all[i] == "--keep-super-weights") {
            keep = true;
        } else if (all[i] == "--imatrix") {
            if (i + 1 >= all.size() || all[i + 1].empty()) throw UsageError("--imatrix needs a file");
            imatrix = all[++i];
        } else if (all[i] == "--pure") {
            pure = true;
        } else if (all[i] == "--dry-run") {
            dry_run = true;
        } else if (all[i] == "--clip-sigmas") {
            if (i + 1 >= all.size()) throw UsageError("--clip-sigmas needs a value");
            const std::string& v = all[++i];
            char* end = nullptr;
            const float k = std::strtof(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(k >= 0) || k > 1e6f)
                throw UsageError("--clip-sigmas: expected a number >= 0, got '" + v + "'");
            keep_options.clip_sigmas = k;
            clip_given = true;
        } else {
            args.push_back(all[i]);
        }
    }
    if (clip_given && !keep) throw UsageError("--clip-sigmas needs --keep-super-weights");
    if (keep && !imatrix.empty()) throw UsageError("--keep-super-weights takes no --imatrix");
    if (keep && (pure || dry_run)) throw UsageError("--keep-super-weights writes every weight in TYPE: no --pure or --dry-run");
    if (args.size() != 3) throw UsageError("expected 3 arguments, got " + std::to_string(args.size()));
    const std::string& in_path = args[0];
    const std::string& out_path = args[1];
    std::string type = args[2];  // type names are case-insensitive: "q8_0" is Q8_0
    for (char& c : type) c = char(std::toupper(static_cast<unsigned char>(c)));
    bool known = false;
    for (const std::string& t : quantize_mix_names()) known |= t == type;
    if (!known) throw UsageError("unknown or unsupported target type '" + args[2] + "'");
    SuperQuantizeReport super;
    QuantizeReport report;
    if (keep) {
        bool single = false;
        for (const std::string& t : quantize_types()) single |= t == type;
        if (!single)
            throw UsageError("--keep-super-weights needs one tensor type (one of:" + [] {
                std::string l;
                for (const std::string& t : quantize_types()) l += " " + t;
                return l;
            }() + "), not the mix '" + type + "'");
        super = quantize_keeping_super_weights(in_path, out_path, type, keep_options);
        report = super.quantize;
    } else {
        QuantizeMixOptions options;
        options.pure = pure;
        options.dry_run = dry_run;
        ProgressBar bar;
        options.progress = [&bar](size_t done, size_t total) { bar(done, total); };
        report = imatrix.empty() ? quantize_mix(in_path, out_path, type, options)
                                 : quantize_mix_imatrix(in_path, out_path, type, imatrix, options);
    }
    if (dry_run) {
        std::printf("%s as %s%s%s (dry run: nothing written)\n", in_path.c_str(), type.c_str(), pure ? " --pure" : "",
                    imatrix.empty() ? "" : " with an importance matrix");
        for (const QuantizedTensor& t : report.tensors)
            std::printf("  %-40s %-8s -> %-8s%s\n", t.name.c_str(), t.from.c_str(), t.to.c_str(),
                        t.note.empty() ? "" : ("  (" + t.note + ")").c_str());
        return 0;
    }

    std::map<std::string, int> converted, kept;  // "FROM -> TO" / "TYPE (why)" -> count
    for (const QuantizedTensor& t : report.tensors) {
        const std::string why = t.note.empty() ? "" : " (" + t.note + ")";
        if (t.from != t.to) converted[t.from + " -> " + t.to + why]++;
        else kept[t.from + why]++;
    }
    std::printf("%s -> %s as %s%s\n", in_path.c_str(), out_path.c_str(), type.c_str(),
                imatrix.empty() ? "" : (" with the importance matrix " + imatrix).c_str());
    for (const auto& [what, n] : converted) std::printf("  converted %4d  %s\n", n, what.c_str());
    for (const auto& [what, n] : kept) std::printf("  kept      %4d  %s\n", n, what.c_str());
    std::printf("tensor bytes: %" PRIu64 " -> %" PRIu64 " (%.1f%%)\n", report.bytes_in, report.bytes_out,
                report.bytes_in ? 100.0 * double(report.bytes_out) / double(report.bytes_in) : 100.0);
    if (keep) print_super_weights(super);
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
