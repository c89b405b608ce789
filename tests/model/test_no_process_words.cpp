// The tree reads as a product, not as the log of how it was built: no tracked text file (code,
// scripts, docs) names a work item or a worker, i.e. matches
//   issue [0-9]  (any case)   |   helper [A-Z]   |   \bD[0-9]\b
// as `git grep -IE` would. Files are the ones git tracks in VKLLM_SOURCE_DIR; without git, the
// tree is walked, skipping build folders, .git and node_modules. Binary files are skipped.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

// Whether `line` holds one of the three patterns.
bool has_process_word(const std::string& line) {
    for (size_t i = 0; i < line.size(); ++i) {
        // The word issue (any case), a space and a digit.
        if (i + 7 <= line.size() && (line[i] == 'i' || line[i] == 'I')) {
            std::string w = line.substr(i, 6);
            for (char& c : w) c = char(std::tolower(static_cast<unsigned char>(c)));
            if (w == "issue " && digit(line[i + 6])) return true;
        }
        // The word helper, a space and an upper-case letter.
        if (line.compare(i, 7, "helper ") == 0 && i + 7 < line.size() &&
            std::isupper(static_cast<unsigned char>(line[i + 7])))
            return true;
        // An upper-case D and one digit as a whole word.
        if (line[i] == 'D' && i + 1 < line.size() && digit(line[i + 1]) && (i == 0 || !word_char(line[i - 1])) &&
            (i + 2 == line.size() || !word_char(line[i + 2])))
            return true;
    }
    return false;
}

// The tracked files (paths relative to root), or an empty list when git cannot list them.
std::vector<std::string> git_files(const fs::path& root) {
    std::vector<std::string> files;
    if (!fs::exists(root / ".git")) return files;
    const std::string cmd = "git -C '" + root.string() + "' ls-files -z 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return files;
    std::string current;
    for (int c; (c = std::fgetc(pipe)) != EOF;) {
        if (c == '\0') {
            if (!current.empty()) files.push_back(current);
            current.clear();
        } else {
            current += char(c);
        }
    }
    if (pclose(pipe) != 0) files.clear();
    return files;
}

// Every regular file under root outside build folders, .git and node_modules.
std::vector<std::string> walked_files(const fs::path& root) {
    std::vector<std::string> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const std::string name = it->path().filename().string();
        if (it->is_directory() && (name == ".git" || name == "node_modules" || name.rfind("build", 0) == 0)) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file()) files.push_back(it->path().lexically_relative(root).string());
    }
    return files;
}

// The file's text, or nothing for a binary file (a NUL byte in its first 8 KiB, as grep -I).
bool read_text(const fs::path& p, std::string* text) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    *text = ss.str();
    return text->substr(0, 8192).find('\0') == std::string::npos;
}

TEST(NoProcessWords, PatternsMatchWhatTheyShould) {
    // Assembled from parts, so that this file does not match itself.
    auto words = [](const char* a, const char* b) { return std::string(a) + b; };
    EXPECT_TRUE(has_process_word(words("see iss", "ue 28 for why")));
    EXPECT_TRUE(has_process_word(words("Iss", "ue 3")));
    EXPECT_TRUE(has_process_word(words("written by hel", "per B")));
    EXPECT_TRUE(has_process_word(words("(D", "1)")));
    EXPECT_TRUE(has_process_word(words("D", "4")));
    EXPECT_FALSE(has_process_word("an issue with 3 parts"));
    EXPECT_FALSE(has_process_word("helper functions"));
    EXPECT_FALSE(has_process_word("D3D12, ND4, D10, 2D4"));
    EXPECT_FALSE(has_process_word("MESSAGE RENDERING HELPER FUNCTIONS"));
}

TEST(NoProcessWords, NoTrackedTextFileNamesAWorkItemOrAWorker) {
    const fs::path root = test::source_dir();
    std::vector<std::string> files = git_files(root);
    if (files.empty()) files = walked_files(root);
    ASSERT_GT(files.size(), 100u) << "found too few files under " << root;
    int checked = 0;
    for (const std::string& rel : files) {
        if (rel.find("node_modules/") != std::string::npos) continue;
        std::string text;
        if (!read_text(root / rel, &text)) continue;
        ++checked;
        std::istringstream lines(text);
        std::string line;
        for (int n = 1; std::getline(lines, line); ++n)
            if (has_process_word(line)) ADD_FAILURE() << rel << ":" << n << ": " << line;
    }
    EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace vkllm
