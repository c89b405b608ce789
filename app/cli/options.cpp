#include "options.h"

#include "input_file.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace vkllm::cli {

Options::Options(const Args& args, const std::set<std::string>& valued, const std::set<std::string>& flags) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (valued.count(a)) {
            if (i + 1 >= args.size()) throw UsageError("option " + a + " needs a value");
            values_[a] = args[++i];
        } else if (a == "-h" || a == "--help") {
            throw HelpRequested();
        } else if (flags.count(a)) {
            values_.insert_or_assign(a, std::string(1, '1'));
        } else {
            throw UsageError("unknown argument '" + a + "'");
        }
    }
}

std::string Options::str(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

int64_t Options::integer(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const std::string& text = it->second;
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || std::isspace(static_cast<unsigned char>(text[0])))
        throw UsageError("option " + name + " expects an integer in " + range + ", got '" + text + "'");
    if (errno == ERANGE) throw UsageError("option " + name + " is out of its range " + range + ", got " + text);
    if (v < lo) throw UsageError("option " + name + " must be >= " + std::to_string(lo) + " (its range: " + range + "), got " + text);
    if (v > hi) throw UsageError("option " + name + " must be <= " + std::to_string(hi) + " (its range: " + range + "), got " + text);
    return v;
}

uint64_t Options::seed(const std::string& name) const {
    const int64_t v = integer(name, -1, -1, std::numeric_limits<int64_t>::max());
    return v < 0 ? uint64_t(std::random_device{}()) << 32 ^ std::random_device{}() : uint64_t(v);
}

double Options::real(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end) throw UsageError("option " + name + " expects a number, got '" + it->second + "'");
    return v;
}

std::optional<std::string> prompt_text(const Options& options) {
    if (options.has("-p") && options.has("-f")) throw UsageError("give the prompt with -p or -f, not both");
    if (options.has("-p")) return options.str("-p");
    if (!options.has("-f")) return std::nullopt;
    const std::string path = options.str("-f");
    if (path.empty()) throw UsageError("-f names no file");
    return app::read_input(path, app::kPromptFileMax, "prompt file");
}

KvCacheType cache_type(const Options& o) {
    if (!o.has("--cache-type")) return KvCacheType::Auto;
    const std::optional<KvCacheType> t = parse_kv_cache_type(o.str("--cache-type"));
    if (!t) throw UsageError("--cache-type must be auto, f16, f32 or q8_0, got '" + o.str("--cache-type") + "'");
    return *t;
}

SamplerParams sampler_params(const Options& o) {
    SamplerParams sp;
    sp.temperature = float(o.real("--temp", 0.8));
    sp.top_k = int(o.integer("--top-k", 40, 0));
    sp.top_p = float(o.real("--top-p", 0.95));
    sp.min_p = float(o.real("--min-p", 0.05));
    sp.repeat_penalty = float(o.real("--repeat-penalty", 1.0));
    sp.repeat_last_n = int(o.integer("--repeat-last-n", 64, 0));
    sp.presence_penalty = float(o.real("--presence-penalty", 0.0));
    sp.frequency_penalty = float(o.real("--frequency-penalty", 0.0));
    sp.seed = o.seed("--seed");  // -1 or absent: random
    try {
        validate(sp);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    return sp;
}

int with_usage(const char* usage, int (*body)(const Args&), const Args& args) {
    try {
        return body(args);
    } catch (const HelpRequested&) {
        std::printf("usage: %s\n", usage);
        return 0;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s\nusage: %s\n", e.what(), usage);
        return 2;
    }
}

}  // namespace vkllm::cli
