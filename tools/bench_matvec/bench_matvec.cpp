// vkllm-bench-matvec: how fast the decode matvec (y = W x for one token) reads each weight type,
// against how fast the device copies a large buffer.
//
//   vkllm-bench-matvec [--types f16,q8_0,...] [--shapes 768x768,2048x768] [--reps N] [--repeats R]
//                      [--copies C] [--round-x] [--quantized-x] [--tokens N] [--copy-mib M] [--min-mib M]
//                      [--threads T] [--json FILE]
//
// Copy bandwidth first (--copy-mib, default 1024; 0 skips it): vkCmdCopyBuffer of one M MiB
// buffer into another, several times in one command buffer, and a compute shader's copy (up to
// 256 MiB), counting the bytes read plus the bytes written; the faster of the two is the
// achievable limit of the device's memory (copy_gbps; an H200's driver copies at 851 GB/s with
// vkCmdCopyBuffer, far below it). Then for every type and shape (n_out x n_in, a row of n_in elements per output)
// it records `reps` matvecs into one command buffer (a barrier after each, as in a decode step),
// submits it `repeats` times and prints the best time per matvec, the weight bytes read per
// second and that as a percentage of the copy bandwidth. Times are the GPU's own (timestamp
// queries) where the device has them, else the host's around the submission.
// Each shape's weights are uploaded in copies read in turn (--copies; by default 256 MiB in all),
// so a GPU's L2 cache does not hold them, and each submission reads at least --min-mib MiB of
// weights (default 256: well past the cost of a submission). The default shapes are a 134M
// Llama's projections (768 wide, 2048 FFN, 32000 vocabulary).
// --round-x times decode's matvec as the forward runs it with llama.cpp rounding: x rounded in the
// matvec (8-bit blocks for quantised types, where VKLLM_INTEGER_DOT=1 or an accelerated device
// takes the int8 path).
// --quantized-x times decode's matvec as the forward runs it now: x quantized once per input
// (ops::quantize_activations, recorded once per submission before its matvecs) and the matvecs
// reading the quants (ops::matvec_quantized) for the types that can (ops::matvec_reads_quantized;
// the others as --round-x).
// --tokens N times the product over N rows of x (default 1): 2-8 take shaders/matvec_rows.comp
// (a batched decode pass), more the tiled matmul; VKLLM_MATVEC_ROWS=1 sends 2-8 to the tiled
// matmul too, so the two can be compared at each N (the crossover ops::matmul's limit is set by).
// --json FILE writes {device, driver, copy_gbps, matvec: [{type, rows, cols, gbps, pct_of_copy,
// us, mib}]}, rewritten after every row so that a run cut short keeps what it measured.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
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

