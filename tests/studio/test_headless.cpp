// The headless proof of vkllm-studio: under Xvfb (started here) on the default Vulkan device,
// `vkllm-studio --prompt ... -n N --panels all --screenshot --export --exit` must exit 0 with
// no validation message, write a screenshot that is not blank, keep its frames fast while the
// engine generates, export panel data equal to the engine's own probes for the same tokens,
// computed here in one evaluation (the studio stitched them from one step per token), and
// export the very document `vkllm probe` writes for the same prompt, N and probes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "engine_worker.h"
#include "probe_history.h"
#include "random_model/random_model.h"
#include "panel_json.h"
#include "studio_export.h"
#include "test_support.h"
#include "xvfb.h"
#include "view_models.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

using namespace vkllm;
using namespace vkllm::studio;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using vkllm::test::studio_binary;
using vkllm::test::Xvfb;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct StudioRun {
    int status = -1;
    std::string errors;
    json exported;
    std::string screenshot;
};

// Runs the studio headless on `model`; `what` is either --prompt '...' -n N or --script FILE.
StudioRun run_studio(const Xvfb& x, const std::string& model, const std::string& what, const std::string& tag,
                     const std::string& size = "1280x800") {
    StudioRun r;
    const std::string dir = vkllm::test::temp_path("studio-" + tag);
    fs::create_directories(dir);
    r.screenshot = dir + "/shot.png";
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio_binary() + "' -m '" + model + "' " + what +
                            " --temp 0 --panels all --size " + size + " --screenshot '" + r.screenshot + "' --export '" + dir +
                            "/out.json' --config-dir '" + dir + "/config' --exit 2> '" + dir + "/stderr.txt'";
    const int raw = std::system(cmd.c_str());
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.errors = read_text(dir + "/stderr.txt");
    if (fs::exists(dir + "/out.json")) r.exported = json::parse(read_text(dir + "/out.json"));
    return r;
}

void expect_near_vectors(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    float worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (std::fabs(got[i] - want[i]) > worst) worst = std::fabs(got[i] - want[i]), at = i;
    EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got[at] << ", the engine says " << want[at];
}

// The token ids of a `vkllm probe` document.
std::vector<int32_t> token_ids(const json& doc) {
    std::vector<int32_t> ids;
    for (const json& t : doc["tokens"]) ids.push_back(t["id"].get<int32_t>());
    return ids;
}

