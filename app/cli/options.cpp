#include "options.h"

#include <cstdio>
#include <cstdlib>

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

int64_t Options::integer(const std::string& name, int64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end) throw UsageError("option " + name + " expects an integer, got '" + it->second + "'");
    return v;
}

double Options::real(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end) throw UsageError("option " + name + " expects a number, got '" + it->second + "'");
    return v;
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
