// JsonMatcher: the byte automaton (see json_matcher.h). Every text it accepts can still be
// completed into a whole document, so constrained sampling never walks into a dead end: each
// check rejects a byte as soon as no completion remains (a lone low surrogate at its second hex
// digit, a key no property begins with, a ',' with no key left to write, ...).
#include "sampling/json_matcher.h"

#include <algorithm>

namespace vkllm::sampling {
namespace {

using Frame = JsonMatcher::Frame;
using Stack = JsonMatcher::Stack;
using Type = Frame::Type;

// Frame::state values.
enum ObjectState : uint8_t { kObjOpen, kObjKey, kObjColon, kObjAfterValue, kObjExpectKey };
enum ArrayState : uint8_t { kArrOpen, kArrAfterItem, kArrExpectItem };
enum NumberState : uint8_t { kNumStart, kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumE, kNumESign, kNumExp };
// Frame::escape values while scanning a string: after '\', the 4 hex digits of \uXXXX (the
// digit index is escape - kHex), and for the low half of a surrogate pair the '\' and 'u'
// expected, then its 4 digits (escape - kLowHex).
enum Escape : uint8_t { kNone, kBackslash, kHex, kLowBackslash = kHex + 4, kLowU, kLowHex };

constexpr int kMaxExponentDigits = 2;  // 1e99 at most: every number fits a double
constexpr size_t kMaxAlternatives = 256;

bool is_space(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
int hex_value(uint8_t b) {
    if (is_digit(b)) return b - '0';
    if (b >= 'a' && b <= 'f') return b - 'a' + 10;
    if (b >= 'A' && b <= 'F') return b - 'A' + 10;
    return -1;
}

enum class Scan { Reject, More, Char, End };

// One byte of a string's inside (after its opening quote): Char when a character is complete,
// End at the closing quote, More inside a character or an escape.
Scan scan(Frame& f, uint8_t b) {
    if (f.utf8_left) {
        if (b < f.utf8_lo || b > f.utf8_hi) return Scan::Reject;
        f.utf8_lo = 0x80;
        f.utf8_hi = 0xBF;
        return --f.utf8_left ? Scan::More : Scan::Char;
    }
    switch (f.escape) {
        case kNone:
            if (b == '"') return Scan::End;
            if (b == '\\') {
                f.escape = kBackslash;
                return Scan::More;
            }
            if (b < 0x20) return Scan::Reject;  // control characters must be escaped
            if (b < 0x80) return Scan::Char;
            // UTF-8 lead bytes and the range of the byte after them (no overlong forms, no
            // surrogates, nothing past U+10FFFF).
            if (b >= 0xC2 && b <= 0xDF) f.utf8_left = 1;
            else if (b >= 0xE0 && b <= 0xEF) f.utf8_left = 2;
            else if (b >= 0xF0 && b <= 0xF4) f.utf8_left = 3;
            else return Scan::Reject;
            if (b == 0xE0) f.utf8_lo = 0xA0;
            if (b == 0xED) f.utf8_hi = 0x9F;
            if (b == 0xF0) f.utf8_lo = 0x90;
            if (b == 0xF4) f.utf8_hi = 0x8F;
            return Scan::More;
        case kBackslash:
            if (b == 'u') {
                f.escape = kHex;
                f.code = 0;
                return Scan::More;
            }
            if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') {
                f.escape = kNone;
                return Scan::Char;
            }
            return Scan::Reject;
        case kLowBackslash:
            if (b != '\\') return Scan::Reject;
            f.escape = kLowU;
            return Scan::More;
        case kLowU:
            if (b != 'u') return Scan::Reject;
            f.escape = kLowHex;
            f.code = 0;
            return Scan::More;
        default: {
            const int h = hex_value(b);
            if (h < 0) return Scan::Reject;
            const bool low = f.escape >= kLowHex;
            const int digit = f.escape - (low ? kLowHex : kHex);
            f.code = uint16_t(f.code * 16 + h);
            // The surrogate ranges are decided by the first two digits: 0xD8..0xDB high, 0xDC..0xDF low.
            if (low && digit == 0 && f.code != 0xD) return Scan::Reject;
            if (digit == 1 && low != (f.code >= 0xDC && f.code <= 0xDF)) return Scan::Reject;
            if (digit < 3) {
                ++f.escape;
                return Scan::More;
            }
            if (!low && f.code >= 0xD800 && f.code <= 0xDBFF) {
                f.escape = kLowBackslash;  // a high surrogate: its low half must follow
                return Scan::More;
            }
            f.escape = kNone;
            return Scan::Char;
        }
    }
}

void start_scan(Frame& f) {
    f.escape = kNone;
    f.utf8_left = 0;
    f.utf8_lo = 0x80;
    f.utf8_hi = 0xBF;
    f.code = 0;
}

enum class Num { Reject, More, Ended };

// One byte of a number; Ended: the byte is not part of it and the number is whole (the byte
// goes to the enclosing value).
Num number_step(Frame& f, uint8_t b, bool integer) {
    const auto digits = [&](uint8_t state, int limit) {
        if (f.count >= limit) return Num::Reject;
        ++f.count;
        f.state = state;
        return Num::More;
    };
    const auto begin = [&](uint8_t state) {
        f.state = state;
        f.count = 0;
        return Num::More;
    };
    const bool fraction = !integer && b == '.', exponent = !integer && (b == 'e' || b == 'E');
    switch (f.state) {
        case kNumStart:
            if (b == '-') return begin(kNumMinus);
            [[fallthrough]];
        case kNumMinus:
            if (b == '0') return begin(kNumZero);
            if (is_digit(b)) {
                begin(kNumInt);
                return digits(kNumInt, kMaxDigits);
            }
            return Num::Reject;
        case kNumZero:
        case kNumInt:
            if (is_digit(b) && f.state == kNumInt) return digits(kNumInt, kMaxDigits);
            if (fraction) return begin(kNumDot);
            if (exponent) return begin(kNumE);
            return is_digit(b) ? Num::Reject : Num::Ended;
        case kNumDot:
            return is_digit(b) ? digits(kNumFrac, kMaxDigits) : Num::Reject;
        case kNumFrac:
            if (is_digit(b)) return digits(kNumFrac, kMaxDigits);
            if (exponent) return begin(kNumE);
            return Num::Ended;
        case kNumE:
            if (b == '+' || b == '-') return begin(kNumESign);
            [[fallthrough]];
        case kNumESign:
            return is_digit(b) ? digits(kNumExp, kMaxExponentDigits) : Num::Reject;
        case kNumExp:
            return is_digit(b) ? digits(kNumExp, kMaxExponentDigits) : Num::Ended;
    }
    return Num::Reject;
}

bool number_whole(const Frame& f) {
    return f.state == kNumZero || f.state == kNumInt || f.state == kNumFrac || f.state == kNumExp;
}

Frame make(Type type, int node) {
    Frame f;
    f.type = type;
    f.node = node;
    return f;
}

// Object and array frames on a stack (their depth).
int containers(const Stack& s) {
    int n = 0;
    for (const Frame& f : s.frames) n += f.type == Type::Object || f.type == Type::Array;
    return n;
}

}  // namespace

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonGrammarNodes> grammar) : g_(std::move(grammar)) {
    Stack s;
    // Frames are read from the back: the prefix, then the value, then the suffix.
    if (!g_->suffix.empty()) s.frames.push_back(make(Type::Text, 1));
    s.frames.push_back(make(Type::Value, g_->root));
    if (!g_->prefix.empty()) s.frames.push_back(make(Type::Text, 0));
    alts_.push_back(std::move(s));
}

