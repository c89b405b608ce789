// Tokenizer against llama.cpp: the vocab test files (../shared/models/vocab/*.gguf and, when the
// llama-oracle is installed, every models/ggml-vocab-*.gguf of its llama.cpp source with .inp
// cases and .out ids, made with Hugging Face tokenizers and passed by llama.cpp), the Unigram
// vocabulary llama.cpp ships without cases (ids from llama.cpp in tests/tokenizer/golden), the
// stories260K golden file made by the llama-oracle, plus small synthetic vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gguf/gguf.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

using vkllm::tokenizer::Tokenizer;
using vkllm::tokenizer::TokenizerError;
using vkllm::tokenizer::TokenType;
using vkllm::tokenizer::Utf8Stream;

namespace {

std::string read_text(const std::string& path) {
    const std::vector<uint8_t> bytes = vkllm::test::read_file(path);
    return std::string(bytes.begin(), bytes.end());
}

struct VocabCase {
    std::string text;
    std::vector<int32_t> ids;
};

// Cases as llama.cpp's tests/test-tokenizer-0 reads them: the .inp is split at every
// "\n__ggml_vocab_test__\n" (text after the last separator, empty here, is not a case);
// the .out has one line of space-separated ids per case.
std::vector<VocabCase> read_cases(const std::string& inp_path, const std::string& out_path) {
    const std::string inp = read_text(inp_path);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::istringstream out(read_text(out_path));
    std::vector<VocabCase> cases;
    std::string line;
    for (size_t i = 0; std::getline(out, line); ++i) {
        if (i >= texts.size()) throw std::runtime_error(out_path + " has more lines than " + inp_path + " has cases");
        VocabCase c{texts[i], {}};
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) c.ids.push_back(id);
        cases.push_back(std::move(c));
    }
    if (cases.size() != texts.size()) throw std::runtime_error(inp_path + " and " + out_path + " disagree on the case count");
    return cases;
}

std::vector<VocabCase> read_cases(const std::string& gguf_path) {
    return read_cases(gguf_path + ".inp", gguf_path + ".out");
}

// The llama-oracle's copy of llama.cpp's vocab test files ($ORACLE_HOME, else
// ~/.cache/llama-oracle: ../shared/tools/llama-oracle/setup.sh), or "" when it is not installed.
std::string oracle_models_dir() {
    const char* env = std::getenv("ORACLE_HOME");
    const char* home = std::getenv("HOME");
    const std::string dir = (env ? std::string(env) : std::string(home ? home : "") + "/.cache/llama-oracle") +
                            "/src/models";
    return std::filesystem::exists(dir + "/ggml-vocab-gemma-4.gguf") ? dir : std::string();
}

// ../shared's vocab test files, then the oracle's that ../shared lacks (those with cases).
std::vector<std::string> vocab_files(const std::string& shared) {
    std::vector<std::string> files;
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(shared + "/models/vocab"))
        if (e.path().extension() == ".gguf") {
            files.push_back(e.path().string());
            names.push_back(e.path().filename().string());
        }
    if (const std::string oracle = oracle_models_dir(); !oracle.empty())
        for (const auto& e : std::filesystem::directory_iterator(oracle)) {
            const std::string name = e.path().filename().string();
            if (e.path().extension() == ".gguf" && std::filesystem::exists(e.path().string() + ".inp") &&
                std::find(names.begin(), names.end(), name) == names.end())
                files.push_back(e.path().string());
        }
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
        return std::filesystem::path(a).filename() < std::filesystem::path(b).filename();
    });
    return files;
}

// Loading a 150k-token vocabulary takes a moment: each file is loaded once per program.
const Tokenizer& load(const std::string& path) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    auto& slot = cache[path];
    if (!slot) slot = Tokenizer::from_gguf(*vkllm::gguf::File::open(path));
    return *slot;
}

std::string show(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += std::to_string(id) + " ";
    return s;
}

std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            const char c = s[++i];
            out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

TEST(VocabFiles, EveryCaseMatchesLlamaCpp) {
    VKLLM_REQUIRE_SHARED(shared);
    const auto files = vocab_files(shared);
    ASSERT_GE(files.size(), 6u) << "expected the vocab test files in " << shared << "/models/vocab";
    for (const std::string& path : files) {
        SCOPED_TRACE(path);
        const Tokenizer& tok = load(path);
        const auto cases = read_cases(path);
        ASSERT_GT(cases.size(), 40u);
        for (size_t i = 0; i < cases.size(); ++i) {
            const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
            EXPECT_EQ(got, cases[i].ids) << "case " << i << " '" << cases[i].text << "'\n  got:      " << show(got)
                                         << "\n  expected: " << show(cases[i].ids);
        }
    }
}

