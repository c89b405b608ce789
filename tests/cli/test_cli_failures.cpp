// The failure paths a user meets: output files that are complete or untouched, stdout
// write errors, integer options out of range, prompts from files, Ctrl-C during `run`.
// Each case runs the vkllm binary as a shell would.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

struct Result {
    int code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string bin() { return test::vkllm_bin(); }

// Runs `script` with bash, $VKLLM naming the binary; stdout and stderr are kept apart.
Result sh(const std::string& script) {
    const std::string err_path = test::temp_path("stderr.txt");
    const std::string cmd = "VKLLM='" + bin() + "' bash -c '" + script + "' 2>" + err_path;
    const test::ShellResult sr = test::shell(cmd);
    Result r;
    r.code = sr.code;
    r.out = sr.out;
    r.err = read_text(err_path);
    return r;
}

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

size_t files_in(const std::string& dir) {
    return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- output files: complete or untouched ----

// RLIMIT_FSIZE (bash's ulimit -f, in KiB) makes a write fail part-way as a full disk does;
// SIGXFSZ ignored, the write returns EFBIG instead of killing the process.
TEST(CliFailures, LogitsOnAFullDiskKeepsTheGoodFileAndLeavesNoTemporary) {
    const std::string dir = test::temp_path("logits-out");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string target = dir + "/logits.f32";
    std::ofstream(target, std::ios::binary) << "a good file from an earlier run";

    const Result r = sh("trap \"\" XFSZ; ulimit -f 4; $VKLLM logits -m " + zoo("zoo-dense") +
                        " -p \"Once upon a time there was\" -o " + target);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "writing " + target + " failed: File too large")) << r.err;
    EXPECT_TRUE(contains(r.err, "left as it was")) << r.err;
    EXPECT_EQ(read_text(target), "a good file from an earlier run");
    EXPECT_EQ(files_in(dir), 1u) << "a temporary file was left behind";

    // Without the limit the same command replaces it with the whole file.
    const Result ok = sh("$VKLLM logits -m " + zoo("zoo-dense") + " -p \"Once upon a time there was\" -o " + target);
    ASSERT_EQ(ok.code, 0) << ok.err;
    EXPECT_GT(fs::file_size(target), 4096u);
    EXPECT_EQ(fs::file_size(target) % 4, 0u);
    EXPECT_EQ(files_in(dir), 1u);
    fs::remove_all(dir);
}

TEST(CliFailures, AnOutputThatCannotBeWrittenFailsBeforeTheModelLoads) {
    // A folder that does not exist, and a target that is a folder: the reason, exit 1, and no
    // work done first (the model named does not even exist: its error would come first otherwise).
    Result r = sh("$VKLLM logits -m /no/such/model.gguf -p hi -o /no/such/folder/out.f32");
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "cannot write /no/such/folder/out.f32: No such file or directory")) << r.err;
    const std::string dir = test::temp_path("a-folder");
    fs::create_directories(dir);
    r = sh("$VKLLM probe -m /no/such/model.gguf -p hi -o " + dir);
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "cannot write " + dir + ": it is a directory")) << r.err;
    EXPECT_TRUE(fs::is_directory(dir));
    if (geteuid() != 0) {  // root writes anywhere
        fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
        r = sh("$VKLLM logits -m /no/such/model.gguf -p hi -o " + dir + "/out.f32");
        EXPECT_EQ(r.code, 1);
        EXPECT_TRUE(contains(r.err, "Permission denied")) << r.err;
        fs::permissions(dir, fs::perms::owner_all);
    }
    fs::remove_all(dir);
    // A device is written in place (nothing is renamed over /dev/null).
    r = sh("$VKLLM logits -m " + zoo("zoo-dense") + " -p hi -o /dev/null");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(CliFailures, ProbeOnAFullDiskKeepsTheGoodFile) {
    const std::string dir = test::temp_path("probe-out");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string target = dir + "/probe.json";
    std::ofstream(target, std::ios::binary) << "{}";
    const Result r = sh("trap \"\" XFSZ; ulimit -f 1; $VKLLM probe -m " + zoo("zoo-dense") +
                        " -p \"Once upon a time\" --attention 0 --residual -o " + target);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "File too large")) << r.err;
    EXPECT_EQ(read_text(target), "{}");
    EXPECT_EQ(files_in(dir), 1u);
    fs::remove_all(dir);
}

