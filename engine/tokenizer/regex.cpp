// Regex: pattern -> syntax tree -> instructions for a backtracking machine (the classic
// "recursive backtracking" VM of Thompson/Pike-style programs, run depth-first so that
// alternatives and quantifiers keep Perl's priority order).
#include "tokenizer/regex.h"

#include <utility>

#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

constexpr int kUnbounded = -1;

bool is_ascii_word(uint32_t cp) {
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
}

uint32_t swap_ascii_case(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    return cp;
}

// One member of a character class.
struct ClassItem {
    enum Kind : uint8_t { kRange, kSpace, kDigit, kWord, kExactCategory, kMajorClass } kind = kRange;
    bool negated = false;  // \S, \D, \W, \P{...}
    uint32_t lo = 0, hi = 0;
    unicode::Category category = unicode::Category::Cn;
    char major = 0;

    bool matches(uint32_t cp) const {
        bool m = false;
        switch (kind) {
            case kRange: m = lo <= cp && cp <= hi; break;
            case kSpace: m = unicode::is_white_space(cp); break;
            case kDigit: m = cp >= '0' && cp <= '9'; break;
            case kWord: m = is_ascii_word(cp); break;
            case kExactCategory: m = unicode::category(cp) == category; break;
            case kMajorClass: m = unicode::major_class(unicode::category(cp)) == major; break;
        }
        return m != negated;
    }
};

struct CharClass {
    std::vector<ClassItem> items;
    bool negated = false;
    bool fold_ascii_case = false;

    bool raw_matches(uint32_t cp) const {
        for (const ClassItem& item : items)
            if (item.matches(cp)) return true;
        return false;
    }
    bool matches(uint32_t cp) const {
        bool m = raw_matches(cp);
        if (!m && fold_ascii_case && swap_ascii_case(cp) != cp) m = raw_matches(swap_ascii_case(cp));
        return m != negated;
    }
};

struct Node {
    enum Kind { kEmpty, kClass, kAny, kConcat, kAlt, kRepeat, kLookahead, kBegin, kEnd, kWordBoundary, kNotWordBoundary };
    Kind kind = kEmpty;
    int class_index = -1;
    int min = 0, max = 0;  // kRepeat
    bool greedy = true;    // kRepeat
    bool negate = false;   // kLookahead
    std::vector<std::unique_ptr<Node>> kids;
};

enum class Op : uint8_t { kClass, kAny, kSplit, kJmp, kMatch, kLook, kBegin, kEnd, kWordBoundary, kNotWordBoundary };

struct Inst {
    Op op;
    bool negate = false;  // kLook: (?!...)
    int arg = 0;          // kClass: class index; kLook: sub-program index
    int x = 0, y = 0;     // kSplit: preferred and alternative targets; kJmp: x
};

using Code = std::vector<Inst>;

}  // namespace

struct Regex::Program {
    std::vector<CharClass> classes;
    std::vector<Code> codes;  // codes[0] is the pattern, the rest are lookahead bodies
};

namespace {

// ---- Parser: code points of the pattern -> Node tree ----

class Parser {
public:
    Parser(const std::string& pattern, Regex::Program& program)
        : pattern_(pattern), cps_(unicode::decode_utf8(pattern)), program_(program) {}

    std::unique_ptr<Node> parse() {
        auto node = parse_alternation();
        if (pos_ < cps_.size()) fail("unbalanced ')'");
        return node;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw RegexError("regex '" + pattern_ + "': " + what + " at character " + std::to_string(pos_));
    }
    bool at_end() const { return pos_ >= cps_.size(); }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }
    uint32_t next() {
        if (at_end()) fail("unexpected end of pattern");
        return cps_[pos_++];
    }

    int add_class(CharClass c) {
        c.fold_ascii_case = c.fold_ascii_case || fold_case_;
        program_.classes.push_back(std::move(c));
        return int(program_.classes.size()) - 1;
    }
    std::unique_ptr<Node> class_node(CharClass c) {
        auto n = std::make_unique<Node>();
        n->kind = Node::kClass;
        n->class_index = add_class(std::move(c));
        return n;
    }
    static std::unique_ptr<Node> simple(Node::Kind k) {
        auto n = std::make_unique<Node>();
        n->kind = k;
        return n;
    }

    std::unique_ptr<Node> parse_alternation() {
        auto first = parse_concat();
        if (at_end() || peek() != '|') return first;
        auto alt = simple(Node::kAlt);
        alt->kids.push_back(std::move(first));
        while (!at_end() && peek() == '|') {
            ++pos_;
            alt->kids.push_back(parse_concat());
        }
        return alt;
    }

    std::unique_ptr<Node> parse_concat() {
        auto cat = simple(Node::kConcat);
        while (!at_end() && peek() != '|' && peek() != ')') cat->kids.push_back(parse_repeat());
        if (cat->kids.size() == 1) return std::move(cat->kids[0]);
        return cat;
    }