// The first place where `got` differs from `want` ("" when none): every key of `want` must be
// in `got` (which may have more), arrays the same length, numbers within a relative 1e-4
// (the two runs read the same evaluations back, with other probes beside them), the rest equal.
std::string first_difference(const json& got, const json& want, const std::string& path) {
    if (want.is_number() && got.is_number()) {
        const double w = want.get<double>(), g = got.get<double>();
        if (want.is_number_integer() && got.is_number_integer() ? w == g : std::fabs(w - g) <= 1e-4 * std::max(1.0, std::fabs(w)))
            return "";
        return path + ": " + got.dump() + " where vkllm probe has " + want.dump();
    }
    if (want.is_object()) {
        if (!got.is_object()) return path + ": not an object";
        for (const auto& [key, value] : want.items()) {
            if (!got.contains(key)) return path + "." + key + ": missing";
            if (std::string d = first_difference(got[key], value, path + "." + key); !d.empty()) return d;
        }
        return "";
    }
    if (want.is_array()) {
        if (!got.is_array() || got.size() != want.size())
            return path + ": " + std::to_string(got.size()) + " items where vkllm probe has " + std::to_string(want.size());
        for (size_t i = 0; i < want.size(); ++i)
            if (std::string d = first_difference(got[i], want[i], path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
        return "";
    }
    return got == want ? "" : path + ": " + got.dump() + " where vkllm probe has " + want.dump();
}

// The whole check for one model.
void check_model(const std::string& file, const std::string& tag) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string prompt = "Once upon a time";
    const int n = 6;
    const std::string dir = vkllm::test::temp_path("studio-" + tag);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const StudioRun run = run_studio(x, file, "--prompt '" + prompt + "' -n " + std::to_string(n), tag);
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
    ASSERT_TRUE(run.exported.is_object()) << "no export written";
    const json& e = run.exported;

    // (b) The screenshot is a real picture of the window, not a blank one.
    int w = 0, height = 0, c = 0;
    unsigned char* pixels = stbi_load(run.screenshot.c_str(), &w, &height, &c, 3);
    ASSERT_NE(pixels, nullptr) << "cannot read " << run.screenshot;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < w * height; ++i) {
        const double y = 0.299 * pixels[i * 3] + 0.587 * pixels[i * 3 + 1] + 0.114 * pixels[i * 3 + 2];
        sum += y, sum2 += y * y;
    }
    stbi_image_free(pixels);
    EXPECT_EQ(w, 1280);
    EXPECT_EQ(height, 800);
    const double mean = sum / (w * height), variance = sum2 / (w * height) - mean * mean;
    EXPECT_GT(variance, 100.0) << "the screenshot looks blank";

    // (c) Frame time: the UI never waits for the engine. Generous for lavapipe on a busy CPU,
    // where the UI's own drawing is rasterised on the same cores as the engine's compute.
    ASSERT_TRUE(e.contains("frames"));
    EXPECT_GT(e["frames"]["count"].get<int>(), 3);
    EXPECT_LT(e["frames"]["median_ms"].get<double>(), 1000.0) << e["frames"].dump();
    if (e["frames"]["generating_count"].get<int>() > 0) {
        EXPECT_LT(e["frames"]["generating_median_ms"].get<double>(), 1500.0) << e["frames"].dump();
    }

    // (a) The same tokens through the engine here.
    auto model = Model::load(file);
    const ModelInfo& info = model->info();
    SessionOptions so;
    ProbeSelection all;
    all.residual_full_layer = 0;  // the activations panel's map shows the selected layer, 0 at start
    so.n_ctx = std::min(info.n_ctx_train > 0 ? info.n_ctx_train : 2048, 2048);  // the studio's context
    so.probes = probe_config(all, info, so.n_ctx);
    Session session(*model, so);
    // Greedy text: the studio's answer is the engine's.
    GenerateOptions go;
    go.sampler.temperature = 0;
    go.max_tokens = n;
    const GenerateResult g = session.generate(model->tokenize(prompt, true), go);
    EXPECT_EQ(e["generated_text"].get<std::string>(), g.text);
    // The studio's probes cover every token in its cache, the last generated one included;
    // evaluate them in one pass.
    const std::vector<int32_t> tokens = token_ids(e);
    ASSERT_EQ(tokens.size(), model->tokenize(prompt, true).size() + g.tokens.size());
    session.reset();
    session.eval(tokens);
    const ProbeResults want = session.probes();

    // The export is `vkllm probe`'s document: attention rows [head][query][key] over every
    // position, residual and routing eval by eval (the prompt, then one per generated token).
    ASSERT_EQ(e["attention"].size(), want.attention.size());
    for (size_t l = 0; l < want.attention.size(); ++l) {
        const AttentionMap& m = want.attention[l];
        const json& a = e["attention"][l];
        EXPECT_EQ(a["query_pos"].get<std::vector<int>>(), m.query_pos);
        std::vector<float> flat;
        for (const json& head : a["probs"])
            for (const json& row : head)
                for (const json& p : row) flat.push_back(p.get<float>());
        expect_near_vectors(flat, m.probs, 2e-4f, "attention of layer " + std::to_string(m.layer));
    }
    for (const ResidualStat& s : want.residual) {
        std::vector<float> rel;
        std::vector<int> channels;
        for (const json& r : e["residual"])
            if (r["layer"].get<int>() == s.layer) {
                for (const json& x : r["token_max_abs"]) rel.push_back(x.get<float>());
                for (const json& c : r["token_channel"]) channels.push_back(c.get<int>());
            }
        ASSERT_EQ(rel.size(), s.token_max_abs.size()) << "residual of layer " << s.layer;
        for (size_t t = 0; t < rel.size(); ++t) rel[t] = rel[t] / std::max(s.token_max_abs[t], 1e-6f);
        expect_near_vectors(rel, std::vector<float>(rel.size(), 1.0f), 1e-3f, "residual max of layer " + std::to_string(s.layer));
        EXPECT_EQ(channels, s.token_channel);
    }
    ASSERT_EQ(e["routing"].size(), want.routing.size());
    for (size_t l = 0; l < want.routing.size(); ++l) {
        std::vector<int32_t> experts;
        std::vector<float> weights;
        for (const json& row : e["routing"][l]["experts"])
            for (const json& x : row) experts.push_back(x.get<int32_t>());
        for (const json& row : e["routing"][l]["weights"])
            for (const json& x : row) weights.push_back(x.get<float>());
        EXPECT_EQ(experts, want.routing[l].experts);
        expect_near_vectors(weights, want.routing[l].weights, 1e-4f,
                            "gate weights of layer " + std::to_string(want.routing[l].layer));
    }

    // (d) The same prompt, N and probes through `vkllm probe`: the same document, key for key
    // and number for number, timings aside (they are measured, not computed).
    const std::string cli_out = dir + "/probe.json";
    const test::ShellResult cli =
        test::shell("'" + test::vkllm_bin() + "' probe -m '" + file + "' -p '" + prompt + "' -n " + std::to_string(n) +
                    " --attention all --residual --ffn-down --routing --logit-lens all --lens-positions " +
                    std::to_string(vkllm::studio::kLensPositions) + " --timings -o '" + cli_out + "' 2>&1");
    ASSERT_EQ(cli.code, 0) << cli.out;
    json from_cli = json::parse(read_text(cli_out));
    ASSERT_TRUE(e.contains("timings"));
    for (const char* key : {"passes", "dispatches", "barriers", "total_ms", "by_op", "by_layer"})
        EXPECT_TRUE(e["timings"].contains(key)) << key;
    from_cli.erase("timings");
    EXPECT_EQ(first_difference(e, from_cli, "export"), "");

    // What each panel draws equals the view-models of the engine's probes.
    ProbeHistory h;
    h.add_step(want, 0, int(tokens.size()), true);
    const json& v = e["viewmodel"];
    const AttentionView av = attention_view(h, info);
    ASSERT_EQ(v["attention"].size(), av.layers.size());
    for (size_t l = 0; l < av.layers.size(); ++l) {
        EXPECT_EQ(v["attention"][l]["window"].get<int>(), av.layers[l].window);
        EXPECT_EQ(v["attention"][l]["global"].get<bool>(), av.layers[l].global);
        for (size_t hd = 0; hd < av.layers[l].heads.size(); ++hd) {
            const json& got = v["attention"][l]["heads"][hd];
            const HeadStats& s = av.layers[l].heads[hd];
            EXPECT_NEAR(got["entropy"].get<float>(), s.entropy, 1e-3);
            EXPECT_NEAR(got["first_token_mass"].get<float>(), s.first_token_mass, 1e-4);
            EXPECT_NEAR(got["mean_distance"].get<float>(), s.mean_distance, 1e-3);
        }
    }
    const auto rows = activation_rows(h);
    ASSERT_EQ(v["activations"].size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_NEAR(v["activations"][i]["max_abs"].get<float>() / rows[i].max_abs, 1.0, 1e-3);
        EXPECT_EQ(v["activations"][i]["token"].get<int>(), rows[i].token);
        EXPECT_EQ(v["activations"][i]["channel"].get<int>(), rows[i].channel);
    }
    const auto experts = expert_view(h, info, 16);
    ASSERT_EQ(v["experts"].size(), experts.size());
    for (size_t i = 0; i < experts.size(); ++i) {
        // The studio splits prompt from generation; the one pass here has them all as prompt.
        std::vector<int> total = v["experts"][i]["prompt_tokens"].get<std::vector<int>>();
        const std::vector<int> gen = v["experts"][i]["generated_tokens"].get<std::vector<int>>();
        for (size_t x = 0; x < total.size(); ++x) total[x] += gen[x];
        EXPECT_EQ(total, experts[i].prompt_tokens);
        EXPECT_NEAR(v["experts"][i]["cv"].get<float>(), experts[i].cv, 1e-4);
        EXPECT_EQ(v["experts"][i]["idle"].get<int>(), experts[i].idle);
    }
    const auto lens = lens_rows(h);
    ASSERT_EQ(v["lens"].size(), lens.size());
    for (size_t i = 0; i < lens.size(); ++i) {
        ASSERT_FALSE(lens[i].top.empty());
        EXPECT_EQ(v["lens"][i]["top"][0]["id"].get<int>(), lens[i].top[0].id);
        EXPECT_NEAR(v["lens"][i]["top"][0]["p"].get<float>(), lens[i].top[0].p, 1e-3);
    }
    EXPECT_EQ(v["architecture"], json::parse(architecture_json(architecture_blocks(info)).dump()));
}