TEST(CliFailures, ChatSaveOnAFullDiskKeepsTheGoodFile) {
    const std::string dir = test::temp_path("chat-save");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string target = dir + "/conversation.json";
    std::ofstream(target, std::ios::binary) << "{\"a\": \"good conversation\"}";
    const Result r = sh("trap \"\" XFSZ; printf \"/save " + target + "\\n/exit\\n\" | (ulimit -f 0; exec $VKLLM chat) 2>&1 | cat >&2");  // stderr through a pipe: no limit there
    EXPECT_TRUE(contains(r.err, "writing " + target + " failed: File too large")) << r.err;
    EXPECT_EQ(read_text(target), "{\"a\": \"good conversation\"}");
    EXPECT_EQ(files_in(dir), 1u);
    const Result ok = sh("printf \"/save " + target + "\\n/exit\\n\" | $VKLLM chat");
    EXPECT_TRUE(contains(ok.err, "saved 0 turns")) << ok.err;
    EXPECT_NE(read_text(target), "{\"a\": \"good conversation\"}");
    EXPECT_EQ(files_in(dir), 1u);
    fs::remove_all(dir);
}

// The pipeline cache is optional: a save that fails (the file size limit standing in for a full
// disk) keeps the previous cache whole, leaves no temporary, and the run still succeeds.
// Also the cold-start note: with an empty cache the run compiles its shaders (lavapipe does it
// at the first dispatch) and says that its timings include it; the same run again does not.
TEST(CliFailures, PipelineCacheOnAFullDiskKeepsThePreviousCache) {
    const std::string cache_home = test::temp_path("xdg-cache");
    fs::remove_all(cache_home);
    fs::create_directories(cache_home);
    // Prepared ahead (the shaders before the prompt) or compiled during it: the note says which.
    const std::string note = "note: first run on this device (or of this kind of model): ";
    Result r = sh("XDG_CACHE_HOME=" + cache_home + " $VKLLM run -p hi -n 1");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, note)) << r.err;
    const std::string dir = cache_home + "/vkllm";
    // The pipeline cache and beside it the list of pipelines created on this device.
    ASSERT_EQ(files_in(dir), 2u);
    fs::path cache;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".bin") cache = e.path();
    ASSERT_FALSE(cache.empty());
    const std::string good = read_text(cache.string());
    ASSERT_GT(good.size(), 0u);  // lavapipe's cache is a 32-byte header

    r = sh("trap \"\" XFSZ; (ulimit -f 0; XDG_CACHE_HOME=" + cache_home + " exec $VKLLM run -p hi -n 1) 2>&1 | cat >&2");
    EXPECT_TRUE(contains(r.err, "1 token generated")) << r.err;
    EXPECT_FALSE(contains(r.err, "note: first run")) << r.err;
    EXPECT_EQ(read_text(cache.string()), good) << "the cache changed: " << fs::file_size(cache) << " bytes now";
    EXPECT_EQ(files_in(dir), 2u) << "a temporary was left beside the cache";
    fs::remove_all(cache_home);
}

TEST(CliFailures, QuantizeToALargerTypeWarns) {
    const std::string q8 = test::temp_path("q8.gguf"), f16 = test::temp_path("f16.gguf");
    Result r = sh("$VKLLM quantize " + zoo("zoo-dense") + " " + q8 + " Q8_0");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(contains(r.err, "warning")) << r.err;
    r = sh("$VKLLM quantize " + q8 + " " + f16 + " F16");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "warning: F16 is larger than the quantised types it converts from")) << r.err;
    fs::remove(q8);
    fs::remove(f16);
}

// ---- stdout ----

TEST(CliFailures, AFullStdoutIsAnError) {
    for (const std::string cmd : {"run -p hi -n 4 --temp 0", "tokenize -p hi", "inspect", "info", "--help", "--version"}) {
        const Result r = sh("$VKLLM " + cmd + " > /dev/full");
        EXPECT_EQ(r.code, 1) << cmd << ": " << r.err;
        EXPECT_TRUE(contains(r.err, "writing the standard output failed")) << cmd << ": " << r.err;
    }
    // A usage error keeps its own exit code.
    EXPECT_EQ(sh("$VKLLM info --yaml > /dev/full").code, 2);
}

// ---- integer options ----

