// The studio's logit lens grid under Xvfb (started here): zoo-dense generates a few tokens with
// the Logit lens panel maximised and a screenshot is cropped to it (assets/screenshots/
// lens-grid.png is one, checked by eye); the studio exits 0 with no validation message, the
// picture is not blank, and the frame log (--frame-log) has a line per frame with what it did.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "test_support.h"
#include "xvfb.h"

namespace fs = std::filesystem;

namespace {

using vkllm::test::studio_binary;
using vkllm::test::Xvfb;

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

// A frame log line's fields: key=value, tab-separated.
std::map<std::string, std::string> fields(const std::string& line) {
    std::map<std::string, std::string> f;
    std::stringstream ss(line);
    std::string kv;
    while (std::getline(ss, kv, '\t')) {
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) f[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return f;
}

TEST(LensGrid, DrawsTheGridAndLogsFramesUnderXvfb) {
    ASSERT_TRUE(fs::exists(studio_binary())) << studio_binary();
    Xvfb x(600);
    ASSERT_TRUE(x.running()) << "Xvfb did not start";
    const std::string dir = vkllm::test::temp_path("lens-grid");
    fs::create_directories(dir);
    std::ofstream(dir + "/script.txt") << "tokens 1\nsend Once upon a time, there was a little girl\n"
                                          "maximise lens\nscreenshot " + dir + "/lens.png lens\n";
    const std::string model = vkllm::test::source_dir() + "/assets/zoo/zoo-dense.gguf";
    const std::string cmd = "DISPLAY=" + x.display() + " '" + studio_binary() + "' -m '" + model +
                            "' --temp 0 --panels chat,lens --size 1280x800 --config-dir '" + dir + "/config' --script '" +
                            dir + "/script.txt' --frame-log '" + dir + "/frames.log' --exit 2> '" + dir + "/stderr.txt'";
    const int raw = std::system(cmd.c_str());
    std::ifstream err(dir + "/stderr.txt");
    const std::string errors((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << errors;

    int w = 0, h = 0;
    EXPECT_GT(colours(dir + "/lens.png", w, h), 40) << "the lens panel looks blank";
    EXPECT_GT(w, 600);  // maximised: most of the window

    // One line per frame: its end time and length, the parts; the frames that picked up a new
    // state say which and how long its view-models took, and one frame wrote the screenshot.
    std::ifstream log(dir + "/frames.log");
    std::string line;
    int frames = 0, new_states = 0, shots = 0;
    double last_t = -1;
    while (std::getline(log, line)) {
        const auto f = fields(line);
        ASSERT_TRUE(f.count("t") && f.count("ms") && f.count("gen") && f.count("draw") && f.count("end")) << line;
        EXPECT_GE(std::stod(f.at("t")), last_t) << line;
        last_t = std::stod(f.at("t"));
        ++frames;
        if (f.count("state")) {
            ++new_states;
            EXPECT_TRUE(f.count("vm")) << line;
        }
        shots += int(f.count("shot"));
    }
    EXPECT_GT(frames, 10);
    EXPECT_GT(new_states, 2);  // the model, the prompt, the generated tokens
    EXPECT_EQ(shots, 1);
    fs::remove_all(dir);
}

}  // namespace