std::vector<float> softmax(const std::vector<float>& logits) {
    std::vector<float> p(logits.size());
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - mx);
    for (float& x : p) x = float(x / sum);
    return p;
}

// An intervention's "before" or "after" column equals the engine's distribution.
void expect_top(const json& column, const std::vector<float>& p, const std::string& what) {
    ASSERT_FALSE(column.empty()) << what;
    for (const json& t : column) {
        const int32_t id = t["id"].get<int32_t>();
        EXPECT_NEAR(std::exp(t["logprob"].get<float>()), p[size_t(id)], 1e-4) << what << ": token " << id;
    }
}

}  // namespace

// A residual edit from the activations panel, then Restore twice: the studio's before/after
// columns are the engine's next-token distributions without and with the same edit, its
// per-position KL and perplexities over the text are the engine's, and the second Restore has
// no effect over the text.
TEST(StudioHeadless, InterventionAndRestore) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string file = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string dir = vkllm::test::temp_path("studio-edit");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "tokens 4\nsend Once upon a time\nmean 2 34\nexport " << dir
                                       << "/edited.json\nrestore\nrestore\n";
    const StudioRun run = run_studio(x, file, "--script '" + dir + "/script.txt'", "edit");
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
    const json edited = json::parse(read_text(dir + "/edited.json"));
    const json& restored = run.exported;
    ASSERT_TRUE(edited.contains("intervention"));
    ASSERT_TRUE(restored.contains("intervention"));

    auto model = Model::load(file);
    Session session(*model);
    const std::vector<int32_t> tokens = token_ids(edited);
    const std::vector<float> plain = softmax(session.eval(tokens));
    session.reset();
    session.set_residual_edits({{2, 34, ResidualEdit::Mode::Mean, 0.0f}});
    const std::vector<float> with_edit = softmax(session.eval(tokens));
    expect_top(edited["intervention"]["before"], plain, "before the edit");
    expect_top(edited["intervention"]["after"], with_edit, "with the edit");
    EXPECT_GT(edited["intervention"]["kl"].get<float>(), 0.0f);
    // Over the whole text: every position's KL and the perplexity, as the engine's logits of
    // every position give them.
    session.reset();
    session.set_residual_edits({});
    const std::vector<float> all_plain = session.eval(tokens, true);
    session.reset();
    session.set_residual_edits({{2, 34, ResidualEdit::Mode::Mean, 0.0f}});
    const std::vector<float> all_edited = session.eval(tokens, true);
    const TextEffect want = text_effect(all_plain, all_edited, tokens, model->info().n_vocab);
    const json& text = edited["intervention"]["text"];
    ASSERT_EQ(text["positions"].get<int>(), int(tokens.size()));
    for (size_t i = 0; i < tokens.size(); ++i)
        EXPECT_NEAR(text["kl"][i].get<float>(), want.kl[i], 1e-4 + 1e-3 * want.kl[i]) << "position " << i;
    EXPECT_NEAR(text["perplexity_before"].get<double>(), want.perplexity_before, 1e-3 * want.perplexity_before);
    EXPECT_NEAR(text["perplexity_after"].get<double>(), want.perplexity_after, 1e-3 * want.perplexity_after);
    EXPECT_FALSE(text["no_effect"].get<bool>());
    ASSERT_FALSE(text["moved"].empty());
    EXPECT_EQ(text["moved"][0]["position"].get<int>(), want.moved[0].position);
    // Restore: back to the plain distribution; restoring again changes nothing over the text.
    expect_top(restored["intervention"]["after"], plain, "after restore");
    EXPECT_TRUE(restored["intervention"]["in_force"].empty());
    EXPECT_TRUE(restored["intervention"]["text"]["no_effect"].get<bool>());
    EXPECT_EQ(restored["intervention"]["text"]["positions"].get<int>(), int(tokens.size()));
    EXPECT_TRUE(restored["intervention"]["text"]["moved"].empty());
}