TEST(CliFailures, IntegerOptionsOutOfRangeAreUsageErrorsBeforeTheModelLoads) {
    struct Case {
        std::string args, message;
    };
    const std::string max_int = "2147483647";
    const std::vector<Case> cases = {
        {"run -p hi -n 4294967298", "option -n must be <= " + max_int + " (its range: [0, " + max_int + "]), got 4294967298"},
        {"run -p hi -c 4294967304", "option -c must be <= " + max_int + " (its range: [0, " + max_int + "]), got 4294967304"},
        {"run -p hi -n 2147483648", "option -n must be <= " + max_int + " (its range: [0, " + max_int + "]), got 2147483648"},
        {"run -p hi -n -1", "option -n must be >= 0 (its range: [0, " + max_int + "]), got -1"},
        {"run -p hi --top-k 4294967297", "option --top-k must be <= " + max_int + " (its range: [0, " + max_int + "])"},
        {"run -p hi -b 0", "option -b must be >= 1 (its range: [1, " + max_int + "]), got 0"},
        {"run -p hi --seed -2", "option --seed must be >= -1 (its range: [-1, 9223372036854775807]), got -2"},
        {"run -p hi --seed 99999999999999999999", "option --seed is out of its range [-1, 9223372036854775807]"},
        {"run -p hi -n 12abc", "option -n expects an integer"},
        {"run -p hi --repeat-penalty 0", "repeat_penalty"},
        {"run -p hi --temp nan", "temperature"},
        {"bench -n 4294967297", "option -n must be <= 16777216 (its range: [0, 16777216]), got 4294967297"},
        {"bench -r 0", "option -r must be >= 1 (its range: [1, 1000]), got 0"},
        {"logits -p hi -o /dev/null -b 0", "option -b must be >= 1"},
        {"probe -p hi -o /dev/null -n 4294967296", "option -n must be <= " + max_int},
        {"perplexity -f /dev/null -c -5", "option -c must be >= 0"},
        {"chat -n 0", "option -n must be >= 1"},
        {"serve --port 65536", "option --port must be <= 65535 (its range: [0, 65535]), got 65536"},
    };
    for (const Case& c : cases) {
        // The model named does not exist: a usage error must come before it is opened.
        const Result r = sh("$VKLLM " + c.args + " -m /no/such/model.gguf");
        EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
        EXPECT_TRUE(contains(r.err, c.message)) << c.args << ": " << r.err;
        EXPECT_EQ(r.out, "") << c.args << ": the prompt was echoed before the error";
    }
}

TEST(CliFailures, SeedMinusOneIsRandomAndAGivenSeedRepeats) {
    auto seed_of = [](const std::string& err) {
        const size_t at = err.find(", seed ");
        return at == std::string::npos ? std::string() : err.substr(at + 7, err.find('\n', at) - at - 7);
    };
    const Result a = sh("$VKLLM run -p hi -n 1 --seed -1");
    const Result b = sh("$VKLLM run -p hi -n 1 --seed -1");
    ASSERT_EQ(a.code, 0) << a.err;
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_NE(seed_of(a.err), "18446744073709551615") << a.err;  // not -1 taken literally
    EXPECT_NE(seed_of(a.err), seed_of(b.err));
    const Result c = sh("$VKLLM run -p hi -n 1 --seed 42");
    EXPECT_EQ(seed_of(c.err), "42") << c.err;
}

// ---- prompts from files, help and version ----

TEST(CliFailures, PromptsFromAFileOrStandardInput) {
    // Larger than the 128 KiB one argument may hold.
    std::string text;
    while (text.size() < 200 * 1024) text += "Once upon a time there was a little dog. ";
    const std::string path = test::temp_path("prompt.txt");
    std::ofstream(path, std::ios::binary) << text;
    const Result from_file = sh("$VKLLM tokenize -f " + path);
    ASSERT_EQ(from_file.code, 0) << from_file.err;
    const Result from_stdin = sh("$VKLLM tokenize -f - < " + path);
    ASSERT_EQ(from_stdin.code, 0) << from_stdin.err;
    EXPECT_EQ(from_file.out, from_stdin.out);
    EXPECT_GT(std::count(from_file.out.begin(), from_file.out.end(), ' '), 10000);
    const Result short_one = sh("printf \"Once upon\" | $VKLLM tokenize -f -");
    EXPECT_EQ(short_one.out, sh("$VKLLM tokenize -p \"Once upon\"").out);

    const Result run = sh("printf \"Once upon\" | $VKLLM run -f - -n 2 --temp 0");
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.out.rfind("Once upon", 0), 0u) << run.out;
    EXPECT_EQ(sh("$VKLLM logits -f " + path + ".missing -o /dev/null").code, 1);
    const Result both = sh("$VKLLM tokenize -p hi -f " + path);
    EXPECT_EQ(both.code, 2);
    EXPECT_TRUE(contains(both.err, "not both")) << both.err;
    const Result folder = sh("$VKLLM tokenize -f /tmp");
    EXPECT_EQ(folder.code, 1);
    EXPECT_TRUE(contains(folder.err, "cannot read prompt file /tmp: it is a directory")) << folder.err;
}