TEST(VocabFiles, OracleFixturesIncludeGemma4) {
    VKLLM_REQUIRE_SHARED(shared);
    if (oracle_models_dir().empty()) GTEST_SKIP() << "the llama-oracle is not installed: only ../shared's vocab files ran";
    const auto files = vocab_files(shared);
    EXPECT_GE(files.size(), 15u);  // every llama.cpp vocab test file with cases
    const auto gemma = std::find_if(files.begin(), files.end(), [](const std::string& f) {
        return f.find("ggml-vocab-gemma-4.gguf") != std::string::npos;
    });
    ASSERT_NE(gemma, files.end());
    const Tokenizer& tok = load(*gemma);
    EXPECT_EQ(tok.kind(), "gemma4 (SentencePiece-style BPE, pre=gemma4)");
    EXPECT_TRUE(tok.add_bos());
    EXPECT_EQ(tok.bos(), tok.find_token("<bos>"));
    EXPECT_TRUE(tok.is_eog(tok.find_token("<turn|>")));
    EXPECT_FALSE(tok.is_eog(tok.find_token("</s>")));  // plain text in Gemma 4
    // Spaces are U+2581 inside tokens and come back as spaces; bytes without a token are <0xXX>.
    const auto ids = tok.encode("Hello  world\n\n\xF0\x9F\xA6\x99", true, false);
    EXPECT_EQ(ids.front(), tok.bos());
    EXPECT_EQ(tok.decode(ids), "Hello  world\n\n\xF0\x9F\xA6\x99");
    EXPECT_EQ(tok.token_to_piece(tok.find_token("\xE2\x96\x81world")), " world");
}

TEST(VocabFiles, DecodeRoundTrips) {
    VKLLM_REQUIRE_SHARED(shared);
    for (const std::string& path : vocab_files(shared)) {
        SCOPED_TRACE(path);
        const Tokenizer& tok = load(path);
        if (tok.kind() == "bert (WordPiece)") continue;  // lower-cases and drops whitespace: not lossless
        for (const VocabCase& c : read_cases(path)) {
            EXPECT_EQ(tok.decode(tok.encode(c.text, false, false)), c.text);
            // With BOS (which renders as nothing) the text comes back the same.
            EXPECT_EQ(tok.decode(tok.encode(c.text, true, false)), c.text);
        }
    }
}

TEST(VocabFiles, KindsAndSpecialTokens) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string dir = shared + "/models/vocab/ggml-vocab-";
    EXPECT_EQ(load(dir + "llama-spm.gguf").kind(), "llama (SentencePiece)");
    EXPECT_EQ(load(dir + "phi-3.gguf").kind(), "llama (SentencePiece)");
    EXPECT_EQ(load(dir + "gpt-2.gguf").kind(), "gpt2 (byte-level BPE, pre=gpt-2)");
    EXPECT_EQ(load(dir + "llama-bpe.gguf").kind(), "gpt2 (byte-level BPE, pre=llama-bpe)");
    EXPECT_EQ(load(dir + "qwen2.gguf").kind(), "gpt2 (byte-level BPE, pre=qwen2)");
    EXPECT_EQ(load(dir + "deepseek-llm.gguf").kind(), "gpt2 (byte-level BPE, pre=deepseek-llm)");

    const Tokenizer& llama3 = load(dir + "llama-bpe.gguf");
    EXPECT_EQ(llama3.n_vocab(), 128256);
    EXPECT_EQ(llama3.bos(), llama3.find_token("<|begin_of_text|>"));
    EXPECT_TRUE(llama3.add_bos());  // the llama3 pre-tokenizer default; the file has no add_bos key
    EXPECT_EQ(llama3.eot(), llama3.find_token("<|eot_id|>"));
    EXPECT_TRUE(llama3.is_eog(llama3.eot()));
    EXPECT_TRUE(llama3.is_eog(llama3.eos()));
    EXPECT_FALSE(llama3.is_eog(llama3.bos()));
    EXPECT_EQ(llama3.encode("Hi", true, false).front(), llama3.bos());

    const Tokenizer& qwen = load(dir + "qwen2.gguf");
    EXPECT_FALSE(qwen.add_bos());  // the qwen2 pre-tokenizer does not add one
    EXPECT_TRUE(qwen.is_eog(qwen.find_token("<|im_end|>")));
    EXPECT_EQ(qwen.token_type(qwen.find_token("<|im_start|>")), TokenType::Control);

    const Tokenizer& phi3 = load(dir + "phi-3.gguf");
    EXPECT_TRUE(phi3.is_eog(phi3.find_token("<|end|>")));
    EXPECT_TRUE(phi3.is_eog(phi3.eos()));
    EXPECT_THROW(phi3.token_to_piece(phi3.n_vocab()), TokenizerError);
    EXPECT_THROW(phi3.token_to_piece(-1), TokenizerError);
}

