// The studio's State window under Xvfb (started here): on the nemotron_h golden (Mamba-2 layers
// beside attention) a script opens the window on a Mamba-2 layer, sends a prompt and crops a
// screenshot to the window; the studio exits 0 with no validation message (VKLLM_VALIDATE from
// the test environment) and the picture has the window's norm lines, decay map and mixing map
// (not a blank frame). A model without recurrent layers gets the window's explanation instead.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "test_support.h"
#include "xvfb.h"

namespace fs = std::filesystem;

namespace {

using vkllm::test::studio_binary;
using vkllm::test::Xvfb;

// Runs `script` on `model`; returns the exit status, with the screenshot at dir/state.png.
int run_script(const Xvfb& x, const std::string& model, const std::string& script, const std::string& dir) {
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << script;
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio_binary() + "' -m '" + model +
                            "' --temp 0 --panels chat --size 1280x800 --config-dir '" + dir + "/config' --script '" + dir +
                            "/script.txt' --exit 2> '" + dir + "/stderr.txt'";
    const int raw = std::system(cmd.c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// Distinct colours in the picture (a blank or single-colour frame has a handful).
int colours(const std::string& png, int& width, int& height) {
    int channels = 0;
    unsigned char* px = stbi_load(png.c_str(), &width, &height, &channels, 3);
    if (!px) return 0;
    std::vector<bool> seen(1 << 15);
    int n = 0;
    for (int i = 0; i < width * height; ++i) {
        const int key = (px[3 * i] >> 3) << 10 | (px[3 * i + 1] >> 3) << 5 | (px[3 * i + 2] >> 3);
        if (!seen[size_t(key)]) seen[size_t(key)] = true, ++n;
    }
    stbi_image_free(px);
    return n;
}

TEST(StateWindow, DrawsAMamba2LayersStateUnderXvfb) {
    ASSERT_TRUE(fs::exists(studio_binary())) << studio_binary();
    Xvfb x(450);
    ASSERT_TRUE(x.running()) << "Xvfb did not start";
    const std::string dir = vkllm::test::temp_path("state-window");
    const std::string model = vkllm::test::source_dir() + "/tests/golden/ssm/nemotron_h.gguf";
    const int status = run_script(x, model,
                                  "state 0 1\ntokens 4\nsend Once upon a time, there was a little girl\n"
                                  "screenshot " + dir + "/state.png state\n",
                                  dir);
    std::ifstream err(dir + "/stderr.txt");
    const std::string errors((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    ASSERT_EQ(status, 0) << errors;
    int w = 0, h = 0;
    EXPECT_GT(colours(dir + "/state.png", w, h), 40) << "the State window looks blank";
    EXPECT_LT(w, 1280);  // cropped to the window, not the whole frame
    EXPECT_GT(w, 300);

    // No recurrent layers: the window explains itself, and the studio still exits cleanly.
    const std::string plain = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    EXPECT_EQ(run_script(x, plain, "state on\ntokens 2\nsend Once\nscreenshot " + dir + "/plain.png state\n", dir + "/plain"),
              0);
    EXPECT_TRUE(fs::exists(dir + "/plain.png"));
    fs::remove_all(dir);
}

}  // namespace