TEST(CliFailures, HelpExitsZeroOnStdoutAndVersionPrints) {
    for (const std::string cmd : {"info", "run", "tokenize", "logits", "bench", "inspect", "quantize", "probe"}) {
        const Result r = sh("$VKLLM " + cmd + " --help");
        EXPECT_EQ(r.code, 0) << cmd;
        EXPECT_TRUE(contains(r.out, "vkllm " + cmd)) << cmd << ": " << r.out;
        EXPECT_EQ(r.err, "") << cmd;
    }
    const Result v = sh("$VKLLM --version");
    EXPECT_EQ(v.code, 0);
    EXPECT_EQ(v.out.rfind("vkllm ", 0), 0u) << v.out;
}

TEST(CliFailures, RunTimingLineSaysTokenAndGivesNoSpeedWithoutADecodeStep) {
    const Result one = sh("$VKLLM run -p hi -n 1 --temp 0");
    ASSERT_EQ(one.code, 0) << one.err;
    EXPECT_TRUE(contains(one.err, "; 1 token generated\n")) << one.err;
    EXPECT_FALSE(contains(one.err, "decode")) << one.err;
    const Result two = sh("$VKLLM run -p hi -n 3 --temp 0 --seed 1");
    ASSERT_EQ(two.code, 0) << two.err;
    EXPECT_TRUE(contains(two.err, "; decode 3 tokens in ")) << two.err;
    EXPECT_TRUE(contains(two.err, "vkllm: prompt 2 tokens in ")) << two.err;
}

TEST(CliFailures, TokenizeWarnsOfADoubleBos) {
    const Result r = sh("$VKLLM tokenize --add-special --parse-special -p \"<s>hi\"");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("1 1 ", 0), 0u) << r.out;
    EXPECT_TRUE(contains(r.err, "two BOS")) << r.err;
    const Result once = sh("$VKLLM tokenize --add-special -p \"<s>hi\"");
    EXPECT_FALSE(contains(once.err, "two BOS")) << once.err;
}

// zoo-dense with tokenizer.ggml.bos_token_id set past the vocabulary, patched in place (the
// value follows the key and its 4-byte type).
TEST(CliFailures, OutOfRangeSpecialTokenIdsAreWarnedAbout) {
    std::string bytes = read_text(zoo("zoo-dense"));
    const std::string key = "tokenizer.ggml.bos_token_id";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    uint32_t type = 0;
    std::memcpy(&type, &bytes[at + key.size()], 4);
    ASSERT_TRUE(type == 4 || type == 5) << "GGUF type " << type;  // UINT32 or INT32
    const uint32_t bad = 1000000;
    std::memcpy(&bytes[at + key.size() + 4], &bad, 4);
    const std::string patched = test::temp_path("bad-bos.gguf");
    std::ofstream(patched, std::ios::binary) << bytes;

    const std::string warning = "warning: tokenizer.ggml.bos_token_id is 1000000, outside the vocabulary of ";
    Result r = sh("$VKLLM tokenize -m " + patched + " -p hi");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, warning)) << r.err;
    r = sh("$VKLLM run -m " + patched + " -p hi -n 1");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, warning)) << r.err;
    r = sh("$VKLLM tokenize -m " + zoo("zoo-dense") + " -p hi");
    EXPECT_FALSE(contains(r.err, "warning:")) << r.err;
}

TEST(CliFailures, DeviceErrorsSayWhereTheValueCameFrom) {
    Result r = sh("VKLLM_DEVICE=no-such-gpu $VKLLM run -p hi -n 1");
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "no Vulkan device matches 'no-such-gpu' (from the VKLLM_DEVICE environment variable)"))
        << r.err;
    r = sh("$VKLLM run -p hi -n 1 --device 99999999999999999999");
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "(from the device option)")) << r.err;
}

// ---- non-finite values ----