TEST(VocabFiles, SpecialTokenTextIsParsedOnlyWhenAsked) {
    VKLLM_REQUIRE_SHARED(shared);
    const Tokenizer& qwen = load(shared + "/models/vocab/ggml-vocab-qwen2.gguf");
    const int32_t start = qwen.find_token("<|im_start|>");
    const int32_t end = qwen.find_token("<|im_end|>");
    const std::string chat = "<|im_start|>user\nHello<|im_end|>";

    const auto parsed = qwen.encode(chat, false, true);
    ASSERT_GE(parsed.size(), 4u);
    EXPECT_EQ(parsed.front(), start);
    EXPECT_EQ(parsed.back(), end);
    // Between the two special tokens is exactly the plain tokenization of the text.
    const auto inner = qwen.encode("user\nHello", false, false);
    EXPECT_EQ(std::vector<int32_t>(parsed.begin() + 1, parsed.end() - 1), inner);
    EXPECT_EQ(qwen.decode(parsed), "user\nHello");  // control tokens render as nothing
    EXPECT_EQ(qwen.decode(parsed, /*render_special=*/true), chat);

    const auto plain = qwen.encode(chat, false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), start), 0);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
    EXPECT_EQ(qwen.decode(plain), chat);

    // SentencePiece: a space is put in front of the text after a special token, and Phi-3's
    // special tokens swallow the whitespace that follows them (as in llama.cpp).
    const Tokenizer& phi3 = load(shared + "/models/vocab/ggml-vocab-phi-3.gguf");
    const int32_t user = phi3.find_token("<|user|>");
    const auto phi_ids = phi3.encode("<|user|>\nHi", false, true);
    ASSERT_FALSE(phi_ids.empty());
    EXPECT_EQ(phi_ids.front(), user);
    const auto hi = phi3.encode("Hi", false, false);
    EXPECT_EQ(std::vector<int32_t>(phi_ids.begin() + 1, phi_ids.end()), hi);
}

TEST(VocabFiles, UserDefinedTokensAreAlwaysMatchedWhole) {
    VKLLM_REQUIRE_SHARED(shared);
    const Tokenizer& ds = load(shared + "/models/vocab/ggml-vocab-deepseek-llm.gguf");
    const int32_t o_slash = ds.find_token("ø");
    ASSERT_GE(o_slash, 0);
    ASSERT_EQ(ds.token_type(o_slash), TokenType::UserDefined);
    const auto ids = ds.encode("søn", false, false);
    EXPECT_NE(std::find(ids.begin(), ids.end(), o_slash), ids.end()) << show(ids);
    EXPECT_EQ(ds.decode(ids), "søn");
}