void JsonMatcher::start_value(Stack& s, int node, uint8_t b, std::vector<Stack>& out) const {
    const JsonNode& n = g_->nodes[size_t(node)];
    switch (n.kind) {
        case JsonNode::Kind::Any: {
            const int to = b == '{'                     ? JsonGrammarNodes::kAnyObject
                           : b == '['                   ? JsonGrammarNodes::kAnyArray
                           : b == '"'                   ? JsonGrammarNodes::kAnyString
                           : b == '-' || is_digit(b)    ? JsonGrammarNodes::kAnyNumber
                           : b == 't' || b == 'f' || b == 'n' ? JsonGrammarNodes::kAnyLiteral
                                                               : -1;
            if (to >= 0) start_value(s, to, b, out);
            return;
        }
        case JsonNode::Kind::AnyOf:
            // An alternative of only itself (a $ref cycle with no value in between) adds nothing.
            for (int option : n.options) {
                if (option == node) continue;
                Stack c = s;
                start_value(c, option, b, out);
            }
            return;
        case JsonNode::Kind::Object:
        case JsonNode::Kind::Array: {
            const bool object = n.kind == JsonNode::Kind::Object;
            if (b != (object ? '{' : '[') || containers(s) >= kMaxDepth) return;
            s.frames.push_back(make(object ? Type::Object : Type::Array, node));
            out.push_back(std::move(s));
            return;
        }
        case JsonNode::Kind::String:
            if (b != '"') return;
            s.frames.push_back(make(Type::String, node));
            out.push_back(std::move(s));
            return;
        case JsonNode::Kind::Number:
        case JsonNode::Kind::Integer:
            s.frames.push_back(make(Type::Number, node));
            step(std::move(s), b, out);
            return;
        case JsonNode::Kind::Literals:
            for (size_t i = 0; i < n.literals.size(); ++i) {
                if (uint8_t(n.literals[i][0]) != b) continue;
                Stack c = s;
                Frame f = make(Type::Literal, node);
                f.index = int(i);
                f.count = 1;
                if (n.literals[i].size() > 1) c.frames.push_back(f);
                out.push_back(std::move(c));
            }
            return;
    }
}