    // {n}, {n,}, {n,m}; returns false (consuming nothing) if the brace is not a quantifier.
    bool parse_braces(int* min, int* max) {
        size_t p = pos_ + 1;
        auto number = [&](int* out) {
            size_t start = p;
            long v = 0;
            while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9' && v < 100000) v = v * 10 + (cps_[p++] - '0');
            *out = int(v);
            return p > start;
        };
        if (!number(min)) return false;
        *max = *min;
        if (p < cps_.size() && cps_[p] == ',') {
            ++p;
            if (!number(max)) *max = kUnbounded;
        }
        if (p >= cps_.size() || cps_[p] != '}') return false;
        if (*max != kUnbounded && *max < *min) fail("quantifier {n,m} with m < n");
        pos_ = p + 1;
        return true;
    }

    std::unique_ptr<Node> parse_repeat() {
        auto atom = parse_atom();
        for (;;) {
            if (at_end()) return atom;
            int min = 0, max = 0;
            const uint32_t c = peek();
            if (c == '*') { min = 0; max = kUnbounded; ++pos_; }
            else if (c == '+') { min = 1; max = kUnbounded; ++pos_; }
            else if (c == '?') { min = 0; max = 1; ++pos_; }
            else if (c == '{' && parse_braces(&min, &max)) {}
            else return atom;
            bool greedy = true;
            if (!at_end() && peek() == '?') { greedy = false; ++pos_; }
            else if (!at_end() && peek() == '+') fail("possessive quantifiers are not supported");
            auto rep = simple(Node::kRepeat);
            rep->min = min;
            rep->max = max;
            rep->greedy = greedy;
            rep->kids.push_back(std::move(atom));
            atom = std::move(rep);
        }
    }

    std::unique_ptr<Node> parse_group() {
        // after '('
        if (peek() == '?') {
            const uint32_t kind = peek(1);
            if (kind == ':') {
                pos_ += 2;
            } else if (kind == '=' || kind == '!') {
                pos_ += 2;
                auto look = simple(Node::kLookahead);
                look->negate = kind == '!';
                look->kids.push_back(parse_alternation());
                expect_close();
                return look;
            } else if (kind == 'i' && peek(2) == ':') {
                pos_ += 3;
                const bool saved = fold_case_;
                fold_case_ = true;
                auto body = parse_alternation();
                fold_case_ = saved;
                expect_close();
                return body;
            } else if (kind == '<') {
                fail("lookbehind and named groups are not supported");
            } else {
                fail("unsupported group flag");
            }
        }
        auto body = parse_alternation();  // capturing groups are matched as plain groups
        expect_close();
        return body;
    }
    void expect_close() {
        if (at_end() || peek() != ')') fail("missing ')'");
        ++pos_;
    }