TEST(Stories260K, MatchesTheOracleWithBos) {
    VKLLM_REQUIRE_SHARED(shared);
    const Tokenizer& tok = load(shared + "/models/stories260K/stories260K-F32.gguf");
    EXPECT_EQ(tok.kind(), "llama (SentencePiece)");
    EXPECT_EQ(tok.n_vocab(), 512);
    EXPECT_TRUE(tok.add_bos());
    EXPECT_EQ(tok.bos(), 1);
    EXPECT_EQ(tok.eos(), 2);
    EXPECT_EQ(tok.pad(), -1);  // the file stores 0xFFFFFFFF for "none"

    std::ifstream golden(vkllm::test::source_dir() + "/tests/tokenizer/golden/stories260K_tokens.txt");
    ASSERT_TRUE(golden) << "golden file missing";
    size_t n_lines = 0;
    for (std::string line; std::getline(golden, line); ++n_lines) {
        const size_t tab = line.find('\t');
        ASSERT_NE(tab, std::string::npos);
        const std::string prompt = unescape(line.substr(0, tab));
        std::vector<int32_t> expected;
        std::istringstream ids(line.substr(tab + 1));
        for (int32_t id; ids >> id;) expected.push_back(id);
        SCOPED_TRACE(prompt);
        const auto with_bos = tok.encode(prompt, true, false);
        EXPECT_EQ(with_bos, expected);
        // Without BOS the rest is the same: the text start counts as "after a special token".
        EXPECT_EQ(tok.encode(prompt, false, false), std::vector<int32_t>(expected.begin() + 1, expected.end()));
        EXPECT_EQ(tok.decode(with_bos), prompt);
    }
    EXPECT_GE(n_lines, 5u);
    EXPECT_EQ(tok.encode("", true, false), std::vector<int32_t>{1});
    EXPECT_TRUE(tok.encode("", false, false).empty());
    EXPECT_EQ(tok.decode({1, 403, 407}), "Once upon");
    EXPECT_EQ(tok.decode({1, 403, 407}, /*render_special=*/true), "<s> Once upon");
}

TEST(Utf8Stream, HoldsBackUnfinishedCharacters) {
    const std::string text = "a\xC3\xA9\xF0\x9F\xA6\x99z";  // a é 🦙 z
    Utf8Stream stream;
    std::vector<std::string> outputs;
    for (char c : text) outputs.push_back(stream.push(std::string(1, c)));
    const std::vector<std::string> expected = {"a", "", "\xC3\xA9", "", "", "", "\xF0\x9F\xA6\x99", "z"};
    EXPECT_EQ(outputs, expected);
    EXPECT_EQ(stream.flush(), "");

    Utf8Stream cut;
    EXPECT_EQ(cut.push("ok\xE6\x9D"), "ok");  // first two bytes of 東
    EXPECT_EQ(cut.push("\xB1!"), "\xE6\x9D\xB1!");
    EXPECT_EQ(cut.push("\xE4"), "");
    EXPECT_EQ(cut.flush(), "\xE4");  // a truncated stream gives back what it held
    EXPECT_EQ(cut.flush(), "");
}

TEST(Utf8Stream, JoinsByteTokenPieces) {
    VKLLM_REQUIRE_SHARED(shared);
    const Tokenizer& tok = load(shared + "/models/stories260K/stories260K-F32.gguf");
    const std::string text = "東京 🦙";
    const auto ids = tok.encode(text, true, false);
    Utf8Stream stream;
    std::string streamed;
    size_t n_partial = 0;  // pieces that are not whole characters (byte-fallback tokens)
    for (int32_t id : ids) {
        const std::string piece = tok.token_to_piece(id);
        const std::string out = stream.push(piece);
        if (out.size() != piece.size()) ++n_partial;
        streamed += out;
    }
    streamed += stream.flush();
    EXPECT_GT(n_partial, 0u) << "the 512-token vocabulary spells these characters in bytes";
    EXPECT_EQ(streamed, " " + text);  // token pieces keep SentencePiece's leading space
}

// ---- Synthetic vocabularies (no shared files needed) ----

namespace {

std::unique_ptr<Tokenizer> tokenizer_from(vkllm::gguf::Writer& w) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    const auto file = vkllm::gguf::File::from_memory(bytes.data(), bytes.size(), "synthetic.gguf");
    return Tokenizer::from_gguf(*file);
}

// A SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, then a few pieces with scores.
vkllm::gguf::Writer tiny_spm() {
    using vkllm::gguf::Value;
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    std::vector<float> scores = {0, 0, 0};
    static const char* kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
        types.push_back(6);
        scores.push_back(0);
    }
    const std::vector<std::pair<std::string, float>> pieces = {
        {"\xE2\x96\x81", -1}, {"a", -2}, {"b", -2}, {"c", -2}, {"ab", -3}, {"bc", -1.5f},
        {"\xE2\x96\x81" "a", -4}, {"\xE2\x96\x81" "ab", -2.5f}};
    for (const auto& [t, s] : pieces) {
        tokens.push_back(t);
        types.push_back(1);
        scores.push_back(s);
    }
    vkllm::gguf::Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", Value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", Value::from_f32s(scores));
    w.set("tokenizer.ggml.token_type", Value::from_i32s(types));
    return w;
}

}  // namespace