void JsonMatcher::step(Stack s, uint8_t b, std::vector<Stack>& out) const {
    if (s.frames.empty()) return;  // the document is closed
    const bool space = is_space(b);
    if (!space) {
        s.space = false;
        s.newlines = s.indent = 0;
    }
    // Whitespace where JSON allows it: one space, or one or two newlines then at most
    // kMaxWhitespace spaces or tabs.
    const auto take_space = [&] {
        const bool fresh = !s.space && s.newlines == 0;
        if (b == ' ' && fresh) s.space = true;
        else if (b == '\n' && !s.space && s.indent == 0 && s.newlines < 2) ++s.newlines;
        else if ((b == ' ' || b == '\t') && s.newlines > 0 && s.indent < kMaxWhitespace) ++s.indent;
        else return;
        out.push_back(std::move(s));
    };
    const auto pop = [&] {
        s.frames.pop_back();
        out.push_back(std::move(s));
    };
    Frame& f = s.frames.back();
    const JsonNode& n = g_->nodes[size_t(f.type == Type::Text ? 0 : f.node)];
    switch (f.type) {
        case Type::Text: {
            const std::string& text = f.node == 0 ? g_->prefix : g_->suffix;
            if (uint8_t(text[size_t(f.count)]) != b) return;
            if (size_t(++f.count) == text.size()) return pop();
            out.push_back(std::move(s));
            return;
        }
        case Type::Value: {
            if (space) return take_space();
            const int node = f.node;
            s.frames.pop_back();
            start_value(s, node, b, out);
            return;
        }
        case Type::Literal: {
            const std::string& lit = n.literals[size_t(f.index)];
            if (uint8_t(lit[size_t(f.count)]) != b) return;
            if (size_t(++f.count) == lit.size()) return pop();
            out.push_back(std::move(s));
            return;
        }
        case Type::String:
            // At maxLength only the closing quote may come: a character begun could not end.
            if (n.max_length >= 0 && f.count >= n.max_length && f.escape == kNone && f.utf8_left == 0 && b != '"')
                return;
            switch (scan(f, b)) {
                case Scan::Reject: return;
                case Scan::More: break;
                case Scan::Char:
                    if (n.max_length >= 0 && f.count >= n.max_length) return;
                    ++f.count;
                    break;
                case Scan::End:
                    if (f.count < n.min_length) return;
                    return pop();
            }
            out.push_back(std::move(s));
            return;
        case Type::Number:
            switch (number_step(f, b, n.kind == JsonNode::Kind::Integer)) {
                case Num::Reject: return;
                case Num::More: out.push_back(std::move(s)); return;
                case Num::Ended:
                    s.frames.pop_back();
                    step(std::move(s), b, out);  // the byte belongs to the enclosing value
                    return;
            }
            return;
        case Type::Object: {
            const uint64_t unseen = ~f.seen & (n.names.size() >= 64 ? ~uint64_t(0) : (uint64_t(1) << n.names.size()) - 1);
            const bool more_keys = n.additional >= 0 || unseen != 0;
            const bool may_close = (n.required & ~f.seen) == 0;
            switch (f.state) {
                case kObjOpen:
                case kObjExpectKey:
                    if (space) return take_space();
                    if (b == '"' && more_keys) {
                        f.state = kObjKey;
                        f.key.clear();
                        start_scan(f);
                        out.push_back(std::move(s));
                    } else if (b == '}' && f.state == kObjOpen && may_close) {
                        pop();
                    }
                    return;
                case kObjKey: {
                    const Scan r = scan(f, b);
                    if (r == Scan::Reject) return;
                    if (r == Scan::End) {
                        // The key names a property not yet given, or any other key's value is allowed.
                        const auto it = std::find(n.names.begin(), n.names.end(), f.key);
                        if (it != n.names.end()) {
                            const size_t i = size_t(it - n.names.begin());
                            if (f.seen >> i & 1) return;  // no key twice
                            f.seen |= uint64_t(1) << i;
                            f.index = n.values[i];
                        } else if (n.additional >= 0) {
                            f.index = n.additional;
                        } else {
                            return;
                        }
                        f.state = kObjColon;
                        out.push_back(std::move(s));
                        return;
                    }
                    f.key.push_back(char(b));
                    bool possible = n.additional >= 0;
                    for (size_t i = 0; i < n.names.size() && !possible; ++i)
                        possible = !(f.seen >> i & 1) && n.names[i].compare(0, f.key.size(), f.key) == 0;
                    if (possible) out.push_back(std::move(s));
                    return;
                }
                case kObjColon:
                    if (space) return take_space();
                    if (b != ':') return;
                    f.state = kObjAfterValue;
                    s.frames.push_back(make(Type::Value, f.index));
                    out.push_back(std::move(s));
                    return;
                case kObjAfterValue:
                    if (space) return take_space();
                    if (b == ',' && more_keys) {
                        f.state = kObjExpectKey;
                        out.push_back(std::move(s));
                    } else if (b == '}' && may_close) {
                        pop();
                    }
                    return;
            }
            return;
        }
        case Type::Array:
            switch (f.state) {
                case kArrOpen:
                case kArrExpectItem:
                    if (space) return take_space();
                    if (b == ']' && f.state == kArrOpen) {
                        if (n.min_items == 0) pop();
                        return;
                    }
                    if (n.max_items >= 0 && f.count >= n.max_items) return;
                    ++f.count;
                    f.state = kArrAfterItem;
                    s.frames.push_back(make(Type::Value, n.items));
                    step(std::move(s), b, out);
                    return;
                case kArrAfterItem:
                    if (space) return take_space();
                    if (b == ',' && (n.max_items < 0 || f.count < n.max_items)) {
                        f.state = kArrExpectItem;
                        out.push_back(std::move(s));
                    } else if (b == ']' && f.count >= n.min_items) {
                        pop();
                    }
                    return;
            }
            return;
    }
}