    uint32_t parse_hex(size_t digits) {
        uint32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
            const uint32_t c = next();
            int d = (c >= '0' && c <= '9') ? int(c - '0') : (c >= 'a' && c <= 'f') ? int(c - 'a' + 10)
                  : (c >= 'A' && c <= 'F') ? int(c - 'A' + 10) : -1;
            if (d < 0) fail("bad hexadecimal escape");
            v = v * 16 + uint32_t(d);
        }
        return v;
    }

    // After a backslash: a class item for \s \d \w \p{..} (and their negations), or a literal.
    // Returns true and sets *item for a set escape; false and sets *literal otherwise.
    bool parse_escape(ClassItem* item, uint32_t* literal) {
        const uint32_t c = next();
        switch (c) {
            case 's': case 'S': item->kind = ClassItem::kSpace; item->negated = c == 'S'; return true;
            case 'd': case 'D': item->kind = ClassItem::kDigit; item->negated = c == 'D'; return true;
            case 'w': case 'W': item->kind = ClassItem::kWord; item->negated = c == 'W'; return true;
            case 'p': case 'P': {
                if (next() != '{') fail("expected '{' after \\p");
                std::string name;
                while (!at_end() && peek() != '}') name.push_back(char(next()));
                next();  // '}'
                unicode::Category exact{};
                char major = 0;
                if (!unicode::parse_category_name(name, &exact, &major)) fail("unknown Unicode category \\p{" + name + "}");
                item->kind = major ? ClassItem::kMajorClass : ClassItem::kExactCategory;
                item->major = major;
                item->category = exact;
                item->negated = c == 'P';
                return true;
            }
            case 'r': *literal = '\r'; return false;
            case 'n': *literal = '\n'; return false;
            case 't': *literal = '\t'; return false;
            case 'f': *literal = '\f'; return false;
            case 'v': *literal = '\v'; return false;
            case '0': *literal = 0; return false;
            case 'u': *literal = parse_hex(4); return false;
            case 'x':
                if (peek() == '{') {
                    ++pos_;
                    uint32_t v = 0;
                    size_t n = 0;
                    while (!at_end() && peek() != '}') { v = v * 16 + parse_hex(1); ++n; }
                    next();
                    if (n == 0 || v > unicode::kMaxCodePoint) fail("bad \\x{...} escape");
                    *literal = v;
                } else {
                    *literal = parse_hex(2);
                }
                return false;
            default:
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                    fail(std::string("unsupported escape \\") + char(c));
                *literal = c;  // escaped punctuation stands for itself
                return false;
        }
    }

    std::unique_ptr<Node> parse_class() {
        // after '['
        CharClass cls;
        if (peek() == '^') { cls.negated = true; ++pos_; }
        bool first = true;
        for (;;) {
            if (at_end()) fail("missing ']'");
            uint32_t c = next();
            if (c == ']' && !first) break;
            first = false;
            uint32_t lo = c;
            if (c == '[') fail("nested classes are not supported (escape '[')");
            if (c == '\\') {
                ClassItem item;
                if (parse_escape(&item, &lo)) {
                    cls.items.push_back(item);
                    continue;
                }
            }
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
                ++pos_;
                hi = next();
                if (hi == '\\') {
                    ClassItem item;
                    if (parse_escape(&item, &hi)) fail("a class escape cannot end a range");
                }
                if (hi < lo) fail("range out of order");
            }
            ClassItem range;
            range.kind = ClassItem::kRange;
            range.lo = lo;
            range.hi = hi;
            cls.items.push_back(range);
        }
        return class_node(std::move(cls));
    }

    std::unique_ptr<Node> literal_node(uint32_t cp) {
        CharClass cls;
        ClassItem item;
        item.lo = item.hi = cp;
        cls.items.push_back(item);
        return class_node(std::move(cls));
    }

    std::unique_ptr<Node> parse_atom() {
        const uint32_t c = next();
        switch (c) {
            case '(': return parse_group();
            case '[': return parse_class();
            case '.': return simple(Node::kAny);
            case '^': return simple(Node::kBegin);
            case '$': return simple(Node::kEnd);
            case ')': fail("unbalanced ')'");
            case '*': case '+': case '?': fail("nothing to repeat");
            case '\\': {
                if (peek() == 'b') { ++pos_; return simple(Node::kWordBoundary); }
                if (peek() == 'B') { ++pos_; return simple(Node::kNotWordBoundary); }
                ClassItem item;
                uint32_t literal = 0;
                if (parse_escape(&item, &literal)) {
                    CharClass cls;
                    cls.items.push_back(item);
                    return class_node(std::move(cls));
                }
                return literal_node(literal);
            }
            default: return literal_node(c);
        }
    }

    std::string pattern_;
    std::vector<uint32_t> cps_;
    Regex::Program& program_;
    size_t pos_ = 0;
    bool fold_case_ = false;
};

// ---- Compiler: Node tree -> instructions ----

bool can_match_empty(const Node& n) {
    switch (n.kind) {
        case Node::kClass: case Node::kAny: return false;
        case Node::kConcat:
            for (const auto& k : n.kids) if (!can_match_empty(*k)) return false;
            return true;
        case Node::kAlt:
            for (const auto& k : n.kids) if (can_match_empty(*k)) return true;
            return false;
        case Node::kRepeat: return n.min == 0 || can_match_empty(*n.kids[0]);
        default: return true;  // empty, anchors, lookaheads
    }
}

class Compiler {
public:
    Compiler(Regex::Program& program, const std::string& pattern) : program_(program), pattern_(pattern) {}

    int compile_program(const Node& root) {
        program_.codes.emplace_back();
        const int index = int(program_.codes.size()) - 1;
        Code code;
        emit(root, code);
        code.push_back({Op::kMatch});
        program_.codes[index] = std::move(code);
        return index;
    }

private:
    static int here(const Code& code) { return int(code.size()); }

    void emit(const Node& n, Code& code) {
        switch (n.kind) {
            case Node::kEmpty: break;
            case Node::kClass: code.push_back({Op::kClass, false, n.class_index}); break;
            case Node::kAny: code.push_back({Op::kAny}); break;
            case Node::kBegin: code.push_back({Op::kBegin}); break;
            case Node::kEnd: code.push_back({Op::kEnd}); break;
            case Node::kWordBoundary: code.push_back({Op::kWordBoundary}); break;
            case Node::kNotWordBoundary: code.push_back({Op::kNotWordBoundary}); break;
            case Node::kConcat:
                for (const auto& k : n.kids) emit(*k, code);
                break;
            case Node::kAlt: {
                std::vector<int> jumps;
                for (size_t i = 0; i < n.kids.size(); ++i) {
                    if (i + 1 < n.kids.size()) {
                        const int split = here(code);
                        code.push_back({Op::kSplit});
                        code[split].x = split + 1;
                        emit(*n.kids[i], code);
                        jumps.push_back(here(code));
                        code.push_back({Op::kJmp});
                        code[split].y = here(code);
                    } else {
                        emit(*n.kids[i], code);
                    }
                }
                for (int j : jumps) code[j].x = here(code);
                break;
            }
            case Node::kRepeat: emit_repeat(n, code); break;
            case Node::kLookahead: {
                Compiler sub(program_, pattern_);
                const int index = sub.compile_program(*n.kids[0]);
                code.push_back({Op::kLook, n.negate, index});
                break;
            }
        }
    }

