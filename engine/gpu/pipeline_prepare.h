// Compiling a list of pipelines ahead of their first use, on several threads, with progress.
//
// Where the driver compiles at vkCreateComputePipelines (GPU drivers), threads create the
// pipelines on the context concurrently: creation is thread-safe and the context's
// VkPipelineCache is internally synchronised. Where it compiles at the first dispatch
// (Context::compiles_at_first_dispatch: lavapipe), creating is cheap and compiling ahead
// means dispatching ahead: each pipeline gets an empty dispatch (zero workgroups, so nothing
// runs and no buffer is touched) that makes the driver compile it. One device runs its
// dispatches in order on one queue thread, so on such a driver each extra thread opens a
// device of its own on the same GPU (Context::sibling_options), compiles its share there and
// leaves the result in the driver's shader cache (Mesa's, under $XDG_CACHE_HOME); the context's
// own empty dispatch of those pipelines then loads them from that cache (milliseconds each).
// Pipelines an earlier run created (the pipeline list) are expected in that cache already and
// are warmed on the context itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpu/pipeline.h"

namespace vkllm::gpu {

class Context;

struct PrepareStatus {
    size_t done = 0, total = 0;  // pipelines compiled, pipelines asked for
    std::string what;            // the pipeline finished last (its key); empty before the first
};
using PrepareCallback = std::function<void(const PrepareStatus&)>;

// Cores not busy: the CPU count less the 1-minute load average, rounded, at least 1.
int idle_cores();

// Creates (and, where the driver compiles at first dispatch, warms) every pipeline of
// `requests` on `ctx`. threads <= 0: idle_cores(). `progress` (may be
// empty) is called on the calling thread: once with done 0 before any work, after each pipeline
// is compiled, and at least every `heartbeat_ms` while it waits. The first error (a shader the
// device cannot run, ...), or an exception thrown by `progress` (a way to stop early), is
// rethrown once every thread has stopped; the pipelines compiled by then stay created.
void prepare_pipelines(Context& ctx, const std::vector<PipelineRequest>& requests, int threads,
                       const PrepareCallback& progress = {}, int heartbeat_ms = 250);

// The pipelines of a later step (the decode step's, while the prompt runs), created on `ctx` now.
// Where the driver compiles at the first dispatch (Context::compiles_at_first_dispatch), those no
// earlier run created are compiled in the background on up to `threads` other devices of the
// same driver (threads <= 0: idle_cores()), one pipeline at a time each, into the driver's shader
// cache, and each waits in Pipeline::handle() until the device that compiled it has written it
// there (when that device closes, after its share of the list; compile_elsewhere): the
// context's first dispatch then loads the code rather than compiling it again. Returns how many
// are compiling in the background; 0 where the driver compiles at creation (compiled here, on
// the calling thread). The background work keeps no reference to `ctx`; what is still running
// at process exit stops after its current pipeline. A background failure (a device that cannot
// open) only lets the first dispatch compile the pipeline itself.
size_t prepare_in_background(Context& ctx, const std::vector<PipelineRequest>& requests, int threads);

// Makes the driver compile `p` now: an empty dispatch of it on a one-off command buffer, every
// binding bound to a small buffer. For drivers that compile at the first dispatch.
void warm_pipeline(Context& ctx, const Pipeline& p);

}  // namespace vkllm::gpu