struct Row {
    std::string type;
    Shape shape;
    double mib = 0, us = 0, gbps = 0, pct_of_copy = -1;  // pct_of_copy < 0: no copy measured
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

// Runs f(begin, end) over [0, n) split into `threads` contiguous parts, on that many threads.
template <class F>
void parallel_ranges(size_t n, size_t threads, F&& f) {
    threads = std::max<size_t>(1, std::min(threads, n));
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(threads);
    for (size_t t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            try {
                f(n * t / threads, n * (t + 1) / threads);
            } catch (...) {
                errors[t] = std::current_exception();
            }
        });
    for (std::thread& th : pool) th.join();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

// Uniform values in [-1, 1): each of 64 parts draws from its own seeded stream (the same values
// for any thread count).
std::vector<float> random_values(size_t n, uint32_t seed, size_t threads) {
    std::vector<float> v(n);
    const size_t parts = 64;
    parallel_ranges(parts, threads, [&](size_t p0, size_t p1) {
        for (size_t p = p0; p < p1; ++p) {
            std::mt19937 rng(seed * 7919u + uint32_t(p));
            std::uniform_real_distribution<float> u(-1.0f, 1.0f);
            for (size_t i = n * p / parts; i < n * (p + 1) / parts; ++i) v[i] = u(rng);
        }
    });
    return v;
}

// The matrix [n_out][n_in] in `type`'s layout, quantised a band of rows per thread (every block
// lies inside one row, so the bytes are those of one call over the whole matrix).
std::vector<uint8_t> quantize_rows(TensorType type, const std::vector<float>& values, Shape sh, size_t threads) {
    const auto traits = gguf::type_traits(type);
    if (!traits || sh.n_in % traits->block_size)
        throw std::runtime_error(std::string(traits ? traits->name : "?") + ": the row length " + std::to_string(sh.n_in) +
                                 " is not a multiple of the block");
    const size_t row_bytes = size_t(sh.n_in) / traits->block_size * traits->type_size;
    std::vector<uint8_t> out(row_bytes * size_t(sh.n_out));
    if (!gguf::can_quantize(type)) {
        // A type the CPU cannot encode (the i-quants): random bytes. The kernels read and decode
        // every block alike whatever its bits, so the timing is that of real weights.
        std::mt19937 rng(7);
        for (uint8_t& b : out) b = uint8_t(rng());
        return out;
    }
    parallel_ranges(size_t(sh.n_out), threads, [&](size_t r0, size_t r1) {
        const auto part = gguf::quantize(type, values.data() + r0 * size_t(sh.n_in), (r1 - r0) * size_t(sh.n_in));
        std::memcpy(out.data() + r0 * row_bytes, part.data(), part.size());
    });
    return out;
}

// Seconds of one submission of the recording `record` made: the GPU's timestamps where the device
// has them, else the host's clock around submit_and_wait. The best of `repeats` after the warm-up below.
template <class Record>
double best_seconds(gpu::Context& ctx, int repeats, Record&& record) {
    gpu::Stream s(ctx);
    const bool stamps = ctx.caps().timestamps;
    s.set_profiling(stamps);
    double best = 1e30;
    // Untimed runs first: pipeline creation and caches, and a GPU's clocks. An idle NVIDIA GPU
    // drops its SM clock (an H200 from 1980 to 345 MHz) and raises it again only after some
    // milliseconds of work, so a submission timed from idle measured the decode kernels 4-5x
    // slow (and after 0.3 s of warm-up now and then still); at least 3 runs and 1 s of them keep
    // the device busy until its clock is up.
    const auto warm_start = std::chrono::steady_clock::now();
    int warm = 0;
    for (int r = 0; r < repeats + warm; ++r) {
        s.begin();
        s.mark("timed");
        record(s);
        const auto t0 = std::chrono::steady_clock::now();
        s.submit_and_wait();
        const auto t1 = std::chrono::steady_clock::now();
        double sec = std::chrono::duration<double>(t1 - t0).count();
        if (stamps) {
            const auto t = s.timings();
            if (!t.empty() && t[0].second > 0) sec = t[0].second * 1e-3;
        }
        if (r == warm) {  // still warming up?
            if (warm < 3 || std::chrono::duration<double>(t1 - warm_start).count() < 1.0) {
                ++warm;
                continue;
            }
        }
        if (r >= warm) best = std::min(best, sec);
    }
    return best;
}

// Bytes read plus bytes written per second by vkCmdCopyBuffer between two device buffers of `bytes`.
double copy_gbps(gpu::Context& ctx, uint64_t bytes, int repeats, size_t threads) {
    gpu::Buffer src(ctx, bytes, gpu::Memory::Device), dst(ctx, bytes, gpu::Memory::Device);
    // Random bytes (no pattern a memory system could compress), uploaded in 64 MiB pieces.
    const uint64_t piece = std::min<uint64_t>(bytes, 64ull << 20);
    const auto noise = random_values(size_t(piece / 4), 3, threads);
    for (uint64_t off = 0; off < bytes; off += piece) src.upload(noise.data(), std::min(piece, bytes - off), off);
    // At least 8 GiB of traffic per submission, and at least 4 copies.
    const int n = int(std::clamp<double>(std::ceil(8.0 * (1ull << 30) / (2.0 * double(bytes))), 4, 256));
    const double sec = best_seconds(ctx, repeats, [&](gpu::Stream& s) {
        for (int i = 0; i < n; ++i) {
            s.copy(src, 0, dst, 0, bytes);
            s.barrier("next copy");
        }
    });
    return 2.0 * double(bytes) * n / sec / 1e9;
}

// The same through a compute shader (ops::copy_checked: each thread reads and writes floats,
// consecutive threads on consecutive addresses): a driver may run vkCmdCopyBuffer on a copy
// engine well below the memory's limit (an H200: 851 GB/s, while its F16 matvec read 3.1 TB/s).
// The buffers are at most 256 MiB, in rows of 64 Ki floats.
double compute_copy_gbps(gpu::Context& ctx, uint64_t bytes, int repeats) {
    const int64_t cols = 65536;
    const int64_t rows = int64_t(std::min<uint64_t>(bytes, 256ull << 20) / (uint64_t(cols) * 4));
    if (rows < 1 || uint64_t(rows) > ctx.caps().max_workgroup_count[1]) return 0;
    const uint64_t used = uint64_t(rows) * uint64_t(cols) * 4;
    gpu::Buffer src(ctx, used, gpu::Memory::Device), dst(ctx, used, gpu::Memory::Device),
        flags(ctx, uint64_t(rows) * 8, gpu::Memory::Device);
    const std::vector<float> row = random_values(size_t(cols), 4, 1);  // finite values: no flag is set
    for (int64_t r = 0; r < rows; ++r) src.upload(row.data(), row.size() * 4, uint64_t(r) * uint64_t(cols) * 4);
    const int n = int(std::clamp<double>(std::ceil(8.0 * (1ull << 30) / (2.0 * double(used))), 4, 256));
    const double sec = best_seconds(ctx, repeats, [&](gpu::Stream& s) {
        for (int i = 0; i < n; ++i) {
            ops::copy_checked(s, ops::f32_rows(src, rows, cols), ops::f32_rows(dst, rows, cols), flags);
            s.barrier("next copy");
        }
    });
    return 2.0 * double(used) * n / sec / 1e9;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else out += c;
    }
    return out + "\"";
}