// An encoder (a random BERT): sending evaluates the text in one bidirectional pass and
// generates nothing; every panel has data, the attention maps are full (keys after the query)
// and equal the engine's, and the export is the probe document of that one pass.
TEST(StudioHeadless, RandomBertEncoder) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string dir = vkllm::test::temp_path("studio-bert");
    fs::remove_all(dir);
    fs::create_directories(dir);
    random_model::RandomModelConfig c;
    c.arch = "bert";
    c.seed = 11;
    c.n_head_kv = c.n_head;  // multi-head attention only
    const std::string file = dir + "/bert.gguf";
    random_model::write_random_model(c, vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf", file);
    const std::string prompt = "the cat sat on the mat";
    const StudioRun run = run_studio(x, file, "--prompt '" + prompt + "' -n 4", "bert");
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
    ASSERT_TRUE(run.exported.is_object()) << "no export written";
    const json& e = run.exported;

    auto model = Model::load(file);
    const ModelInfo& info = model->info();
    const std::vector<int32_t> tokens = model->tokenize(prompt, true);
    const int n = int(tokens.size());
    ASSERT_GT(n, 2);
    // Nothing generated: the tokens are the text's, and the chat shows the encoder's reading.
    EXPECT_EQ(token_ids(e), tokens);
    for (const json& t : e["tokens"]) EXPECT_FALSE(t["generated"].get<bool>());
    EXPECT_EQ(e["generated_text"].get<std::string>(), "");
    EXPECT_NE(e["stop_reason"].get<std::string>().find("encoder"), std::string::npos);
    ASSERT_TRUE(e.contains("encoder"));
    EXPECT_EQ(e["encoder"]["embedding"].size(), size_t(info.n_embd));
    EXPECT_GT(e["encoder"]["embedding_norm"].get<float>(), 0.0f);
    EXPECT_EQ(e["encoder"]["predictions"].size(), size_t(n));

    // The engine's own probes of the same pass.
    SessionOptions so;
    ProbeSelection all;
    all.residual_full_layer = 0;
    so.n_ctx = std::min(info.n_ctx_train > 0 ? info.n_ctx_train : 2048, 2048);  // the studio's context
    so.probes = probe_config(all, info, so.n_ctx);
    Session session(*model, so);
    session.encode_logits(tokens);
    const ProbeResults want = session.probes();
    ASSERT_EQ(e["attention"].size(), size_t(info.n_layer));
    ASSERT_EQ(want.attention.size(), size_t(info.n_layer));
    for (size_t l = 0; l < want.attention.size(); ++l) {
        const json& a = e["attention"][l];
        EXPECT_FALSE(a["causal"].get<bool>());
        ASSERT_EQ(a["query_pos"].size(), size_t(n));
        ASSERT_EQ(a["key_pos"].size(), size_t(n));  // the full map
        std::vector<float> flat;
        double after_query = 0;  // mass on keys after the query: none in a causal map
        for (const json& head : a["probs"])
            for (size_t q = 0; q < head.size(); ++q)
                for (size_t k = 0; k < head[q].size(); ++k) {
                    flat.push_back(head[q][k].get<float>());
                    if (k > q) after_query += head[q][k].get<double>();
                }
        EXPECT_GT(after_query, 0.1) << "layer " << l;
        expect_near_vectors(flat, want.attention[l].probs, 2e-4f, "attention of layer " + std::to_string(l));
    }

    // Every panel draws data.
    const json& v = e["viewmodel"];
    ASSERT_EQ(v["attention"].size(), size_t(info.n_layer));
    for (const json& l : v["attention"]) {
        EXPECT_EQ(l["n_query"].get<int>(), n);
        EXPECT_EQ(l["n_key"].get<int>(), n);
        for (const json& h : l["heads"]) EXPECT_GT(h["entropy"].get<float>(), 0.0f);
    }
    ProbeHistory h;
    h.add_step(want, 0, n, true);
    const auto rows = activation_rows(h);
    ASSERT_FALSE(rows.empty());
    ASSERT_EQ(v["activations"].size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_NEAR(v["activations"][i]["max_abs"].get<float>() / rows[i].max_abs, 1.0, 1e-3);
        EXPECT_EQ(v["activations"][i]["token"].get<int>(), rows[i].token);
    }
    EXPECT_EQ(v["lens"].size(), lens_rows(h).size());
    ASSERT_EQ(v["architecture"].size(), size_t(info.n_layer));
    for (const json& b : v["architecture"]) {
        EXPECT_EQ(b["attention"].get<std::string>().rfind("bidirectional", 0), 0u) << b.dump();
        EXPECT_EQ(b["norm"].get<std::string>(), "post-sum");
    }
    EXPECT_FALSE(v["telemetry"]["by_op"].empty());
    EXPECT_TRUE(v["experts"].empty());  // dense: the experts panel says so
}

