// The headless proof of vkllm-studio: under Xvfb (started here) on the default Vulkan device,
// `vkllm-studio --prompt ... -n N --panels all --screenshot --export --exit` must exit 0 with
// no validation message, write a screenshot that is not blank, keep its frames fast while the
// engine generates, and export panel data equal to the engine's own probes for the same
// tokens, computed here in one evaluation (the studio stitched them from one step per token).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "probe_json.h"
#include "studio_export.h"
#include "test_support.h"
#include "view_models.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

using namespace vkllm;
using namespace vkllm::studio;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// An X server of our own on a free display number, stopped at the end.
class Xvfb {
public:
    Xvfb() {
        for (int d = 90 + int(getpid() % 50); d < 400; ++d) {
            if (fs::exists("/tmp/.X11-unix/X" + std::to_string(d)) || fs::exists("/tmp/.X" + std::to_string(d) + "-lock"))
                continue;
            display_ = d;
            break;
        }
        const std::string name = ":" + std::to_string(display_);
        pid_ = fork();
        if (pid_ == 0) {
            execlp("Xvfb", "Xvfb", name.c_str(), "-screen", "0", "1280x800x24", "-nolisten", "tcp", (char*)nullptr);
            _exit(127);
        }
        // Ready when its socket appears.
        for (int i = 0; i < 100 && !fs::exists("/tmp/.X11-unix/X" + std::to_string(display_)); ++i) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    ~Xvfb() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            waitpid(pid_, nullptr, 0);
        }
    }
    bool running() const { return pid_ > 0 && fs::exists("/tmp/.X11-unix/X" + std::to_string(display_)); }
    std::string display() const { return ":" + std::to_string(display_); }

private:
    int display_ = 99;
    pid_t pid_ = -1;
};

std::string studio_binary() {
    const char* bin = std::getenv("VKLLM_STUDIO_BIN");
    return bin ? bin : "vkllm-studio";
}

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
StudioRun run_studio(const Xvfb& x, const std::string& model, const std::string& what, const std::string& tag) {
    StudioRun r;
    const std::string dir = vkllm::test::temp_path("studio-" + tag);
    r.screenshot = dir + "/shot.png";
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio_binary() + "' -m '" + model + "' " + what +
                            " --temp 0 --panels all --size 1280x800 --screenshot '" + r.screenshot + "' --export '" + dir +
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

// The whole check for one model.
void check_model(const std::string& file, const std::string& tag) {
    Xvfb x;
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
    so.probes = probe_config(all, info);
    Session session(*model, so);
    // Greedy text: the studio's answer is the engine's.
    GenerateOptions go;
    go.sampler.temperature = 0;
    go.max_tokens = n;
    const GenerateResult g = session.generate(model->tokenize(prompt, true), go);
    EXPECT_EQ(e["generated_text"].get<std::string>(), g.text);
    // The studio's probes cover every token in its cache; evaluate them in one pass.
    const std::vector<int32_t> tokens = e["tokens"].get<std::vector<int32_t>>();
    ASSERT_GT(tokens.size(), 1u);
    session.reset();
    session.eval(tokens);
    const ProbeResults want = session.probes();
    const json& p = e["probes"];

    ASSERT_EQ(p["attention"].size(), want.attention.size());
    for (size_t l = 0; l < want.attention.size(); ++l) {
        const AttentionMap& m = want.attention[l];
        EXPECT_EQ(p["attention"][l]["query_pos"].get<std::vector<int>>(), m.query_pos);
        expect_near_vectors(p["attention"][l]["probs"].get<std::vector<float>>(), m.probs, 2e-4f,
                            "attention of layer " + std::to_string(m.layer));
    }
    ASSERT_EQ(p["residual"].size(), want.residual.size());
    for (size_t l = 0; l < want.residual.size(); ++l) {
        const ResidualStat& s = want.residual[l];
        std::vector<float> rel = p["residual"][l]["token_max_abs"].get<std::vector<float>>();
        ASSERT_EQ(rel.size(), s.token_max_abs.size());
        for (size_t t = 0; t < rel.size(); ++t) rel[t] = rel[t] / std::max(s.token_max_abs[t], 1e-6f);
        expect_near_vectors(rel, std::vector<float>(rel.size(), 1.0f), 1e-3f, "residual max of layer " + std::to_string(s.layer));
        EXPECT_EQ(p["residual"][l]["token_channel"].get<std::vector<int>>(), s.token_channel);
    }
    ASSERT_EQ(p["routing"].size(), want.routing.size());
    for (size_t l = 0; l < want.routing.size(); ++l) {
        EXPECT_EQ(p["routing"][l]["experts"].get<std::vector<int32_t>>(), want.routing[l].experts);
        expect_near_vectors(p["routing"][l]["weights"].get<std::vector<float>>(), want.routing[l].weights, 1e-4f,
                            "gate weights of layer " + std::to_string(want.routing[l].layer));
    }

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

// A residual edit from the activations panel, then Restore: the studio's before/after columns
// are the engine's next-token distributions without and with the same edit.
TEST(StudioHeadless, InterventionAndRestore) {
    Xvfb x;
    ASSERT_TRUE(x.running()) << "Xvfb could not start (install it: scripts/install-deps.sh)";
    const std::string file = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string dir = vkllm::test::temp_path("studio-edit");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "tokens 4\nsend Once upon a time\nmean 2 34\nexport " << dir
                                       << "/edited.json\nrestore\n";
    const StudioRun run = run_studio(x, file, "--script '" + dir + "/script.txt'", "edit");
    ASSERT_EQ(run.status, 0) << run.errors;
    EXPECT_EQ(run.errors.find("validation"), std::string::npos) << run.errors;
    const json edited = json::parse(read_text(dir + "/edited.json"));
    const json& restored = run.exported;
    ASSERT_TRUE(edited.contains("intervention"));
    ASSERT_TRUE(restored.contains("intervention"));

    auto model = Model::load(file);
    Session session(*model);
    const std::vector<int32_t> tokens = edited["tokens"].get<std::vector<int32_t>>();
    const std::vector<float> plain = softmax(session.eval(tokens));
    session.reset();
    session.set_residual_edits({{2, 34, ResidualEdit::Mode::Mean, 0.0f}});
    const std::vector<float> with_edit = softmax(session.eval(tokens));
    expect_top(edited["intervention"]["before"], plain, "before the edit");
    expect_top(edited["intervention"]["after"], with_edit, "with the edit");
    EXPECT_GT(edited["intervention"]["kl"].get<float>(), 0.0f);
    // Restore: back to the plain distribution.
    expect_top(restored["intervention"]["after"], plain, "after restore");
    EXPECT_TRUE(restored["intervention"]["in_force"].empty());
}

TEST(StudioHeadless, ZooDense) { check_model(vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf", "dense"); }

TEST(StudioHeadless, ZooMoe) { check_model(vkllm::test::source_dir() + "/assets/zoo/zoo-moe.gguf", "moe"); }