bool JsonMatcher::advance(std::vector<Stack>& alts, std::string_view bytes) const {
    std::vector<Stack> next;
    for (char c : bytes) {
        next.clear();
        for (Stack& s : alts) step(std::move(s), uint8_t(c), next);
        // Alternatives that have become the same (anyOf branches reading alike) are kept once.
        std::vector<Stack> unique;
        for (Stack& s : next)
            if (unique.size() < kMaxAlternatives && std::find(unique.begin(), unique.end(), s) == unique.end())
                unique.push_back(std::move(s));
        alts.swap(unique);
        if (alts.empty()) return false;
    }
    return true;
}

const std::array<bool, 256>& JsonMatcher::next_bytes() const {
    if (!next_valid_) {
        std::vector<Stack> out;
        for (int b = 0; b < 256; ++b) {
            out.clear();
            for (const Stack& s : alts_) step(s, uint8_t(b), out);
            next_[size_t(b)] = !out.empty();
        }
        next_valid_ = true;
    }
    return next_;
}

bool JsonMatcher::accepts(std::string_view bytes) const {
    if (bytes.empty()) return true;
    if (!next_bytes()[uint8_t(bytes[0])]) return false;
    std::vector<Stack> alts = alts_;
    return advance(alts, bytes);
}

bool JsonMatcher::feed(std::string_view bytes) {
    std::vector<Stack> alts = alts_;
    if (!advance(alts, bytes)) return false;
    alts_.swap(alts);
    next_valid_ = false;
    return true;
}

bool JsonMatcher::complete() const {
    for (const Stack& s : alts_) {
        if (s.frames.empty()) return true;
        // A number at the root ends wherever its digits may.
        if (s.frames.size() == 1 && s.frames[0].type == Type::Number && number_whole(s.frames[0])) return true;
    }
    return false;
}

bool JsonMatcher::closed() const {
    for (const Stack& s : alts_)
        if (!s.frames.empty()) return false;
    return true;
}

}  // namespace vkllm::sampling