TEST(StudioHeadless, ZooDense) { check_model(vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf", "dense"); }

TEST(StudioHeadless, ZooMoe) { check_model(vkllm::test::source_dir() + "/assets/zoo/zoo-moe.gguf", "moe"); }

// Bad numbers and unreadable inputs end the studio before it opens a window (no display needed):
// exit status 2 for an option, as the CLI's, and 1 for a script that is a device or too large.
TEST(StudioOptions, BadNumbersAndInputsFailBeforeAWindow) {
    const std::string studio = "env -u DISPLAY -u WAYLAND_DISPLAY '" + studio_binary() + "'";
    const std::string config = vkllm::test::temp_path("studio-options-config");
    for (const char* temp : {"nan", "inf", "x"}) {
        const auto r = vkllm::test::shell(studio + " --temp " + temp + " --config-dir " + config + " 2>&1");
        EXPECT_EQ(r.code, 2) << temp << ": " << r.out;
        EXPECT_NE(r.out.find("vkllm-studio: option --temp"), std::string::npos) << r.out;
    }
    auto r = vkllm::test::shell(studio + " --script /dev/zero --exit --config-dir " + config + " 2>&1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("cannot read script /dev/zero: it is a character device"), std::string::npos) << r.out;
    const std::string big = vkllm::test::temp_path("big-script.txt");
    std::ofstream(big).close();
    std::filesystem::resize_file(big, (uint64_t(16) << 20) + 1);
    r = vkllm::test::shell(studio + " --script " + big + " --exit --config-dir " + config + " 2>&1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("the limit for a script is 16 MiB"), std::string::npos) << r.out;
    std::filesystem::remove(big);
}

namespace {

std::vector<std::pair<std::string, std::string>> turns_of(const json& doc) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const json& m : doc["messages"]) out.push_back({m["role"].get<std::string>(), m["text"].get<std::string>()});
    return out;
}

// Text cut at a panel's edge or a table column's, as the studio's own check found it in the
// exported frame; and the tiles inside the window, none over another.
void expect_nothing_cut_or_overlapping(const json& e, int width, int height, const std::string& what, int panels = 7) {
    ASSERT_TRUE(e.contains("text_fit")) << what;
    EXPECT_GE(e["text_fit"]["windows_checked"].get<int>(), panels) << what;  // every panel, their children
    EXPECT_GE(e["text_fit"]["tables_checked"].get<int>(), 1) << what;
    EXPECT_TRUE(e["text_fit"]["overflows"].empty()) << what << ": " << e["text_fit"]["overflows"].dump(1);
    std::vector<std::array<float, 4>> tiles;
    for (const auto& [name, r] : e["layout"]["tiles"].items()) {
        const std::array<float, 4> t{r[0].get<float>(), r[1].get<float>(), r[2].get<float>(), r[3].get<float>()};
        EXPECT_GE(t[0], 0) << name;
        EXPECT_GE(t[1], 0) << name;
        EXPECT_LE(t[0] + t[2], float(width) + 0.5f) << what << ": " << name;
        EXPECT_LE(t[1] + t[3], float(height) + 0.5f) << what << ": " << name;
        for (const auto& o : tiles)
            EXPECT_FALSE(t[0] < o[0] + o[2] && o[0] < t[0] + t[2] && t[1] < o[1] + o[3] && o[1] < t[1] + t[3])
                << what << ": " << name << " overlaps another panel";
        tiles.push_back(t);
    }
}

}  // namespace

// Chat as a person uses it, through the keys: Enter sends and clears the box, Shift+Enter is a
// new line, a second Enter on an empty box sends nothing, Up brings back the last message; a
// full context stops with the choice, the context shift drops the oldest exchange and the chat
// goes on; the conversation is saved as `vkllm chat` saves it and opened again.
TEST(StudioHeadless, ChatByKeysContextShiftAndSavedConversation) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string file = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string dir = vkllm::test::temp_path("studio-chat");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "tokens 12\n"
                                          "system You tell short stories.\n"
                                          "type Once upon a time\n"
                                          "key shift+enter\n"
                                          "type there was a cat\n"
                                          "key enter\n"
                                          "key enter\n"
                                          "export " << dir << "/sent.json\n"
                                          "tokens 200\n"
                                          "type The dog\n"
                                          "key enter\n"
                                          "export " << dir << "/full.json\n"
                                          "context-shift\n"
                                          "export " << dir << "/shifted.json\n"
                                          "tokens 6\n"
                                          "type The end\n"
                                          "key enter\n"
                                          "save-chat " << dir << "/saved.json\n"
                                          "clear\n"
                                          "open-chat " << dir << "/saved.json\n"
                                          "export " << dir << "/reopened.json\n"
                                          "key up\n";
    // A context of 64 tokens: the second answer fills it.
    const StudioRun run = run_studio(x, file, "--ctx 64 --script '" + dir + "/script.txt'", "chat");
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;

    const json sent = json::parse(read_text(dir + "/sent.json"));
    const auto first = turns_of(sent);
    ASSERT_EQ(first.size(), 2u) << "one question, one answer: the second Enter on the empty box sent nothing";
    EXPECT_EQ(first[0], std::make_pair(std::string("user"), std::string("Once upon a time\nthere was a cat")));
    EXPECT_EQ(first[1].first, "assistant");
    EXPECT_EQ(sent["chat"]["input"].get<std::string>(), "") << "the box clears after sending";
    EXPECT_EQ(sent["chat"]["system"].get<std::string>(), "You tell short stories.");

    const json full = json::parse(read_text(dir + "/full.json"));
    EXPECT_TRUE(full["chat"]["context_full"].get<bool>()) << full["stop_reason"];
    EXPECT_EQ(full["stop_reason"].get<std::string>(), "context_full");
    EXPECT_EQ(full["chat"]["context_used"].get<int>(), 64);
    EXPECT_EQ(full["chat"]["context_size"].get<int>(), 64);
    ASSERT_EQ(turns_of(full).size(), 4u);

    const json shifted = json::parse(read_text(dir + "/shifted.json"));
    const auto kept = turns_of(shifted);
    ASSERT_EQ(kept.size(), 2u) << "the oldest exchange is dropped";
    EXPECT_EQ(kept[0], std::make_pair(std::string("user"), std::string("The dog")));
    EXPECT_FALSE(shifted["chat"]["context_full"].get<bool>());
    EXPECT_LT(shifted["chat"]["context_used"].get<int>(), 64);
    EXPECT_GT(shifted["chat"]["context_used"].get<int>(), 0) << "the kept turns are evaluated again";

    // Saved as vkllm chat saves: a system message first, then the turns.
    const json saved = json::parse(read_text(dir + "/saved.json"));
    EXPECT_EQ(saved["format"], "vkllm-chat");
    ASSERT_EQ(saved["messages"].size(), 5u);
    EXPECT_EQ(saved["messages"][0]["role"], "system");
    EXPECT_EQ(saved["messages"][3]["content"], "The end");
    EXPECT_FALSE(saved["messages"][4]["content"].get<std::string>().empty()) << "the chat went on after the shift";
    const json reopened = json::parse(read_text(dir + "/reopened.json"));
    const auto back = turns_of(reopened);
    ASSERT_EQ(back.size(), 4u);
    for (size_t i = 0; i < back.size(); ++i) {
        EXPECT_EQ(back[i].first, saved["messages"][i + 1]["role"].get<std::string>());
        EXPECT_EQ(back[i].second, saved["messages"][i + 1]["content"].get<std::string>());
    }
    EXPECT_GT(reopened["chat"]["context_used"].get<int>(), 0) << "an opened conversation is evaluated";
    // Up in the empty box: the last message sent.
    EXPECT_EQ(run.exported["chat"]["input"].get<std::string>(), "The end");
    expect_nothing_cut_or_overlapping(run.exported, 1280, 800, "the chat run");
}

// No text cut and no panel over another at 1280x800 and 1600x1000, for a decoder and an
// encoder, tiled and with one panel maximised (its map zoomed, the linked text view open); BERT's [MASK] typed in the chat is the mask
// token, as `vkllm fill-mask` parses it.
TEST(StudioHeadless, LayoutHoldsAtTwoSizes) {
    Xvfb x(90, "1600x1000x24");
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string dir = vkllm::test::temp_path("studio-layout");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string dense = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string bert = vkllm::test::source_dir() + "/assets/zoo/zoo-bert.gguf";
    for (const std::string size : {"1280x800", "1600x1000"}) {
        const int w = std::stoi(size.substr(0, size.find('x'))), h = std::stoi(size.substr(size.find('x') + 1));
        std::ofstream(dir + "/script.txt") << "tokens 16\nsend Once upon a time\nmaximise attention\nzoom big 0.2 0.6 0.3 0.7\n"
                                           << "link 3 mean\nexport " << dir
                                           << "/max.json\nmaximise none\nreset-layout\n";
        const StudioRun run = run_studio(x, dense, "--script '" + dir + "/script.txt'", "layout-" + size, size);
        ASSERT_EQ(run.status, 0) << run.errors;
        EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
        expect_nothing_cut_or_overlapping(run.exported, w, h, "zoo-dense at " + size);
        EXPECT_EQ(run.exported["layout"]["tiles"].size(), 7u);
        const json max = json::parse(read_text(dir + "/max.json"));
        expect_nothing_cut_or_overlapping(max, w, h, "zoo-dense at " + size + ", attention maximised", 1);
        ASSERT_EQ(max["layout"]["tiles"].size(), 1u);
        EXPECT_EQ(max["layout"]["maximised"], "attention");
        EXPECT_EQ(max["layout"]["tiles"]["attention"][2].get<float>(), float(w));

        const StudioRun enc = run_studio(x, bert, "--prompt 'the cat sat on the [MASK] .' -n 1", "layout-bert-" + size, size);
        ASSERT_EQ(enc.status, 0) << enc.errors;
        expect_nothing_cut_or_overlapping(enc.exported, w, h, "zoo-bert at " + size);
        auto model = Model::load(bert);
        const std::vector<int32_t> ids = token_ids(enc.exported);
        EXPECT_EQ(ids, model->tokenize("the cat sat on the [MASK] .", true, true));
        EXPECT_NE(std::find(ids.begin(), ids.end(), model->mask_token()), ids.end()) << "[MASK] was split into pieces";
    }
}

// Switching models asks first when a conversation would be dropped (no: nothing changes; yes:
// the new model, in Recent); a file that does not open is not listed in Recent.
TEST(StudioHeadless, ModelSwitchAsksAndRecentListsWhatOpened) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string dense = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string moe = vkllm::test::source_dir() + "/assets/zoo/zoo-moe.gguf";
    const std::string dir = vkllm::test::temp_path("studio-switch");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "tokens 4\nsend Once upon a time\nopen-model " << moe << "\nexport " << dir
                                       << "/asked.json\nswitch-model no\nexport " << dir << "/kept.json\nopen-model "
                                       << moe << "\nswitch-model yes\n";
    const StudioRun run = run_studio(x, dense, "--script '" + dir + "/script.txt'", "switch");
    ASSERT_EQ(run.status, 0) << run.errors;
    const json asked = json::parse(read_text(dir + "/asked.json"));
    EXPECT_TRUE(asked["chat"]["asking_to_switch"].get<bool>());
    EXPECT_EQ(asked["model"]["n_embd"].get<int>(), 128) << "still zoo-dense while it asks";
    const json kept = json::parse(read_text(dir + "/kept.json"));
    EXPECT_FALSE(kept["chat"]["asking_to_switch"].get<bool>());
    EXPECT_EQ(turns_of(kept).size(), 2u) << "no: the conversation stays";
    EXPECT_TRUE(run.exported["messages"].empty()) << "yes: the new model starts a new chat";
    EXPECT_EQ(run.exported["model"]["n_embd"].get<int>(), 96) << "zoo-moe";
    const auto recent = run.exported["chat"]["recent_models"].get<std::vector<std::string>>();
    ASSERT_FALSE(recent.empty());
    EXPECT_EQ(recent.front(), moe);
}