void write_json(const std::string& path, const gpu::Capabilities& caps, double copy, uint64_t copy_bytes, bool round_x,
                bool quantized_x, int tokens, const std::vector<Row>& rows) {
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::string driver = caps.driver_name + " " + caps.driver_version;
    if (!caps.driver_info.empty() && caps.driver_info != caps.driver_version) driver += " (" + caps.driver_info + ")";
    std::fprintf(f, "{\"device\": %s, \"driver\": %s, \"api_version\": %s, ", json_string(caps.name).c_str(),
                 json_string(driver).c_str(), json_string(caps.api_version).c_str());
    if (copy > 0) std::fprintf(f, "\"copy_gbps\": %.1f, \"copy_mib\": %.0f, ", copy, double(copy_bytes) / 1048576.0);
    else std::fprintf(f, "\"copy_gbps\": null, ");
    std::fprintf(f, "\"round_x\": %s, \"quantized_x\": %s, \"integer_dot_matvec\": %s, \"tokens\": %d, \"matvec\": [",
                 round_x ? "true" : "false", quantized_x ? "true" : "false", caps.integer_dot_matvec ? "true" : "false",
                 tokens);
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::fprintf(f, "%s\n  {\"type\": %s, \"rows\": %lld, \"cols\": %lld, \"gbps\": %.2f, \"pct_of_copy\": ",
                     i ? "," : "", json_string(r.type).c_str(), static_cast<long long>(r.shape.n_out),
                     static_cast<long long>(r.shape.n_in), r.gbps);
        if (r.pct_of_copy >= 0) std::fprintf(f, "%.2f", r.pct_of_copy);
        else std::fprintf(f, "null");
        std::fprintf(f, ", \"us\": %.2f, \"mib\": %.3f}", r.us, r.mib);
    }
    std::fprintf(f, "\n]}\n");
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error(path + ": cannot write");
}

