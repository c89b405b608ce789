// vkllm-bench-matvec: how fast the decode matvec (y = W x for one token) reads each weight type.
//
//   vkllm-bench-matvec [--types f16,q8_0,...] [--shapes 768x768,2048x768] [--reps N] [--repeats R]
//                      [--round-x]
//
// For every type and shape (n_out x n_in, a row of n_in elements per output) it records `reps`
// matvecs into one command buffer (a barrier after each, as in a decode step), submits it
// `repeats` times and prints the best time per matvec and the weight bytes read per second.
// Each shape's weights are uploaded in copies read in turn (--copies; by default 256 MiB in all),
// so a GPU's L2 cache does not hold them. The default shapes are a 134M Llama's projections (768 wide, 2048 FFN, 32000 vocabulary).
// --round-x times decode's matvec as the forward runs it with llama.cpp rounding: x rounded in the
// matvec (8-bit blocks for quantised types, where VKLLM_INTEGER_DOT=1 or an accelerated device
// takes the int8 path).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/stream.h"
#include "ops/ops.h"

namespace {

using namespace vkllm;
using gguf::TensorType;

struct Shape {
    int64_t n_out, n_in;
};

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, sep);)
        if (!item.empty()) out.push_back(item);
    return out;
}

TensorType type_named(const std::string& name) {
    std::string upper = name;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    const auto t = gguf::type_from_name(upper);
    if (!t) throw std::runtime_error("unknown weight type '" + name + "'");
    return *t;
}

Shape shape_named(const std::string& s) {
    const auto parts = split(s, 'x');
    if (parts.size() != 2) throw std::runtime_error("a shape is ROWSxCOLS, not '" + s + "'");
    const Shape sh{std::stoll(parts[0]), std::stoll(parts[1])};
    if (sh.n_out <= 0 || sh.n_in <= 0) throw std::runtime_error("shape '" + s + "' must be positive");
    return sh;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
}

// Best seconds per matvec over `repeats` submissions of `reps` matvecs, cycling through the
// copies of the weights.
double time_matvec(gpu::Context& ctx, const std::vector<ops::Weight>& w, const gpu::Buffer& x, const gpu::Buffer& y,
                   int reps, int repeats, bool round_x) {
    gpu::Stream s(ctx);
    double best = 1e30;
    for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up (pipeline creation, caches)
        s.begin();
        for (int i = 0; i < reps; ++i) {
            ops::matmul(s, w[size_t(i) % w.size()], x, 0, y, 0, 1, false, 0, round_x);
            s.barrier("next matvec");
        }
        const auto t0 = std::chrono::steady_clock::now();
        s.submit_and_wait();
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) best = std::min(best, sec / reps);
    }
    return best;
}

int run(int argc, char** argv) {
    std::string types = "f32,f16,q8_0,q4_0,q4_1,q5_0,q4_K,q5_K,q6_K";
    std::string shapes = "768x768,2048x768,768x2048,32000x768";
    int reps = 0, repeats = 5, copies = 0;
    bool round_x = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--types") types = value();
        else if (a == "--shapes") shapes = value();
        else if (a == "--reps") reps = std::stoi(value());
        else if (a == "--repeats") repeats = std::stoi(value());
        else if (a == "--copies") copies = std::stoi(value());
        else if (a == "--round-x") round_x = true;
        else if (a == "-h" || a == "--help") {
            std::printf("usage: vkllm-bench-matvec [--types f16,q8_0,...] [--shapes ROWSxCOLS,...] [--reps N] "
                        "[--repeats R] [--copies C] [--round-x]\n");
            return 0;
        } else throw std::runtime_error("unknown argument '" + a + "'");
    }
    if (repeats < 1) throw std::runtime_error("--repeats must be at least 1");
    if (copies < 0) throw std::runtime_error("--copies must be positive");

    auto ctx = gpu::Context::create();
    std::printf("device: %s%s\n", ctx->caps().name.c_str(),
                round_x ? (ctx->caps().integer_dot_matvec ? "; x rounded, int8 dot" : "; x rounded, float dot") : "");
    std::printf("%-6s %12s %10s %10s %8s\n", "type", "shape", "MiB", "us", "GB/s");
    for (const std::string& tname : split(types, ',')) {
        const TensorType type = type_named(tname);
        if (!ops::gpu_supports(type)) throw std::runtime_error(tname + " is not supported on the GPU");
        double total_bytes = 0, total_sec = 0;
        for (const std::string& sname : split(shapes, ',')) {
            const Shape sh = shape_named(sname);
            const auto values = random_values(size_t(sh.n_out * sh.n_in), 1);
            const auto bytes = gguf::quantize(type, values.data(), values.size());
            // Copies of the weights, read in turn, so that a GPU's cache cannot hold them all (a
            // decode step reads each matrix once): 256 MiB or more unless --copies says otherwise.
            const int n_copies = copies > 0 ? copies
                                            : int(std::clamp<double>(std::ceil(256.0 * (1 << 20) / double(bytes.size())), 1, 256));
            std::vector<gpu::Buffer> wbs;
            std::vector<ops::Weight> ws;
            for (int c = 0; c < n_copies; ++c) {
                wbs.emplace_back(*ctx, ops::weight_buffer_bytes(type, sh.n_in, sh.n_out), gpu::Memory::Device);
                wbs.back().upload(bytes.data(), bytes.size());
            }
            for (const gpu::Buffer& wb : wbs) ws.push_back(ops::Weight{type, &wb, sh.n_in, sh.n_out});
            const auto xv = random_values(size_t(sh.n_in), 2);
            gpu::Buffer xb(*ctx, xv.size() * 4, gpu::Memory::Device), yb(*ctx, size_t(sh.n_out) * 4, gpu::Memory::Device);
            xb.upload(xv.data(), xv.size() * 4);
            // About 64 MiB of weights per submission unless --reps says otherwise.
            const int n = reps > 0 ? reps : int(std::clamp<double>(64.0 * (1 << 20) / double(bytes.size()), 2, 200));
            const double sec = time_matvec(*ctx, ws, xb, yb, std::max(n, std::min(n_copies, 1000)), repeats,
                                           round_x && ops::matvec_rounds_activations(type));
            const double gbs = double(bytes.size()) / sec / 1e9;
            total_bytes += double(bytes.size());
            total_sec += sec;
            std::printf("%-6s %12s %10.2f %10.1f %8.2f\n", tname.c_str(), sname.c_str(), bytes.size() / 1048576.0,
                        sec * 1e6, gbs);
        }
        std::printf("%-6s %12s %10.2f %10.1f %8.2f\n", tname.c_str(), "all", total_bytes / 1048576.0, total_sec * 1e6,
                    total_bytes / total_sec / 1e9);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm-bench-matvec: %s\n", e.what());
        return 1;
    }
}