// ALiBi (a random Jais): the attention view names the selected head's slope and draws the bias
// it adds when asked (a script's "zoom alibi"), with no validation message and no text cut at
// 1280x800; the slope the view uses is the model's.
TEST(StudioHeadless, JaisAlibiBias) {
    Xvfb x(90);
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string dir = vkllm::test::temp_path("studio-jais");
    fs::remove_all(dir);
    fs::create_directories(dir);
    random_model::RandomModelConfig c;
    c.arch = "jais";
    c.seed = 23;
    c.n_head = 8;
    c.n_head_kv = 8;
    const std::string file = dir + "/jais.gguf";
    random_model::write_random_model(c, vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf", file);
    std::ofstream(dir + "/script.txt") << "tokens 2\nsend Once upon a time, there was a little girl\nhead 5\n"
                                       << "zoom alibi 0 1 0 1\n";
    const StudioRun run = run_studio(x, file, "--script '" + dir + "/script.txt'", "jais");
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
    ASSERT_TRUE(run.exported.contains("text_fit"));
    EXPECT_TRUE(run.exported["text_fit"]["overflows"].empty()) << run.exported["text_fit"].dump();
    auto model = Model::load(file);
    // Eight heads: slopes 2^(-8/8 * (h + 1)) (the closest power of two to the head count is 8).
    EXPECT_FLOAT_EQ(alibi_slope(model->info(), 0, 5), std::exp2(-6.0f));
    EXPECT_FLOAT_EQ(alibi_slope(model->info(), 1, 0), 0.5f);
}
