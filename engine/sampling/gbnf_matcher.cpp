#include "sampling/gbnf_matcher.h"

#include <algorithm>
#include <string>

namespace vkllm::sampling {

namespace {

// The smallest code point a UTF-8 sequence of each length may hold (shorter forms are overlong).
constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};

}  // namespace

void GbnfMatcher::dedupe(std::vector<Stack>& stacks) const {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.size() > max_stacks_)
        throw GbnfLimitError("the grammar is too ambiguous: more than " + std::to_string(max_stacks_) +
                             " parses are live at once; make its alternatives differ sooner");
}

GbnfMatcher::GbnfMatcher(std::shared_ptr<const GbnfGrammar> grammar, size_t max_stacks)
    : g_(std::move(grammar)), max_stacks_(max_stacks) {
    const GbnfRule& root = g_->rules[size_t(g_->root)];
    std::vector<Stack> stacks;
    for (size_t a = 0; a < root.alternatives.size(); ++a) expand({{g_->root, int32_t(a), 0}}, stacks);
    dedupe(stacks);
    st_.stacks = std::make_shared<const std::vector<Stack>>(std::move(stacks));
}

const GbnfElement& GbnfMatcher::top(const Stack& s) const {
    const Position& p = s.back();
    return g_->rules[size_t(p.rule)].alternatives[size_t(p.alt)][size_t(p.elem)];
}

// Brings `s` to a character at its top (or to empty, a whole match), one stack per way: a rule
// reference is replaced by each of the rule's alternatives. The position after the reference
// stays below them, unless the reference ends its sequence (then it is popped: right recursion
// such as R ::= x R does not grow the stack). Terminates because left recursion is refused.
void GbnfMatcher::expand(Stack s, std::vector<Stack>& out) const {
    auto finished = [&](const Position& p) {
        return size_t(p.elem) == g_->rules[size_t(p.rule)].alternatives[size_t(p.alt)].size();
    };
    while (!s.empty() && finished(s.back())) s.pop_back();
    if (s.empty() || top(s).rule < 0) {
        out.push_back(std::move(s));
        return;
    }
    const int32_t rule = top(s).rule;
    ++s.back().elem;
    if (finished(s.back())) s.pop_back();
    const size_t n_alt = g_->rules[size_t(rule)].alternatives.size();
    for (size_t a = 0; a < n_alt; ++a) {
        Stack t = s;
        t.push_back({rule, int32_t(a), 0});
        expand(std::move(t), out);
        if (out.size() > 4 * max_stacks_) dedupe(out);  // bounds the work before the final check
    }
}

bool GbnfMatcher::advance(State& st, uint32_t cp) const {
    std::vector<Stack> next;
    for (const Stack& s : *st.stacks) {
        if (s.empty() || !top(s).matches(cp)) continue;
        Stack t = s;
        ++t.back().elem;
        expand(std::move(t), next);
    }
    if (next.empty()) return false;
    dedupe(next);
    st.stacks = std::make_shared<const std::vector<Stack>>(std::move(next));
    return true;
}

// Whether some stack's top accepts a character in [lo, hi] (surrogates are not characters).
bool GbnfMatcher::possible(const State& st, uint32_t lo, uint32_t hi) const {
    auto any = [&](uint32_t a, uint32_t b) {
        if (a > b) return false;
        for (const Stack& s : *st.stacks)
            if (!s.empty() && top(s).matches_any(a, b)) return true;
        return false;
    };
    return any(lo, std::min(hi, 0xD7FFu)) || any(std::max(lo, 0xE000u), hi);
}

bool GbnfMatcher::Utf8::push(uint8_t b, uint32_t& lo, uint32_t& hi) {
    if (need == 0) {
        if (b < 0x80) return lo = hi = b, length = 1, true;
        if (b >= 0xC2 && b <= 0xDF) length = 2, partial = b & 0x1F;
        else if (b >= 0xE0 && b <= 0xEF) length = 3, partial = b & 0x0F;
        else if (b >= 0xF0 && b <= 0xF4) length = 4, partial = b & 0x07;
        else return false;
        need = uint8_t(length - 1);
    } else {
        if ((b & 0xC0) != 0x80) return false;
        partial = (partial << 6) | (b & 0x3F);
        --need;
    }
    // Its bits so far followed by any continuation bits, within the range of its length.
    const int rest = 6 * need;
    lo = std::max(partial << rest, kMinOfLength[length]);
    hi = std::min((partial << rest) | ((1u << rest) - 1), 0x10FFFFu);
    if (need == 0 && lo >= 0xD800 && lo <= 0xDFFF) return false;  // surrogates are not characters
    return lo <= hi;
}

// One byte: a whole code point advances the parses; a partial sequence is kept while some
// code point it can still become is accepted.
bool GbnfMatcher::step(State& st, uint8_t b) const {
    uint32_t lo = 0, hi = 0;
    if (!st.utf8.push(b, lo, hi)) return false;
    return st.utf8.need > 0 ? possible(st, lo, hi) : advance(st, lo);
}

bool GbnfMatcher::feed(std::string_view bytes) {
    State st = st_;
    for (char c : bytes)
        if (!step(st, uint8_t(c))) return false;
    st_ = std::move(st);
    next_valid_ = false;
    after_prefix_.clear();
    return true;
}

const std::array<bool, 256>& GbnfMatcher::next_bytes() const {
    if (next_valid_) return next_;
    for (int b = 0; b < 256; ++b) {
        Utf8 u = st_.utf8;
        uint32_t lo = 0, hi = 0;
        next_[size_t(b)] = u.push(uint8_t(b), lo, hi) && possible(st_, lo, hi);
    }
    next_valid_ = true;
    return next_;
}

bool GbnfMatcher::accepts(std::string_view bytes) const {
    if (bytes.empty()) return true;
    if (!next_bytes()[uint8_t(bytes[0])]) return false;
    State st = st_;
    for (size_t i = 0; i < bytes.size(); ++i) {
        const uint8_t b = uint8_t(bytes[i]);
        if (i + 1 == bytes.size()) {
            // The last byte: whether some parse takes it is enough, without the stacks after it.
            uint32_t lo = 0, hi = 0;
            return st.utf8.push(b, lo, hi) && possible(st, lo, st.utf8.need > 0 ? hi : lo);
        }
        if (i >= kCachedPrefix) {
            if (!step(st, b)) return false;
            continue;
        }
        std::shared_ptr<const State>& after = after_prefix_[std::string(bytes.substr(0, i + 1))];
        if (!after) {
            State next = st;
            if (!step(next, b)) return false;  // refusals are not kept; the next-bytes table catches most
            after = std::make_shared<const State>(std::move(next));
        }
        st = *after;
    }
    return true;
}

bool GbnfMatcher::complete() const {
    return st_.utf8.need == 0 && std::any_of(st_.stacks->begin(), st_.stacks->end(), [](const Stack& s) { return s.empty(); });
}

bool GbnfMatcher::closed() const {
    return st_.utf8.need == 0 && std::all_of(st_.stacks->begin(), st_.stacks->end(), [](const Stack& s) { return s.empty(); });
}

}  // namespace vkllm::sampling