TEST(Synthetic, SentencePieceMergesByScoreWithByteFallback) {
    auto w = tiny_spm();
    const auto tok = tokenizer_from(w);
    const int32_t sp_ab = tok->find_token("\xE2\x96\x81" "ab");
    const int32_t bc = tok->find_token("bc");
    const int32_t a = tok->find_token("a");
    const int32_t sp = tok->find_token("\xE2\x96\x81");
    // "▁abc": best pair first: "bc" (-1.5) beats "▁a" (-4) and "ab" (-3); then "▁"+"a" (-4)
    // is the only pair left ("▁abc" and "▁bc"/"abc" are not tokens).
    EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int32_t>{tok->find_token("\xE2\x96\x81" "a"), bc}));
    // "▁ab": "▁ab" needs "▁a"+"b" or "▁"+"ab": "ab" (-3) merges first, then "▁"+"ab" (-2.5).
    EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{sp_ab}));
    // Unknown characters fall back to their UTF-8 bytes.
    const auto ids = tok->encode("a\xC3\xA9", false, false);  // "aé"
    EXPECT_EQ(ids, (std::vector<int32_t>{tok->find_token("\xE2\x96\x81" "a"), 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok->decode(ids), "a\xC3\xA9");
    EXPECT_EQ(tok->token_to_piece(3 + 0xC3), "\xC3");
    EXPECT_EQ(tok->encode("a", true, false), (std::vector<int32_t>{1, tok->find_token("\xE2\x96\x81" "a")}));
    EXPECT_EQ(tok->decode({sp, a}), "a");  // the prefix space is removed once
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_EQ(tok->unk(), 0);
}

TEST(Synthetic, AddSpacePrefixCanBeTurnedOff) {
    auto w = tiny_spm();
    w.set("tokenizer.ggml.add_space_prefix", vkllm::gguf::Value::from_bool(false));
    w.set("tokenizer.ggml.add_bos_token", vkllm::gguf::Value::from_bool(false));
    const auto tok = tokenizer_from(w);
    EXPECT_FALSE(tok->add_space_prefix());
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{tok->find_token("ab")}));
    EXPECT_EQ(tok->decode(tok->encode(" ab", false, false)), " ab");
}

TEST(Synthetic, OutOfRangeSpecialIdsFallBackWithAWarning) {
    using vkllm::gguf::Value;
    auto w = tiny_spm();
    const auto clean = tokenizer_from(w);
    EXPECT_TRUE(clean->warnings().empty());

    w.set("tokenizer.ggml.bos_token_id", Value::from_u32(5000));
    w.set("tokenizer.ggml.eos_token_id", Value::from_u32(0xFFFFFFFFu));  // the usual "none": no warning
    w.set("tokenizer.ggml.eot_token_id", Value::from_u32(99999));
    const auto tok = tokenizer_from(w);
    EXPECT_EQ(tok->bos(), 1);  // SentencePiece's default
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_EQ(tok->eot(), -1);
    ASSERT_EQ(tok->warnings().size(), 2u);
    EXPECT_EQ(tok->warnings()[0], "tokenizer.ggml.bos_token_id is 5000, outside the vocabulary of " +
                                      std::to_string(tok->n_vocab()) + " tokens; using the default 1");
    EXPECT_EQ(tok->warnings()[1], "tokenizer.ggml.eot_token_id is 99999, outside the vocabulary of " +
                                      std::to_string(tok->n_vocab()) + " tokens; using none");
}

