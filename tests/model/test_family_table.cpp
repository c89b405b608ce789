// The family table (engine/model/families.cpp) is the one place that knows architectures, and
// metadata_keys.h the one place that spells metadata keys: these tests read the engine's sources
// (VKLLM_SOURCE_DIR) and fail where an architecture name or a key's text appears elsewhere. They
// also check that the rows are consistent and that every row has a golden model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/families.h"
#include "model/metadata_keys.h"
#include "model/spec.h"
#include "test_support.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

struct Literal {
    std::string text;  // without the quotes
    int line = 0;
};

// The string literals of a C++ or GLSL source, comments skipped (a name in a comment is prose).
std::vector<Literal> string_literals(const std::string& src) {
    std::vector<Literal> out;
    int line = 1;
    for (size_t i = 0; i < src.size();) {
        const char c = src[i];
        if (c == '\n') {
            ++line;
            ++i;
        } else if (src.compare(i, 2, "//") == 0) {
            i = src.find('\n', i);
            if (i == std::string::npos) break;
        } else if (src.compare(i, 2, "/*") == 0) {
            const size_t end = src.find("*/", i + 2);
            const size_t stop = end == std::string::npos ? src.size() : end + 2;
            line += int(std::count(src.begin() + long(i), src.begin() + long(stop), '\n'));
            i = stop;
        } else if (c == '"' || c == '\'') {
            Literal lit;
            lit.line = line;
            size_t j = i + 1;
            while (j < src.size() && src[j] != c) {
                if (src[j] == '\\' && j + 1 < src.size()) lit.text += src[j++];
                if (src[j] == '\n') ++line;
                lit.text += src[j++];
            }
            if (c == '"') out.push_back(lit);
            i = j + 1;
        } else {
            ++i;
        }
    }
    return out;
}

// Whether `word` occurs in `text` not inside a longer name: the characters around it are not
// letters, digits, '_' or '-' (and, where `dot_joins`, not '.' either).
bool contains_word(const std::string& text, const std::string& word, bool dot_joins) {
    auto joins = [&](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || (dot_joins && ch == '.'); };
    for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) {
        const bool left = p == 0 || !joins(text[p - 1]);
        const size_t end = p + word.size();
        const bool right = end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '-');
        if (left && right) return true;
    }
    return false;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<fs::path> sources_under(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        const std::string ext = e.path().extension().string();
        if (ext == ".cpp" || ext == ".h" || ext == ".hpp" || ext == ".inl" || ext == ".comp" || ext == ".glsl")
            files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

TEST(FamilyTable, SupportedArchitecturesAreTheTableRows) {
    std::vector<std::string> rows;
    for (const model::Family& f : model::families()) {
        EXPECT_FALSE(f.arch.empty());
        rows.emplace_back(f.arch);
        EXPECT_EQ(model::find_family(f.arch), &f);
    }
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end()) << "an architecture has two rows";
    EXPECT_EQ(model::supported_architectures(), rows);
    EXPECT_EQ(model::find_family("rwkv6"), nullptr);
}

// Fields that only mean something together with another one.
TEST(FamilyTable, RowsAreConsistent) {
    for (const model::Family& f : model::families()) {
        SCOPED_TRACE(std::string(f.arch));
        if (f.windows == model::WindowRule::Pattern || f.windows == model::WindowRule::PatternIfSet) {
            EXPECT_GE(f.window_period, 0);
        }
        if (f.windows == model::WindowRule::None) {
            EXPECT_EQ(f.window, 0);
            EXPECT_FALSE(f.window_required);
            EXPECT_FALSE(f.local_rope_base.has_value()) << "a local RoPE base without windowed layers";
            EXPECT_FALSE(f.local_rope_unscaled);
        }
        if (f.chunk > 0) {
            EXPECT_GT(f.chunk_period, 1);
        }
        if (f.nope_temperature_floor > 0) {
            EXPECT_GT(f.nope_period, 0) << "a query temperature without NoPE layers";
        }
        if (!f.rope) {
            EXPECT_FALSE(f.rope_neox);
            EXPECT_FALSE(f.longrope);
            EXPECT_EQ(f.nope_period, 0);
            EXPECT_EQ(f.qk_norm, model::QkNorm::None);
        }
        if (f.learned_positions) {
            EXPECT_FALSE(f.rope) << "learned positions and RoPE";
        }
        if (f.no_qk_norm_at_n_expert > 0) {
            EXPECT_TRUE(f.moe);
            EXPECT_NE(f.qk_norm, model::QkNorm::None);
        }
        if (f.yarn_log_multiplier_scaled_by_10) {
            EXPECT_TRUE(f.rope);
        }
        if (!f.moe) {
            const model::Family plain{};
            EXPECT_EQ(f.topk_norm, plain.topk_norm);
            EXPECT_EQ(f.gating, plain.gating);
            EXPECT_FALSE(f.experts_required || f.expert_width_over_topk || f.softmax_after_topk || f.router_bias ||
                         f.expert_bias || f.weight_input || f.shared_experts_key || f.selection_bias ||
                         f.expert_groups_key || f.moe_interleave_key || f.leading_dense_key || f.moe_where_router);
            EXPECT_EQ(f.shared_experts, 0);
            EXPECT_EQ(f.swiglu_alpha, 0.0f);
        }
        if (f.layers != model::LayerLayout::Uniform) {
            EXPECT_NE(f.mixer, model::Mixer::Attention) << "a hybrid layout without a mixer besides attention";
        }
        if (f.rope_switch_key) {
            EXPECT_TRUE(f.rope) << "a RoPE switch on a family without RoPE";
        }
        if (f.shared_expert_width_key) {
            EXPECT_TRUE(f.moe);
            EXPECT_FALSE(f.shared_experts_key) << "two ways to size the shared expert";
        }
        if (f.swiglu_alpha > 0) {
            EXPECT_GT(f.swiglu_limit, 0);
        }
    }
}

