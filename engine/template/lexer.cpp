#include "template/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "template/value.h"

namespace vkllm::jinja {

Source::Source(const std::string& raw) {
    text.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            text += '\n';
            if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
        } else {
            text += raw[i];
        }
    }
    // jinja2 (keep_trailing_newline=False) drops a single newline at the very end.
    if (!text.empty() && text.back() == '\n') text.pop_back();
    line_starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
        if (text[i] == '\n') line_starts.push_back(i + 1);
}

void Source::position(size_t offset, int& line, int& column) const {
    auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
    size_t start = *(it - 1);
    line = int(it - line_starts.begin());
    column = 1;
    for (size_t i = start; i < offset && i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++column;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// str.rstrip() of the whitespace jinja2 strips (ASCII whitespace; enough for templates).
std::string rstrip(const std::string& s) {
    size_t end = s.size();
    while (end > 0 && is_space(s[end - 1])) --end;
    return s.substr(0, end);
}

class Lexer {
public:
    explicit Lexer(const Source& source) : src_(source), s_(source.text) {}

    std::vector<Token> run() {
        bool line_starting = true;  // did the previous match end with a newline
        size_t pos = 0;
        while (pos < s_.size()) {
            size_t open = find_opener(pos);
            if (open == std::string::npos) {
                emit(Tok::Text, s_.substr(pos), pos);
                break;
            }
            char kind = s_[open + 1];  // '{', '%' or '#'
            char sign = open + 2 < s_.size() && (s_[open + 2] == '-' || s_[open + 2] == '+') ? s_[open + 2] : 0;
            std::string text = s_.substr(pos, open - pos);
            size_t raw_end = kind == '%' ? match_raw_begin(open) : 0;
            text = strip_before_tag(text, sign, kind != '{', line_starting);
            if (!text.empty()) emit(Tok::Text, text, pos);
            size_t after = open + 2 + (sign ? 1 : 0);
            if (raw_end) {
                pos = lex_raw(raw_end, line_starting);
            } else if (kind == '#') {
                pos = lex_comment(after, open, line_starting);
            } else {
                pos = lex_tag(after, kind == '%', open, line_starting);
            }
        }
        tokens_.push_back({Tok::End, "", s_.size()});
        return std::move(tokens_);
    }

private:
    const Source& src_;
    const std::string& s_;
    std::vector<Token> tokens_;

    [[noreturn]] void fail(const std::string& message, size_t offset) const {
        int line, column;
        src_.position(offset, line, column);
        throw Error(message, line, column);
    }

    void emit(Tok type, std::string text, size_t offset) { tokens_.push_back({type, std::move(text), offset}); }

    size_t find_opener(size_t pos) const {
        for (size_t i = s_.find('{', pos); i != std::string::npos; i = s_.find('{', i + 1))
            if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    // The text before a tag, after `{%-` (strip all trailing whitespace) or lstrip_blocks (strip
    // the spaces and tabs that begin the tag's line, for statements and comments only).
    static std::string strip_before_tag(const std::string& text, char sign, bool lstrip, bool line_starting) {
        if (sign == '-') return rstrip(text);
        if (sign == '+' || !lstrip) return text;
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            std::all_of(text.begin() + long(l_pos), text.end(), is_space))
            return text.substr(0, l_pos);
        return text;
    }

    // Skips spaces; returns the offset after the match or npos.
    size_t skip_spaces(size_t p) const {
        while (p < s_.size() && is_space(s_[p])) ++p;
        return p;
    }

    // The end of a statement or comment tag at p (`+%}`, `-%}` + whitespace, `%}` + one newline
    // with trim_blocks); 0 when there is none at p.
    size_t match_tag_end(size_t p, char close) const {
        auto at = [&](size_t q, const char* lit) { return s_.compare(q, std::char_traits<char>::length(lit), lit) == 0; };
        std::string end = {close, '}'};
        if (at(p, ("+" + end).c_str())) return p + 3;
        if (at(p, ("-" + end).c_str())) return skip_spaces(p + 3);
        if (at(p, end.c_str())) return p + 2 + (p + 2 < s_.size() && s_[p + 2] == '\n' ? 1 : 0);
        return 0;
    }

    // `{%[-+]? raw [-]%}`: the offset after it, or 0.
    size_t match_raw_begin(size_t open) const {
        size_t p = open + 2;
        if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
        p = skip_spaces(p);
        if (s_.compare(p, 3, "raw") != 0) return 0;
        p = skip_spaces(p + 3);
        if (s_.compare(p, 3, "-%}") == 0) return skip_spaces(p + 3);
        if (s_.compare(p, 2, "%}") == 0) return p + 2;  // no trim_blocks newline after raw
        return 0;
    }

    size_t lex_raw(size_t p, bool& line_starting) {
        line_starting = s_[p - 1] == '\n';
        for (size_t q = s_.find("{%", p); q != std::string::npos; q = s_.find("{%", q + 1)) {
            size_t r = q + 2;
            char sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r] : 0;
            if (sign) ++r;
            r = skip_spaces(r);
            if (s_.compare(r, 6, "endraw") != 0) continue;
            size_t end = match_tag_end(skip_spaces(r + 6), '%');
            if (!end) continue;
            std::string text = strip_before_tag(s_.substr(p, q - p), sign, true, line_starting);
            if (!text.empty()) emit(Tok::Text, text, p);
            line_starting = s_[end - 1] == '\n';
            return end;
        }
        fail("Missing end of raw directive", p);
    }

    size_t lex_comment(size_t p, size_t open, bool& line_starting) {
        for (size_t q = p; q < s_.size(); ++q) {
            if (size_t end = match_tag_end(q, '#')) {
                line_starting = s_[end - 1] == '\n';
                return end;
            }
        }
        fail("Missing end of comment tag", open);
    }

    size_t lex_tag(size_t p, bool block, size_t open, bool& line_starting) {
        emit(block ? Tok::BlockBegin : Tok::VarBegin, "", open);
        std::vector<char> balance;
        while (true) {
            if (p >= s_.size()) fail(block ? "unexpected end of template: missing '%}'" : "unexpected end of template: missing '}}'", open);
            if (balance.empty()) {
                size_t end = 0;
                if (block) end = match_tag_end(p, '%');
                else if (s_.compare(p, 3, "-}}") == 0) end = skip_spaces(p + 3);
                else if (s_.compare(p, 2, "}}") == 0) end = p + 2;
                if (end) {
                    emit(block ? Tok::BlockEnd : Tok::VarEnd, "", p);
                    line_starting = s_[end - 1] == '\n';
                    return end;
                }
            }
            char c = s_[p];
            if (is_space(c)) { ++p; continue; }
            if (std::isdigit(static_cast<unsigned char>(c))) { p = lex_number(p); continue; }
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                size_t q = p;
                while (q < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[q])) || s_[q] == '_')) ++q;
                emit(Tok::Name, s_.substr(p, q - p), p);
                p = q;
                continue;
            }
            if (c == '\'' || c == '"') { p = lex_string(p); continue; }
            static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
            bool matched = false;
            for (const char* op : two) {
                if (s_.compare(p, 2, op) == 0) {
                    emit(Tok::Op, op, p);
                    p += 2;
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (std::string("+-/*%~[](){}<>=.:|,;").find(c) == std::string::npos)
                fail(std::string("unexpected char '") + c + "'", p);
            if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
            if (c == ')' || c == ']' || c == '}') {
                if (balance.empty()) fail(std::string("unexpected '") + c + "'", p);
                if (balance.back() != c) fail(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", p);
                balance.pop_back();
            }
            emit(Tok::Op, std::string(1, c), p);
            ++p;
        }
    }

    size_t lex_digits(size_t p) const {  // (\d+_)*\d+
        while (p < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p])) ||
                                 (s_[p] == '_' && p + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p + 1])))))
            ++p;
        return p;
    }

    size_t lex_number(size_t p) {
        size_t q = lex_digits(p);
        bool is_float = false;
        if (q + 1 < s_.size() && s_[q] == '.' && std::isdigit(static_cast<unsigned char>(s_[q + 1])) &&
            !(p > 0 && s_[p - 1] == '.')) {
            q = lex_digits(q + 1);
            is_float = true;
        }
        if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E') && !(p > 0 && s_[p - 1] == '.')) {
            size_t r = q + 1;
            if (r < s_.size() && (s_[r] == '+' || s_[r] == '-')) ++r;
            if (r < s_.size() && std::isdigit(static_cast<unsigned char>(s_[r]))) {
                q = lex_digits(r);
                is_float = true;
            }
        }
        std::string text;
        for (size_t i = p; i < q; ++i)
            if (s_[i] != '_') text += s_[i];
        emit(is_float ? Tok::Float : Tok::Int, text, p);
        return q;
    }

    // A quoted string with Python's escapes (jinja2 decodes them as "unicode-escape").
    size_t lex_string(size_t p) {
        char quote = s_[p];
        std::string value;
        size_t q = p + 1;
        while (true) {
            if (q >= s_.size()) fail("unexpected end of string", p);
            char c = s_[q];
            if (c == quote) break;
            if (c != '\\') { value += c; ++q; continue; }
            if (q + 1 >= s_.size()) fail("unexpected end of string", p);
            char e = s_[q + 1];
            q += 2;
            switch (e) {
                case 'n': value += '\n'; break;
                case 't': value += '\t'; break;
                case 'r': value += '\r'; break;
                case '\\': value += '\\'; break;
                case '\'': value += '\''; break;
                case '"': value += '"'; break;
                case 'a': value += '\a'; break;
                case 'b': value += '\b'; break;
                case 'f': value += '\f'; break;
                case 'v': value += '\v'; break;
                case '0': value += '\0'; break;
                case '\n': break;
                case 'x': case 'u': case 'U': {
                    size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (q + n > s_.size()) fail("truncated \\" + std::string(1, e) + " escape", q - 2);
                    uint32_t cp = uint32_t(std::stoul(s_.substr(q, n), nullptr, 16));
                    value += encode_utf8(std::u32string(1, char32_t(cp)));
                    q += n;
                    break;
                }
                default: value += '\\'; value += e;  // unknown escapes stay as written
            }
        }
        emit(Tok::String, value, p);
        return q + 1;
    }
};

}  // namespace

std::vector<Token> tokenize(const Source& source) { return Lexer(source).run(); }

}  // namespace vkllm::jinja
