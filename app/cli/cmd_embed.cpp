// vkllm embed: an encoder's (BERT's) embeddings of one or more texts, float32 [rows][n_embd]
// row-major: every token's row for --pooling none, else one pooled row per text. With several
// texts, the cosine similarity of every pair of their vectors on stdout.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "output_file.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm embed [-m MODEL.gguf] (-p TEXT | -f FILE) [--pooling none|mean|cls|last] [--normalize] -o OUT.f32\n"
    "            [--json] [--exact] [--device D]\n"
    "  writes float32 [rows][n_embd]: every token's final hidden state for --pooling none, else one\n"
    "  pooled vector per text (default: the model's own pooling type); -f: one text per line (a file or\n"
    "  pipe of at most 64 MiB; -f -: standard input)\n"
    "  --normalize: each row scaled to unit length; several texts (up to 256): cosine similarities on stdout\n"
    "  --json: the same as JSON (texts, token counts, pooling, similarities)\n"
    "  the model must be an encoder (BERT); without -m the built-in model is used, a decoder";

Pooling parse_pooling(const std::string& s) {
    if (s == "none") return Pooling::None;
    if (s == "mean") return Pooling::Mean;
    if (s == "cls") return Pooling::Cls;
    if (s == "last") return Pooling::Last;
    throw UsageError("--pooling '" + s + "': expected none, mean, cls or last");
}

std::vector<std::string> read_texts(const Options& o) {
    if (o.has("-p") == o.has("-f")) throw UsageError("give one of -p TEXT or -f FILE");
    if (o.has("-p")) return {o.str("-p")};
    const std::string all = app::read_input(o.str("-f"), app::kEmbedFileMax, "text file");
    std::vector<std::string> texts;
    for (size_t begin = 0; begin < all.size();) {
        size_t end = all.find('\n', begin);
        if (end == std::string::npos) end = all.size();
        std::string line = all.substr(begin, end - begin);
        begin = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) texts.push_back(std::move(line));
    }
    if (texts.empty()) throw UsageError(o.str("-f") + " has no text (one text per line)");
    return texts;
}

void normalize(float* row, int n) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += double(row[i]) * row[i];
    if (sum <= 0) return;
    const float inv = float(1.0 / std::sqrt(sum));
    for (int i = 0; i < n; ++i) row[i] *= inv;
}

// Texts beyond which the cosine-similarity table is left out.
constexpr size_t kMaxSimilarityTexts = 256;

double cosine(const float* a, const float* b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-f", "-o", "--pooling", "--device"}, {"--normalize", "--json", "--exact"});
    if (!o.has("-o")) throw UsageError("-o OUT.f32 is required");
    const std::vector<std::string> texts = read_texts(o);
    const Pooling pooling = o.has("--pooling") ? parse_pooling(o.str("--pooling")) : Pooling::Model;
    OutputFile out(o.str("-o"));  // docs/architecture.md's rule; an unwritable -o fails before the model loads
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    const ModelInfo& info = model->info();
    const std::string pooling_name = pooling == Pooling::Model ? to_string(info.pooling) : o.str("--pooling");

    // An encoder sees a whole text in one forward pass: batch = context = the trained positions.
    SessionOptions so;
    so.n_ctx = so.n_batch = std::min(info.n_ctx_train, 4096);
    so.llama_cpp_rounding = !o.has("--exact");
    Session session(*model, so);

    const int n_embd = info.n_embd;
    // Rows go to the file as each text is done; only the pooled vectors the similarity table
    // compares are kept, and only for a table a person can read (a file of many short lines
    // would otherwise hold every row, and the table grows with the square of the texts).
    const bool pooled = pooling_name != "none";
    const bool table = pooled && texts.size() > 1 && texts.size() <= kMaxSimilarityTexts;
    std::vector<float> kept;  // [texts, n_embd] when table
    size_t rows = 0;
    std::vector<int> token_counts, row_counts;
    for (const std::string& text : texts) {
        const std::vector<int32_t> tokens = model->tokenize(text, /*add_special=*/true);
        Embeddings e;
        try {
            e = session.embed(tokens, pooling);  // NaN and infinity found on the GPU
        } catch (const NonFiniteEmbeddings& bad) {
            throw std::runtime_error("the embedding of text " + std::to_string(token_counts.size() + 1) + ": " +
                                     bad.what());
        }
        if (o.has("--normalize"))
            for (int r = 0; r < e.rows; ++r) normalize(&e.data[size_t(r) * size_t(n_embd)], n_embd);
        out.write(e.data.data(), e.data.size() * sizeof(float));
        if (table) kept.insert(kept.end(), e.data.begin(), e.data.end());
        rows += size_t(e.rows);
        token_counts.push_back(int(tokens.size()));
        row_counts.push_back(e.rows);
    }
    out.commit();

    // One vector per text to compare: its pooled row (not available for --pooling none).
    std::vector<std::vector<double>> sim;
    if (table) {
        sim.assign(texts.size(), std::vector<double>(texts.size()));
        for (size_t i = 0; i < texts.size(); ++i)
            for (size_t j = 0; j < texts.size(); ++j)
                sim[i][j] = cosine(&kept[i * size_t(n_embd)], &kept[j * size_t(n_embd)], n_embd);
    }
    if (o.has("--json")) {
        nlohmann::json j;
        j["model"] = info.name.empty() ? info.arch : info.name;
        j["pooling"] = pooling_name;
        j["normalized"] = o.has("--normalize");
        j["n_embd"] = n_embd;
        j["rows"] = rows;
        j["output"] = o.str("-o");
        j["texts"] = nlohmann::json::array();
        for (size_t i = 0; i < texts.size(); ++i)
            j["texts"].push_back({{"text", texts[i]}, {"tokens", token_counts[i]}, {"rows", row_counts[i]}});
        if (!sim.empty()) j["similarity"] = sim;
        std::printf("%s\n", app::json_text(j, 2).c_str());
    } else if (!sim.empty()) {
        std::printf("cosine similarity (%s pooling)\n", pooling_name.c_str());
        for (size_t i = 0; i < texts.size(); ++i) {
            std::printf("%3zu", i + 1);
            for (size_t k = 0; k < texts.size(); ++k) std::printf(" %7.4f", sim[i][k]);
            std::printf("  %s\n", texts[i].c_str());
        }
    }
    std::fprintf(stderr, "vkllm: wrote %zu x %d float32 (%s pooling%s) of %zu text%s to %s\n", rows, n_embd,
                 pooling_name.c_str(), o.has("--normalize") ? ", normalized" : "", texts.size(),
                 texts.size() == 1 ? "" : "s", o.str("-o").c_str());
    if (!pooled && texts.size() > 1)
        std::fprintf(stderr, "vkllm: no similarity table with --pooling none (one row per token)\n");
    if (pooled && texts.size() > kMaxSimilarityTexts)
        std::fprintf(stderr, "vkllm: no similarity table for more than %zu texts (the vectors are in %s)\n",
                     kMaxSimilarityTexts, o.str("-o").c_str());
    return 0;
}

}  // namespace

int cmd_embed(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