// Every architecture in the table has a random-weight model with llama.cpp's logits.
TEST(FamilyTable, EveryRowHasAGoldenModel) {
    std::set<std::string> golden;
    for (const char* sub : {"families", "moe", "bert", "ssm", "parallel_alibi", "rwkv7", "deltanet"}) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(test::source_dir() + "/tests/golden/" + sub, ec)) {
            if (e.path().extension() != ".gguf") continue;
            auto f = gguf::File::open(e.path().string());
            golden.insert(f->get_string(std::string(model::keys::kArchitecture)).value_or(""));
        }
    }
    for (const model::Family& f : model::families())
        EXPECT_TRUE(golden.count(std::string(f.arch)))
            << "no golden model of architecture " << f.arch << " in tests/golden/{families,moe,bert,ssm,parallel_alibi,rwkv7}";
}

// No architecture name in a string literal of engine/ outside the family table (the tokenizer's
// names, such as pre-tokenizers, are its own and not architectures). "llama.cpp", the project,
// is not the architecture `llama`.
TEST(FamilyTable, NoArchitectureNameOutsideTheTable) {
    const fs::path engine = fs::path(test::source_dir()) / "engine";
    const fs::path table = engine / "model" / "families.cpp";
    std::vector<std::string> names;
    for (const model::Family& f : model::families()) names.emplace_back(f.arch);
    size_t scanned = 0;
    for (const fs::path& p : sources_under(engine)) {
        if (p == table || p.lexically_relative(engine).begin()->string() == "tokenizer") continue;
        ++scanned;
        for (Literal lit : string_literals(read_text(p))) {
            for (size_t q; (q = lit.text.find("llama.cpp")) != std::string::npos;) lit.text.erase(q, 9);
            for (const std::string& n : names)
                EXPECT_FALSE(contains_word(lit.text, n, /*dot_joins=*/false))
                    << p.lexically_relative(test::source_dir()).string() << ":" << lit.line << ": \"" << lit.text
                    << "\" names the architecture '" << n << "': give the family a field in its row in "
                    << "engine/model/families.cpp instead";
        }
    }
    EXPECT_GT(scanned, 50u) << "the engine's sources were not found under " << engine;
}

// No metadata key's text in a string literal of engine/model outside metadata_keys.h.
TEST(FamilyTable, MetadataKeysAreNamedOnce) {
    std::vector<std::string> texts;
    for (std::string_view k : model::keys::kGeneralKeys) texts.emplace_back(k);
    for (const model::keys::ArchKey& k : model::keys::kArchKeys) texts.push_back(k.text());
    std::vector<std::string> sorted = texts;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a key is named twice";

    const fs::path dir = fs::path(test::source_dir()) / "engine" / "model";
    const fs::path home = dir / "metadata_keys.h";
    size_t scanned = 0;
    for (const fs::path& p : sources_under(dir)) {
        if (p == home) continue;
        ++scanned;
        for (const Literal& lit : string_literals(read_text(p)))
            for (const std::string& k : texts)
                EXPECT_FALSE(contains_word(lit.text, k, /*dot_joins=*/true))
                    << p.lexically_relative(test::source_dir()).string() << ":" << lit.line << ": \"" << lit.text
                    << "\" spells the metadata key '" << k << "': use its constant in engine/model/metadata_keys.h";
    }
    EXPECT_GT(scanned, 10u);
}

// The checks above find what they are meant to find.
TEST(FamilyTable, TheSourceScanFindsNamesInLiteralsOnly) {
    const auto lits = string_literals("// \"llama\" in a comment\nx = \"qwen2\"; /* \"gpt2\" */ y = '\"';\nz = \"a\\\"b\";");
    ASSERT_EQ(lits.size(), 2u);
    EXPECT_EQ(lits[0].text, "qwen2");
    EXPECT_EQ(lits[0].line, 2);
    EXPECT_EQ(lits[1].text, "a\\\"b");
    EXPECT_TRUE(contains_word("deepseek2.expert_weights_norm", "deepseek2", false));
    EXPECT_TRUE(contains_word("gpt-oss without experts", "gpt-oss", false));
    EXPECT_FALSE(contains_word("llama3", "llama", false));
    EXPECT_FALSE(contains_word("gpt-oss", "gpt", false));
    EXPECT_TRUE(contains_word(" does not divide embedding_length = ", "embedding_length", true));
    EXPECT_FALSE(contains_word("expert_feed_forward_length", "feed_forward_length", true));
    EXPECT_FALSE(contains_word("llama.attention.head_count", "attention.head_count", true));
}

}  // namespace
}  // namespace vkllm