// zoo-dense with one token's embedding row poisoned: the forward's output is NaN from the first
// position that token appears at (attention carries it to every later one).
std::string poisoned_model(int32_t token) {
    const std::string src = zoo("zoo-dense");
    auto file = gguf::File::open(src);
    const gguf::TensorInfo* t = file->find_tensor("token_embd.weight");
    if (!t) return "";
    std::string bytes = read_text(src);
    const std::string tensor(reinterpret_cast<const char*>(t->data), size_t(t->n_bytes));
    const size_t at = bytes.find(tensor);
    const size_t row_bytes = gguf::row_size(t->type, size_t(t->row_length()));
    size_t pos = at + size_t(token) * row_bytes;
    if (t->type == gguf::TensorType::F32) {
        const float nan = std::nanf("");
        std::memcpy(&bytes[pos], &nan, 4);
    } else if (t->type == gguf::TensorType::F16 || t->type == gguf::TensorType::Q8_0) {
        bytes[pos] = 0x00, bytes[pos + 1] = 0x7e;  // fp16 NaN (Q8_0: the block's scale)
    } else {
        return "";
    }
    const std::string out = test::temp_path("poisoned.gguf");
    std::ofstream(out, std::ios::binary) << bytes;
    return out;
}

TEST(CliFailures, NonFiniteLogitsAreReportedWithThePositionAndLogitsWritesNoFile) {
    const std::vector<std::string> ids = [] {
        std::vector<std::string> v;
        std::istringstream in(sh("$VKLLM tokenize --add-special -p \"Once upon a time\"").out);
        for (std::string id; in >> id;) v.push_back(id);
        return v;
    }();
    ASSERT_GE(ids.size(), 4u);
    const std::string model = poisoned_model(std::stoi(ids[2]));
    ASSERT_FALSE(model.empty()) << "token_embd.weight of zoo-dense has a type this test cannot poison";

    Result r = sh("$VKLLM run -m " + model + " -p \"Once upon a time\" -n 2");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "logits are NaN")) << r.err;
    // Generation computes the prompt's last row of logits only: that is the position reported.
    EXPECT_TRUE(contains(r.err, "at position 4 (input token " + ids[4] + ")")) << r.err;
    EXPECT_TRUE(contains(r.err, "inspect --check")) << r.err;

    const std::string out = test::temp_path("nan-logits.f32");
    fs::remove(out);
    r = sh("$VKLLM logits -m " + model + " -p \"Once upon a time\" -o " + out);
    EXPECT_EQ(r.code, 1) << r.err;
    // Every row is computed: the first bad one is reported (the attention's P.V product spreads
    // a NaN value row to earlier positions too, as 0 * NaN is NaN).
    EXPECT_TRUE(contains(r.err, "logits are NaN (first: token 0) at position ")) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "logits wrote NaN rows";

    // inspect --check names the tensor; the clean file passes.
    r = sh("$VKLLM inspect --check " + model);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.out, "token_embd.weight (")) << r.out;
    EXPECT_TRUE(contains(r.out, "1 with NaN or infinite values")) << r.out;
    r = sh("$VKLLM inspect --check " + zoo("zoo-dense"));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, ", 0 with NaN or infinite values")) << r.out;
}

// ---- Ctrl-C ----

// SIGINT once generation has begun: the token finishes, the timing line prints, exit 130.
TEST(CliFailures, CtrlCDuringRunPrintsTheTimingLineAndExits130) {
    const std::string out = test::temp_path("interrupted.out");
    const std::string err = test::temp_path("interrupted.err");
    const std::string cache_home = test::temp_path("interrupted-cache");
    fs::remove_all(cache_home);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) _exit(99);
        setenv("XDG_CACHE_HOME", cache_home.c_str(), 1);
        const std::string b = bin();
        execl(b.c_str(), b.c_str(), "run", "-p", "Once upon a time", "-n", "100000", "-c", "100000", "--temp", "1",
              "--seed", "3", static_cast<char*>(nullptr));
        _exit(98);
    }
    // Wait until tokens are streaming (more than the echoed prompt), then press Ctrl-C.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (read_text(out).size() <= 20 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(err);
    const std::string e = read_text(err);
    EXPECT_TRUE(contains(e, "vkllm: prompt ")) << e;
    EXPECT_TRUE(contains(e, "vkllm: interrupted")) << e;
    // The Model was destroyed normally: the pipeline cache and its pipeline list were written.
    EXPECT_TRUE(fs::exists(cache_home + "/vkllm") && files_in(cache_home + "/vkllm") == 2u);
    fs::remove_all(cache_home);
}

}  // namespace
}  // namespace vkllm