    // A split that prefers entering `body` when greedy, skipping it when lazy.
    static void set_split(Inst& split, int body, int skip, bool greedy) {
        split.x = greedy ? body : skip;
        split.y = greedy ? skip : body;
    }

    void emit_repeat(const Node& n, Code& code) {
        const Node& body = *n.kids[0];
        for (int i = 0; i < n.min; ++i) emit(body, code);
        if (n.max == kUnbounded) {
            if (can_match_empty(body))
                throw RegexError("regex '" + pattern_ + "': a repeated group that can match empty text is not supported");
            const int split = here(code);
            code.push_back({Op::kSplit});
            emit(body, code);
            code.push_back({Op::kJmp, false, 0, split});
            set_split(code[split], split + 1, here(code), n.greedy);
            return;
        }
        std::vector<int> splits;
        for (int i = n.min; i < n.max; ++i) {
            splits.push_back(here(code));
            code.push_back({Op::kSplit});
            emit(body, code);
        }
        for (int s : splits) set_split(code[s], s + 1, here(code), n.greedy);
    }

    Regex::Program& program_;
    const std::string& pattern_;
};

// ---- Machine ----

struct Thread {
    int pc;
    size_t pos;
};

struct Machine {
    const Regex::Program& program;
    const uint32_t* text;
    size_t begin, end;
    std::vector<Thread>& stack;  // shared by nested lookaheads; each run uses the part above its base

    bool word_at(size_t p) const { return p >= begin && p < end && is_ascii_word(text[p]); }

    // Runs codes[code_index] anchored at `pos`; on success sets *match_end.
    bool run(int code_index, size_t pos, size_t* match_end) {
        const Code& code = program.codes[size_t(code_index)];
        const size_t base = stack.size();
        stack.push_back({0, pos});
        while (stack.size() > base) {
            Thread t = stack.back();
            stack.pop_back();
            for (;;) {
                const Inst& in = code[size_t(t.pc)];
                bool ok = true;
                switch (in.op) {
                    case Op::kClass:
                        ok = t.pos < end && program.classes[size_t(in.arg)].matches(text[t.pos]);
                        if (ok) { ++t.pos; ++t.pc; }
                        break;
                    case Op::kAny:
                        ok = t.pos < end && text[t.pos] != '\n' && text[t.pos] != '\r';
                        if (ok) { ++t.pos; ++t.pc; }
                        break;
                    case Op::kSplit:
                        stack.push_back({in.y, t.pos});
                        t.pc = in.x;
                        break;
                    case Op::kJmp: t.pc = in.x; break;
                    case Op::kMatch:
                        *match_end = t.pos;
                        stack.resize(base);
                        return true;
                    case Op::kLook: {
                        size_t ignored = 0;
                        ok = run(in.arg, t.pos, &ignored) != in.negate;
                        ++t.pc;
                        break;
                    }
                    case Op::kBegin: ok = t.pos == begin; ++t.pc; break;
                    case Op::kEnd: ok = t.pos == end; ++t.pc; break;
                    case Op::kWordBoundary: ok = word_at(t.pos - 1) != word_at(t.pos); ++t.pc; break;
                    case Op::kNotWordBoundary: ok = word_at(t.pos - 1) == word_at(t.pos); ++t.pc; break;
                }
                if (!ok) break;  // this thread dies; resume the next alternative
            }
        }
        return false;
    }
};

}  // namespace

Regex::Regex(std::string_view pattern) : pattern_(pattern), program_(std::make_unique<Program>()) {
    Parser parser(pattern_, *program_);
    std::unique_ptr<Node> root = parser.parse();
    Compiler(*program_, pattern_).compile_program(*root);  // codes[0]; lookahead bodies follow
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::optional<Regex::Match> Regex::search(const uint32_t* text, size_t begin, size_t end, size_t from) const {
    thread_local std::vector<Thread> stack;
    Machine machine{*program_, text, begin, end, stack};
    for (size_t start = from; start <= end; ++start) {
        size_t match_end = 0;
        if (machine.run(0, start, &match_end)) return Match{start, match_end};
    }
    return std::nullopt;
}

}  // namespace vkllm::tokenizer
