// vkllm-pipeline-timing KEY...: how long the driver takes to compile each pipeline, one at a time
// on one thread. KEY is a pipeline's key as VKLLM_LOG_PIPELINES prints it, the shader variant and
// its specialization constants ("matvec_f32_sg:8:8:0:0:0"). Each pipeline is created and given an
// empty dispatch (where lavapipe compiles); the wall and process CPU seconds of both are printed.
// Run it with Mesa's shader cache off (MESA_SHADER_CACHE_DISABLE=true) or a fresh XDG_CACHE_HOME,
// else a pipeline compiled before only loads.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_prepare.h"
#include "gpu/shaders.h"
#include "gpu/spirv_bindings.h"

using namespace vkllm;

namespace {

// "name:1:2:3" -> request; every binding up to the most a shader declares (16) is bound.
gpu::PipelineRequest parse_key(const std::string& key) {
    gpu::PipelineRequest r;
    size_t at = key.find(':');
    r.shader = key.substr(0, at);
    while (at != std::string::npos) {
        const size_t next = key.find(':', at + 1);
        r.spec_constants.push_back(uint32_t(std::stoul(key.substr(at + 1, next - at - 1))));
        at = next;
    }
    const gpu::EmbeddedShader* spv = gpu::find_shader(r.shader);
    if (!spv) throw std::runtime_error("no shader variant named '" + r.shader + "'");
    r.push_bytes = gpu::spirv_push_constants(spv->code, spv->size / 4).size;
    r.n_buffers = 16;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: vkllm-pipeline-timing KEY... (KEY: shader[:spec]..., as VKLLM_LOG_PIPELINES names it)\n");
        return 2;
    }
    try {
        auto ctx = gpu::Context::create();
        std::printf("%-48s %8s %8s\n", "pipeline", "wall s", "CPU s");
        for (int i = 1; i < argc; ++i) {
            const gpu::PipelineRequest r = parse_key(argv[i]);
            const auto start = std::chrono::steady_clock::now();
            const std::clock_t cpu = std::clock();
            gpu::warm_pipeline(*ctx, ctx->pipeline(r));
            std::printf("%-48s %8.2f %8.2f\n", argv[i],
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                        double(std::clock() - cpu) / CLOCKS_PER_SEC);
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkllm-pipeline-timing: %s\n", e.what());
        return 1;
    }
    return 0;
}