int run(int argc, char** argv) {
    std::string types = "f32,f16,q8_0,q4_0,q4_1,q5_0,q4_K,q5_K,q6_K";
    std::string shapes = "768x768,2048x768,768x2048,32000x768";
    std::string json;
    int reps = 0, repeats = 5, copies = 0, copy_mib = 1024, min_mib = 256, threads = 0, tokens = 1;
    bool round_x = false, quantized_x = false;
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
        else if (a == "--copy-mib") copy_mib = std::stoi(value());
        else if (a == "--min-mib") min_mib = std::stoi(value());
        else if (a == "--threads") threads = std::stoi(value());
        else if (a == "--json") json = value();
        else if (a == "--round-x") round_x = true;
        else if (a == "--quantized-x") round_x = quantized_x = true;
        else if (a == "--tokens") tokens = std::stoi(value());
        else if (a == "-h" || a == "--help") {
            std::printf("usage: vkllm-bench-matvec [--types f16,q8_0,...] [--shapes ROWSxCOLS,...] [--reps N] "
                        "[--repeats R] [--copies C] [--round-x] [--quantized-x] [--tokens N] [--copy-mib M] [--min-mib M] "
                        "[--threads T] "
                        "[--json FILE]\n");
            return 0;
        } else throw std::runtime_error("unknown argument '" + a + "'");
    }
    if (repeats < 1) throw std::runtime_error("--repeats must be at least 1");
    if (tokens < 1) throw std::runtime_error("--tokens must be at least 1");
    if (round_x && tokens > 1)
        throw std::runtime_error("--round-x and --quantized-x time the one-token matvec: they take no --tokens");
    if (copies < 0) throw std::runtime_error("--copies must be positive");
    if (copy_mib < 0 || min_mib < 0) throw std::runtime_error("--copy-mib and --min-mib must be positive");
    const size_t n_threads = threads > 0 ? size_t(threads) : std::max(1u, std::thread::hardware_concurrency());

    auto ctx = gpu::Context::create();
    const gpu::Capabilities& caps = ctx->caps();
    std::printf("device: %s (%s %s)%s%s; %d token%s per product\n", caps.name.c_str(), caps.driver_name.c_str(),
                caps.driver_version.c_str(),
                round_x ? (quantized_x ? (caps.integer_dot_matvec ? "; x quantized once, int8 dot where the type has one"
                                                                  : "; x quantized once, float dot")
                                       : caps.integer_dot_matvec ? "; x rounded, int8 dot" : "; x rounded, float dot")
                        : "",
                caps.timestamps ? "; GPU timestamps" : "; host clock", tokens, tokens == 1 ? "" : "s");
    std::vector<Row> rows;
    double copy = 0;
    uint64_t copy_bytes = 0;
    if (copy_mib > 0) {
        copy_bytes = std::min<uint64_t>(uint64_t(copy_mib) << 20, caps.max_memory_allocation_size);
        const double dma = copy_gbps(*ctx, copy_bytes, repeats, n_threads);
        const double shader = compute_copy_gbps(*ctx, copy_bytes, repeats);
        std::printf("copy   %9.0f MiB  %8.1f GB/s (read + written; vkCmdCopyBuffer)\n", double(copy_bytes) / 1048576.0,
                    dma);
        std::printf("copy   %9.0f MiB  %8.1f GB/s (read + written; a compute shader)\n",
                    double(std::min<uint64_t>(copy_bytes, 256ull << 20)) / 1048576.0, shader);
        copy = std::max(dma, shader);  // the achievable limit: the faster of the two
    }
    if (!json.empty()) write_json(json, caps, copy, copy_bytes, round_x, quantized_x, tokens, rows);
    std::printf("%-6s %12s %10s %10s %8s %7s\n", "type", "shape", "MiB", "us", "GB/s", "%copy");
    std::fflush(stdout);
    for (const std::string& tname : split(types, ',')) {
        const TensorType type = type_named(tname);
        if (!ops::gpu_supports(type)) throw std::runtime_error(tname + " is not supported on the GPU");
        const std::string canonical = gguf::type_traits(type)->name;
        double total_bytes = 0, total_sec = 0;
        for (const std::string& sname : split(shapes, ',')) {
            const Shape sh = shape_named(sname);
            const auto values = random_values(size_t(sh.n_out * sh.n_in), 1, n_threads);
            const auto bytes = quantize_rows(type, values, sh, n_threads);
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
            const auto xv = random_values(size_t(sh.n_in) * size_t(tokens), 2, 1);
            gpu::Buffer xb(*ctx, xv.size() * 4, gpu::Memory::Device),
                yb(*ctx, size_t(sh.n_out) * size_t(tokens) * 4, gpu::Memory::Device);
            xb.upload(xv.data(), xv.size() * 4);
            // At least --min-mib MiB of weights per submission (cycling through the copies) unless
            // --reps says otherwise, and every copy at least once; at most 2000 matvecs.
            const int n = reps > 0 ? reps
                                   : std::clamp(std::max(int(std::ceil(double(min_mib) * (1 << 20) / double(bytes.size()))),
                                                         std::min(n_copies, 1000)),
                                                2, 2000);
            const bool rx = round_x && ops::matvec_rounds_activations(type);
            const bool xq = quantized_x && ops::matvec_reads_quantized(type);
            const ops::ActRounding mode = ops::activation_rounding(type);
            gpu::Buffer qb(*ctx, xq ? size_t(sh.n_in) * 2 + 64 : 4, gpu::Memory::Device);
            const double sec = best_seconds(*ctx, repeats, [&](gpu::Stream& s) {
                               if (xq) {
                                   const ops::QuantizedActs q = ops::quantized_acts(qb, mode, 1, sh.n_in);
                                   ops::quantize_activations(s, ops::f32_rows(xb, 1, sh.n_in), q);
                                   s.barrier("x is quantized before the matvecs read it");
                                   for (int i = 0; i < n; ++i) {
                                       ops::matvec_quantized(s, ws[size_t(i) % ws.size()], q, ops::f32_rows(yb, 1, sh.n_out));
                                       s.barrier("next matvec");
                                   }
                                   return;
                               }
                               for (int i = 0; i < n; ++i) {
                                   ops::matmul(s, ws[size_t(i) % ws.size()], ops::f32_rows(xb, tokens, sh.n_in),
                                               ops::f32_rows(yb, tokens, sh.n_out),
                                               false, rx);
                                   s.barrier("next matvec");
                               }
                           }) / n;
            Row row{canonical, sh, bytes.size() / 1048576.0, sec * 1e6, double(bytes.size()) / sec / 1e9};
            if (copy > 0) row.pct_of_copy = 100.0 * row.gbps / copy;
            rows.push_back(row);
            total_bytes += double(bytes.size());
            total_sec += sec;
            std::printf("%-6s %12s %10.2f %10.1f %8.2f %7s\n", tname.c_str(), sname.c_str(), row.mib, row.us, row.gbps,
                        copy > 0 ? (std::to_string(int(std::lround(row.pct_of_copy))) + "%").c_str() : "-");
            std::fflush(stdout);
            if (!json.empty()) write_json(json, caps, copy, copy_bytes, round_x, quantized_x, tokens, rows);
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