TEST(Synthetic, UnsupportedTokenizersAreNamed) {
    using vkllm::gguf::Value;
    auto expect_error = [](vkllm::gguf::Writer& w, const std::string& needle) {
        try {
            tokenizer_from(w);
            ADD_FAILURE() << "expected an error mentioning " << needle;
        } catch (const TokenizerError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    vkllm::gguf::Writer rwkv;
    rwkv.set("tokenizer.ggml.model", Value::from_string("rwkv"));
    rwkv.set("tokenizer.ggml.tokens", Value::from_strings({"a", "b"}));
    expect_error(rwkv, "'rwkv'");
    expect_error(rwkv, "supported: llama (SentencePiece BPE), gpt2 (byte-level BPE), gemma4 (SentencePiece-style BPE), "
                       "bert (WordPiece), t5 (SentencePiece Unigram)");

    vkllm::gguf::Writer odd_pre;
    odd_pre.set("tokenizer.ggml.model", Value::from_string("gpt2"));
    odd_pre.set("tokenizer.ggml.pre", Value::from_string("my-new-model"));
    odd_pre.set("tokenizer.ggml.tokens", Value::from_strings({"a", "b"}));
    odd_pre.set("tokenizer.ggml.merges", Value::from_strings({"a b"}));
    expect_error(odd_pre, "'my-new-model'");

    vkllm::gguf::Writer none;
    none.set("general.architecture", Value::from_string("llama"));
    expect_error(none, "tokenizer.ggml.model");

    vkllm::gguf::Writer no_merges;
    no_merges.set("tokenizer.ggml.model", Value::from_string("gpt2"));
    no_merges.set("tokenizer.ggml.tokens", Value::from_strings({"a", "b"}));
    expect_error(no_merges, "merges");

    auto short_scores = tiny_spm();
    short_scores.set("tokenizer.ggml.scores", Value::from_f32s({0.0f, 1.0f}));
    expect_error(short_scores, "tokenizer.ggml.scores");
}

TEST(Synthetic, ByteLevelBpeMergesByRank) {
    using vkllm::gguf::Value;
    // Byte-level symbols: 'Ġ' (U+0120) is the space byte.
    vkllm::gguf::Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("gpt2"));
    w.set("tokenizer.ggml.pre", Value::from_string("gpt-2"));
    w.set("tokenizer.ggml.tokens", Value::from_strings({"h", "e", "l", "o", "\xC4\xA0", "he", "ll", "hell", "hello",
                                                        "\xC4\xA0h", "<|endoftext|>"}));
    w.set("tokenizer.ggml.token_type", Value::from_i32s({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3}));
    w.set("tokenizer.ggml.merges", Value::from_strings({"l l", "h e", "he ll", "hell o", "\xC4\xA0 h"}));
    w.set("tokenizer.ggml.eos_token_id", Value::from_u32(10));
    const auto tok = tokenizer_from(w);
    EXPECT_EQ(tok->encode("hello", false, false), (std::vector<int32_t>{8}));
    // " hello" is one word (" ?\p{L}+"). Ranks: l l (0) < h e (1) < he ll (2) < hell o (3)
    // < Ġ h (4), so "hello" forms before "Ġ h" is reached, and "Ġ"+"hello" has no merge.
    EXPECT_EQ(tok->encode(" hello", false, false), (std::vector<int32_t>{4, 8}));
    EXPECT_EQ(tok->decode({4, 8}), " hello");
    EXPECT_EQ(tok->encode("<|endoftext|>", false, true), (std::vector<int32_t>{10}));
    EXPECT_TRUE(tok->is_eog(10));
    EXPECT_EQ(tok->bos(), -1);
    EXPECT_FALSE(tok->add_bos());
}

// WordPiece (BERT): llama.cpp's bert-bge vocab test file, committed in tests/tokenizer/golden
// (0.6 MB; copied from the llama.cpp source bundle's models/).
TEST(WordPiece, EveryBgeCaseMatchesLlamaCpp) {
    const std::string path = vkllm::test::source_dir() + "/tests/tokenizer/golden/ggml-vocab-bert-bge.gguf";
    const Tokenizer& tok = load(path);
    EXPECT_EQ(tok.kind(), "bert (WordPiece)");
    const auto cases = read_cases(path);
    ASSERT_GT(cases.size(), 40u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
        EXPECT_EQ(got, cases[i].ids) << "case " << i << " '" << cases[i].text << "'\n  got:      " << show(got)
                                     << "\n  expected: " << show(cases[i].ids);
    }
}

TEST(WordPiece, BgeSpecialTokensAndDecode) {
    const Tokenizer& tok = load(vkllm::test::source_dir() + "/tests/tokenizer/golden/ggml-vocab-bert-bge.gguf");
    EXPECT_EQ(tok.bos(), tok.find_token("[CLS]"));
    EXPECT_EQ(tok.sep(), tok.find_token("[SEP]"));
    EXPECT_EQ(tok.mask(), tok.find_token("[MASK]"));
    EXPECT_EQ(tok.unk(), tok.find_token("[UNK]"));
    EXPECT_EQ(tok.pad(), tok.find_token("[PAD]"));
    EXPECT_TRUE(tok.add_bos());
    EXPECT_TRUE(tok.add_sep());
    const auto ids = tok.encode("Hello, world!", true, false);
    ASSERT_EQ(ids.size(), 6u);
    EXPECT_EQ(ids.front(), tok.bos());
    EXPECT_EQ(ids.back(), tok.sep());
    EXPECT_EQ(tok.decode(ids), "hello , world !");  // every word piece starts with a space
    // [MASK] is a control token: text only with parse_special.
    const auto masked = tok.encode("the [MASK] sat", false, true);
    ASSERT_EQ(masked.size(), 3u);
    EXPECT_EQ(masked[1], tok.mask());
    EXPECT_NE(tok.encode("the [MASK] sat", false, false).size(), 3u);
}

TEST(WordPiece, PreTokenization) {
    using vkllm::tokenizer::detail::wordpiece_words;
    using V = std::vector<std::string>;
    EXPECT_EQ(wordpiece_words("Hello, World!", true, true), (V{"hello", ",", "world", "!"}));
    EXPECT_EQ(wordpiece_words("Hello", false, false), (V{"Hello"}));
    // Accents go with lower-casing: "Äpfel café" -> "apfel cafe"; kept when strip_accents is off.
    EXPECT_EQ(wordpiece_words("\xC3\x84pfel caf\xC3\xA9", true, true), (V{"apfel", "cafe"}));
    EXPECT_EQ(wordpiece_words("caf\xC3\xA9", true, false), (V{"caf\xC3\xA9"}));
    // CJK ideographs are words of one character; "$" (an ASCII symbol) too; "½" stays in its word.
    EXPECT_EQ(wordpiece_words("ab\xE6\x88\x91\xE6\x83\xB3$3\xC2\xBD", true, true),
              (V{"ab", "\xE6\x88\x91", "\xE6\x83\xB3", "$", "3\xC2\xBD"}));
    // Control characters vanish, whitespace of every kind splits.
    EXPECT_EQ(wordpiece_words("a\x01" "b\tc\xE3\x80\x80" "d", true, true), (V{"ab", "c", "d"}));
}

TEST(WordPiece, GreedyLongestMatchAndUnknownWords) {
    using vkllm::gguf::Value;
    const std::string w = "\xE2\x96\x81";  // word start
    vkllm::gguf::Writer wr;
    wr.set("tokenizer.ggml.model", Value::from_string("bert"));
    // ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 ▁un 6 ▁unaff 7 able 8 aff 9 ▁a 10 ble 11 a
    wr.set("tokenizer.ggml.tokens", Value::from_strings({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", w + "un",
                                                         w + "unaff", "able", "aff", w + "a", "ble", "a"}));
    wr.set("tokenizer.ggml.token_type", Value::from_i32s({3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1}));
    wr.set("tokenizer.ggml.unknown_token_id", Value::from_u32(1));
    wr.set("tokenizer.ggml.seperator_token_id", Value::from_u32(3));
    wr.set("tokenizer.ggml.cls_token_id", Value::from_u32(2));
    wr.set("tokenizer.ggml.bos_token_id", Value::from_u32(2));
    wr.set("tokenizer.ggml.mask_token_id", Value::from_u32(4));
    const auto tok = tokenizer_from(wr);
    // Longest first: "▁unaff" + "able", not "▁un" + "aff" + "able".
    EXPECT_EQ(tok->encode("unaffable", false, false), (std::vector<int32_t>{6, 7}));
    // A word with a part nothing matches is [UNK] as a whole; the next word is not affected.
    EXPECT_EQ(tok->encode("unaffablex a", true, false), (std::vector<int32_t>{2, 1, 9, 3}));
    EXPECT_EQ(tok->decode({6, 7, 9}), "unaffable a");
    EXPECT_EQ(tok->mask(), 4);
}

// ---- Unigram (SentencePiece Unigram, `tokenizer.ggml.model` "t5") ----

// llama.cpp ships nomic-bert-moe's Unigram vocabulary (XLM-RoBERTa's 250k pieces with a
// precompiled character map) without cases: the cases are llama-spm's, the ids llama.cpp's own
// (scripts/make-golden-unigram.sh), committed in tests/tokenizer/golden.
TEST(Unigram, EveryNomicBertMoeCaseMatchesLlamaCpp) {
    const std::string oracle = oracle_models_dir();
    if (oracle.empty()) GTEST_SKIP() << "the llama-oracle is not installed (../shared/tools/llama-oracle/setup.sh): "
                                        "its ggml-vocab-nomic-bert-moe.gguf is the Unigram vocabulary";
    const Tokenizer& tok = load(oracle + "/ggml-vocab-nomic-bert-moe.gguf");
    EXPECT_EQ(tok.kind(), "t5 (SentencePiece Unigram)");
    const std::string golden = vkllm::test::source_dir() + "/tests/tokenizer/golden/nomic-bert-moe";
    const auto cases = read_cases(golden + ".inp", golden + ".out");
    ASSERT_GT(cases.size(), 40u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
        EXPECT_EQ(got, cases[i].ids) << "case " << i << " '" << cases[i].text << "'\n  got:      " << show(got)
                                     << "\n  expected: " << show(cases[i].ids);
    }
    // The file's add_bos/add_eos: <s> text </s>; the space put in front is not part of the text.
    const auto ids = tok.encode("Hello world", true, false);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids.front(), tok.bos());
    EXPECT_EQ(ids.back(), tok.eos());
    EXPECT_EQ(tok.decode(ids), "Hello world");
}

