// vkllm fill-mask: masked-token prediction, BERT's pre-training objective. The text's [MASK]
// tokens are predicted from every other token at once (bidirectional attention); for each, the
// top-k vocabulary tokens and their probabilities (softmax of that position's logits).
//
// Supported heads: the output projection of the file. BERT files converted by llama.cpp carry
// no masked-LM head (llama.cpp refuses files with extra tensors), so the projection is tied to
// the token embeddings: logits = h · token_embdᵀ of the final hidden state h. A model trained
// with that tied head (the zoo's) predicts masks; an embedding model's guesses are rough.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "json_text.h"
#include "model_file.h"
#include "options.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"
#include "vkllm/token_probs.h"

namespace vkllm::cli {
namespace {

const char* kUsage =
    "vkllm fill-mask [-m MODEL.gguf] -p \"The cat sat on the [MASK].\" [-k 5] [--json] [--exact] [--device D]\n"
    "  prints the top-k tokens and probabilities for each [MASK] of the text\n"
    "  the model must be an encoder (BERT) with a [MASK] token; its output projection is the\n"
    "  head (tied to the token embeddings in llama.cpp's BERT files)";

struct Guess {
    int32_t id;
    float prob;
};

// Softmax of one row of logits, the k most probable tokens.
std::vector<Guess> top_k(const float* logits, int n_vocab, int k) {
    const std::vector<double> log_probs = log_softmax(logits, n_vocab);
    std::vector<Guess> out;
    for (int32_t id : most_likely(log_probs, k)) out.push_back({id, float(std::exp(log_probs[size_t(id)]))});
    return out;
}

int run(const Args& args) {
    Options o(args, {"-m", "-p", "-k", "--device"}, {"--json", "--exact"});
    if (!o.has("-p")) throw UsageError("-p TEXT is required");
    const int k = int(o.integer("-k", 5));
    if (k < 1) throw UsageError("-k must be at least 1");
    ModelOptions mo;
    mo.device = o.str("--device");
    auto model = Model::load(*open_model_file(o), mo);
    print_warnings(model->warnings());
    const int32_t mask = model->mask_token();
    if (mask < 0) throw std::runtime_error("this model's vocabulary has no [MASK] token (tokenizer.ggml.mask_token_id)");
    const std::string mask_text = model->token_text(mask);
    const std::vector<int32_t> tokens = model->tokenize(o.str("-p"), /*add_special=*/true, /*parse_special=*/true);
    std::vector<size_t> masks;
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] == mask) masks.push_back(i);
    if (masks.empty()) throw UsageError("the text has no " + mask_text + " token to fill");

    SessionOptions so;
    so.n_ctx = so.n_batch = std::min(model->info().n_ctx_train, 4096);
    so.llama_cpp_rounding = !o.has("--exact");
    Session session(*model, so);
    const std::vector<float> logits = session.encode_logits(tokens);
    const int n_vocab = model->n_vocab();

    nlohmann::json j = nlohmann::json::array();
    for (size_t m = 0; m < masks.size(); ++m) {
        const std::vector<Guess> guesses = top_k(&logits[masks[m] * size_t(n_vocab)], n_vocab, k);
        if (o.has("--json")) {
            nlohmann::json entry{{"mask", m}, {"position", masks[m]}, {"top", nlohmann::json::array()}};
            for (const Guess& g : guesses)
                entry["top"].push_back({{"id", g.id}, {"token", model->token_text(g.id)}, {"prob", g.prob}});
            j.push_back(entry);
            continue;
        }
        std::printf("%s %zu (token %zu):\n", mask_text.c_str(), m + 1, masks[m]);
        for (const Guess& g : guesses) {
            std::string text = model->piece(g.id, /*render_special=*/true);
            if (!text.empty() && text[0] == ' ') text.erase(0, 1);  // a word-initial piece
            std::printf("  %-16s %.4f  (id %d)\n", text.c_str(), double(g.prob), g.id);
        }
    }
    if (o.has("--json")) std::printf("%s\n", app::json_text(j, 2).c_str());
    return 0;
}

}  // namespace

int cmd_fill_mask(const Args& args) { return with_usage(kUsage, run, args); }

}  // namespace vkllm::cli
