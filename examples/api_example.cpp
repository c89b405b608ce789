// The vkllm API in one program: load a model, generate greedily with a per-token callback, and
// read a probe (the last layer's logit lens) of the last step. docs/api.md walks through it.
#include <cstdio>
#include <exception>

#include "vkllm/model.h"
#include "vkllm/session.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: api_example MODEL.gguf\n");
        return 2;
    }
    try {
        std::unique_ptr<vkllm::Model> model = vkllm::Model::load(argv[1]);
        const vkllm::ModelInfo& info = model->info();
        std::printf("model: %s (%s, %d layers) on %s\n", info.name.c_str(), info.arch.c_str(), info.n_layer,
                    model->device().name.c_str());

        vkllm::SessionOptions so;
        so.probes.logit_lens_layers = {info.n_layer - 1};  // the model's own next-token distribution
        vkllm::Session session(*model, so);

        vkllm::GenerateOptions go;
        go.sampler.temperature = 0;  // greedy
        go.max_tokens = 16;
        std::printf("text: Once upon a time");
        auto on_token = [](const vkllm::TokenEvent& e) {
            std::printf("%s", e.text.c_str());  // whole UTF-8 characters only
            std::fflush(stdout);
            return true;  // false would stop here (StopReason::Callback)
        };
        vkllm::GenerateResult r = session.generate(model->tokenize("Once upon a time", true), go, on_token);
        std::printf("\nstop: %s after %zu tokens (%.1f tokens/s)\n", vkllm::to_string(r.reason), r.tokens.size(),
                    double(r.tokens.size()) / (r.decode_seconds > 0 ? r.decode_seconds : 1));

        // The probes describe the last step: it computed the logits the last token was chosen from.
        const vkllm::LogitLens& lens = session.probes().logit_lens.at(0);
        std::printf("lens: layer %d, position %d, top '%s' p=%.3f, the last token: %s\n", lens.layer, lens.position,
                    lens.top.at(0).text.c_str(), lens.top.at(0).p, lens.top.at(0).id == r.tokens.back() ? "yes" : "no");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "api_example: %s\n", e.what());
        return 1;
    }
}