namespace {

// A Unigram vocabulary without a character map: <pad> </s> <unk>, then pieces with
// log-probability scores.
vkllm::gguf::Writer tiny_unigram(const std::vector<std::pair<std::string, float>>& pieces) {
    using vkllm::gguf::Value;
    std::vector<std::string> tokens = {"<pad>", "</s>", "<unk>"};
    std::vector<int32_t> types = {3, 3, 2};
    std::vector<float> scores = {0, 0, 0};
    for (const auto& [t, s] : pieces) {
        tokens.push_back(t);
        types.push_back(1);
        scores.push_back(s);
    }
    vkllm::gguf::Writer w;
    w.set("tokenizer.ggml.model", Value::from_string("t5"));
    w.set("tokenizer.ggml.tokens", Value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", Value::from_f32s(scores));
    w.set("tokenizer.ggml.token_type", Value::from_i32s(types));
    w.set("tokenizer.ggml.add_space_prefix", Value::from_bool(true));
    return w;
}

}  // namespace

TEST(Unigram, ViterbiPicksTheBestScoringSegmentation) {
    const std::string sp = "\xE2\x96\x81";
    // ids: 3 ▁ 4 a 5 b 6 ab 7 ▁a 8 ▁ab 9 c 10 bc 11 ▁abc
    auto w = tiny_unigram({{sp, -1}, {"a", -2}, {"b", -2}, {"ab", -2.5f}, {sp + "a", -2}, {sp + "ab", -6},
                           {"c", -3}, {"bc", -1}, {sp + "abc", -9}});
    const auto tok = tokenizer_from(w);
    EXPECT_EQ(tok->kind(), "t5 (SentencePiece Unigram)");
    // "▁abc": ▁a + bc = -3 beats ▁ab + c = -9, ▁abc = -9, ▁ + ab + c = -6.5, ▁ + a + bc = -4.
    EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int32_t>{7, 10}));
    // "▁ab": ▁ + ab = -3.5 beats ▁a + b = -4, ▁ab = -6, ▁ + a + b = -5.
    EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{3, 6}));
    // Unknown characters: each costs the lowest score minus 10, and a run is one <unk>.
    EXPECT_EQ(tok->encode("a\xC3\xA9\xC3\xA9" "c", false, false), (std::vector<int32_t>{7, 2, 9}));
    // Spaces: each becomes ▁ (remove_extra_whitespaces is off); EOS is added by default.
    EXPECT_EQ(tok->encode("a  a", true, false), (std::vector<int32_t>{7, 3, 7, 1}));
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->decode({7, 10}), "abc");

    w.set("tokenizer.ggml.remove_extra_whitespaces", vkllm::gguf::Value::from_bool(true));
    const auto merged = tokenizer_from(w);
    EXPECT_EQ(merged->encode("  a   a ", false, false), (std::vector<int32_t>{7, 7}));
}

TEST(Unigram, MalformedCharacterMapIsRefused) {
    auto w = tiny_unigram({{"a", -1}});
    w.set("tokenizer.ggml.precompiled_charsmap", vkllm::gguf::Value::from_i32s({200, 0, 0, 0, 1, 2}));
    try {
        tokenizer_from(w);
        ADD_FAILURE() << "expected an error";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("precompiled_charsmap"), std::string::npos) << e.what();
    }
}
