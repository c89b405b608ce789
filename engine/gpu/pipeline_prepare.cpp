#include "gpu/pipeline_prepare.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <cstdio>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/error.h"

namespace vkllm::gpu {
namespace {

// What an empty dispatch binds: one small buffer at every binding, from a pool of one set.
class Warmer {
public:
    // `where` ends the log line of each warm (VKLLM_LOG_PIPELINES): "" or " on another device".
    explicit Warmer(Context& ctx, const char* where = "") : ctx_(ctx), where_(where), buffer_(ctx, kBytes, Memory::Device) {
        VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxBindings};
        VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        info.maxSets = 1;
        info.poolSizeCount = 1;
        info.pPoolSizes = &size;
        VK_CHECK(vkCreateDescriptorPool(ctx.device(), &info, nullptr, &pool_));
    }
    ~Warmer() { vkDestroyDescriptorPool(ctx_.device(), pool_, nullptr); }
    Warmer(const Warmer&) = delete;
    Warmer& operator=(const Warmer&) = delete;

    // `key` names the pipeline in the log (PipelineRequest::key(), with its specialization).
    void warm(const Pipeline& p, const std::string& key) {
        const auto start = std::chrono::steady_clock::now();
        const std::clock_t cpu = std::clock();
        dispatch_empty(p);
        // The process's CPU time is the compile's own where one pipeline compiles at a time.
        if (log_pipelines())
            std::fprintf(stderr, "vkllm: compiled %s in %.2f s (process CPU %.2f s)%s\n", key.c_str(),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                         double(std::clock() - cpu) / CLOCKS_PER_SEC, where_);
    }

private:
    void dispatch_empty(const Pipeline& p) {
        if (p.n_buffers() > kMaxBindings)
            throw std::logic_error("warm_pipeline: '" + p.name() + "' has more bindings than the warmer binds");
        VK_CHECK(vkResetDescriptorPool(ctx_.device(), pool_, 0));
        VkDescriptorSetLayout layout = p.set_layout();
        VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        alloc.descriptorPool = pool_;
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        VK_CHECK(vkAllocateDescriptorSets(ctx_.device(), &alloc, &set));
        VkDescriptorBufferInfo infos[kMaxBindings];
        VkWriteDescriptorSet writes[kMaxBindings];
        for (uint32_t i = 0; i < p.n_buffers(); ++i) {
            infos[i] = {buffer_.handle(), 0, VK_WHOLE_SIZE};
            writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
            writes[i].dstSet = set;
            writes[i].dstBinding = i;
            writes[i].descriptorCount = 1;
            writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            writes[i].pBufferInfo = &infos[i];
        }
        vkUpdateDescriptorSets(ctx_.device(), p.n_buffers(), writes, 0, nullptr);
        const std::vector<uint8_t> push(p.push_bytes(), 0);
        ctx_.run_once([&](VkCommandBuffer cb) {
            vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle());
            vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, 1, &set, 0, nullptr);
            if (!push.empty())
                vkCmdPushConstants(cb, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(push.size()), push.data());
            // Zero workgroups: valid, runs nothing, and still makes the driver build the code.
            vkCmdDispatch(cb, 0, 0, 0);
        });
    }

    static constexpr uint32_t kMaxBindings = 16;
    static constexpr uint64_t kBytes = 64 << 10;
    Context& ctx_;
    const char* where_;
    Buffer buffer_;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
};

// The work shared by the threads of one prepare_pipelines call.
class Job {
public:
    Job(Context& ctx, const std::vector<PipelineRequest>& requests) : ctx_(ctx), requests_(requests) {
        warm_ = ctx.compiles_at_first_dispatch();
        // Where compiling means dispatching, pipelines an earlier run compiled are in the driver's
        // cache: the context loads them itself rather than a sibling device compiling them again.
        for (size_t i = 0; i < requests.size(); ++i)
            (warm_ && ctx.created_before(requests[i]) ? own_ : shared_).push_back(i);
    }

    bool warm() const { return warm_; }
    size_t shared_count() const { return shared_.size(); }

    // The context's own thread: its own list, then the shared one.
    void run_on_context() {
        run([&] {
            std::unique_ptr<Warmer> warmer = warm_ ? std::make_unique<Warmer>(ctx_) : nullptr;
            auto compile = [&](size_t i) {
                const Pipeline& p = ctx_.pipeline(requests_[i]);
                if (warmer) warmer->warm(p, requests_[i].key());
            };
            for (size_t i : own_) {
                if (stop_.load()) return;
                compile(i);
                finished(i);
            }
            for (size_t i; (i = take()) < requests_.size();) {
                compile(i);
                finished(i);
            }
        });
    }

    // Another thread: on a sibling device where compiling means dispatching (its results reach
    // the context through the driver's shader cache), else on the context too. A sibling's
    // failure only costs time: finish() compiles what it took on the context.
    void run_elsewhere() {
        if (!warm_) return run_on_context_shared();
        std::unique_ptr<Context> sibling;
        std::unique_ptr<Warmer> warmer;
        try {
            sibling = Context::create(ctx_.sibling_options());
            warmer = std::make_unique<Warmer>(*sibling, " on another device");
        } catch (const std::exception&) {
            return;
        }
        for (size_t i; (i = take()) < requests_.size();) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                on_sibling_.push_back(i);
            }
            try {
                warmer->warm(sibling->pipeline(requests_[i]), requests_[i].key());
            } catch (const std::exception&) {
            }
            finished(i);
        }
    }

    // After every thread: the context's own empty dispatch of what siblings compiled (a load
    // from the driver's cache), then the first error.
    void finish() {
        if (!error_ && !on_sibling_.empty()) {
            const auto start = std::chrono::steady_clock::now();
            Warmer warmer(ctx_);
            for (size_t i : on_sibling_) warmer.warm(ctx_.pipeline(requests_[i]), requests_[i].key());
            if (log_pipelines())
                std::fprintf(stderr, "vkllm: %zu pipelines compiled on other devices loaded in %.2f s\n",
                             on_sibling_.size(),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        if (error_) std::rethrow_exception(error_);
    }

    // The calling thread: reports progress until every worker has stopped.
    void report(size_t workers, const PrepareCallback& progress, int heartbeat_ms) {
        PrepareStatus status{0, requests_.size(), ""};
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            const bool woke = cv_.wait_for(lock, std::chrono::milliseconds(std::max(heartbeat_ms, 1)),
                                           [&] { return reported_ < done_.size() || stopped_ == workers; });
            const std::vector<size_t> fresh(done_.begin() + long(reported_), done_.end());
            reported_ = done_.size();
            const bool end = stopped_ == workers;
            lock.unlock();  // the callback runs unlocked, so workers go on reporting
            if (progress) {
                for (size_t i : fresh) {
                    ++status.done;
                    status.what = requests_[i].key();
                    progress(status);
                }
                if (!woke) progress(status);  // heartbeat
            }
            if (end) return;
            lock.lock();
        }
    }

    // Workers take nothing more (a callback threw).
    void cancel() { stop_.store(true); }

    void stopped() {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stopped_;
        cv_.notify_all();
    }

private:
    void run_on_context_shared() {
        run([&] {
            for (size_t i; (i = take()) < requests_.size();) {
                ctx_.pipeline(requests_[i]);
                finished(i);
            }
        });
    }
    template <class F>
    void run(F&& work) {
        try {
            work();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
            stop_.store(true);
        }
    }
    // The next shared request, or requests_.size() when none is left (or after an error).
    size_t take() {
        if (stop_.load()) return requests_.size();
        const size_t n = next_.fetch_add(1);
        return n < shared_.size() ? shared_[n] : requests_.size();
    }
    void finished(size_t i) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.push_back(i);
        cv_.notify_all();
    }

    Context& ctx_;
    const std::vector<PipelineRequest>& requests_;
    bool warm_ = false;
    std::vector<size_t> own_, shared_;  // indices into requests_
    std::atomic<size_t> next_{0};       // next index into shared_
    std::atomic<bool> stop_{false};
    std::mutex mutex_;                  // guards what follows
    std::condition_variable cv_;
    std::vector<size_t> done_, on_sibling_;
    size_t reported_ = 0, stopped_ = 0;
    std::exception_ptr error_;
};

// A list of pipelines compiled on other devices in the background, one promise per pipeline,
// kept until the process exits.
class BackgroundCompile {
public:
    BackgroundCompile(ContextOptions sibling, std::vector<PipelineRequest> requests)
        : sibling_(std::move(sibling)), requests_(std::move(requests)), promises_(requests_.size()) {
        for (std::promise<void>& p : promises_) done_.push_back(p.get_future().share());
    }
    ~BackgroundCompile() { stop(); }

    std::shared_future<void> done(size_t i) const { return done_[i]; }
    void start(size_t threads) {
        for (size_t k = 0; k < std::min(threads, requests_.size()); ++k) threads_.emplace_back([this] { work(); });
    }
    bool finished() const { return finished_threads_.load() == threads_.size(); }
    // Takes nothing more, resolves what is left and joins.
    void stop() {
        cancel_.store(true);
        for (std::thread& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    void work() {
        std::unique_ptr<Context> sibling;
        std::unique_ptr<Warmer> warmer;  // destroyed before the device it uses
        try {
            sibling = Context::create(sibling_);
            warmer = std::make_unique<Warmer>(*sibling, " on another device, in the background");
        } catch (const std::exception&) {
            warmer.reset();  // every pipeline taken below is resolved uncompiled
        }
        std::vector<size_t> taken;
        for (size_t i; (i = next_.fetch_add(1)) < requests_.size();) {
            taken.push_back(i);
            if (warmer && !cancel_.load()) {
                try {
                    warmer->warm(sibling->pipeline(requests_[i]), requests_[i].key());
                } catch (const std::exception&) {
                }
            }
        }
        // Mesa writes its shader cache on a queue of its own, flushed when the device's instance
        // goes: only then can the context load what was compiled here. A decode step records all
        // its dispatches before it runs, so resolving them together costs its first token nothing.
        warmer.reset();
        sibling.reset();
        for (size_t i : taken) promises_[i].set_value();  // compiled or not: waiting dispatches go on
        ++finished_threads_;
    }

    ContextOptions sibling_;
    std::vector<PipelineRequest> requests_;
    std::vector<std::promise<void>> promises_;
    std::vector<std::shared_future<void>> done_;
    std::vector<std::thread> threads_;
    std::atomic<size_t> next_{0}, finished_threads_{0};
    std::atomic<bool> cancel_{false};
};

// The background compiles of this process: stopped and joined at exit (before the driver's
// own exit handlers, which were registered earlier), finished ones dropped as new ones start.
class BackgroundCompiles {
public:
    ~BackgroundCompiles() {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& job : jobs_) job->stop();
    }
    void add(std::unique_ptr<BackgroundCompile> job, size_t threads) {
        std::lock_guard<std::mutex> lock(mutex_);
        std::erase_if(jobs_, [](const auto& j) { return j->finished(); });
        jobs_.push_back(std::move(job));
        jobs_.back()->start(threads);
    }

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<BackgroundCompile>> jobs_;
};

BackgroundCompiles& background_compiles() {
    static BackgroundCompiles compiles;
    return compiles;
}

}  // namespace

size_t prepare_in_background(Context& ctx, const std::vector<PipelineRequest>& requests, int threads) {
    if (!ctx.compiles_at_first_dispatch()) {
        for (const PipelineRequest& r : requests) ctx.pipeline(r);
        return 0;
    }
    if (threads <= 0) threads = idle_cores();
    std::vector<PipelineRequest> fresh;  // not in the driver's cache from an earlier run
    for (const PipelineRequest& r : requests)
        if (!ctx.created_before(r)) fresh.push_back(r);
    // Creating is cheap where compiling waits for the first dispatch.
    for (const PipelineRequest& r : requests) ctx.pipeline(r);
    if (fresh.empty()) return 0;
    auto job = std::make_unique<BackgroundCompile>(ctx.sibling_options(), fresh);
    for (size_t i = 0; i < fresh.size(); ++i) ctx.pipeline(fresh[i]).compile_elsewhere(job->done(i));
    background_compiles().add(std::move(job), size_t(threads));
    return fresh.size();
}

int idle_cores() {
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    double load = 0;
    if (getloadavg(&load, 1) != 1) return cores;
    // A core's worth of waiting work per unit of load: compiling on more threads than there are
    // idle cores only makes the compilers share them (and costs a device per thread).
    return std::clamp(int(double(cores) - load + 0.5), 1, cores);
}

void warm_pipeline(Context& ctx, const Pipeline& p) { Warmer(ctx).warm(p, p.name()); }

void prepare_pipelines(Context& ctx, const std::vector<PipelineRequest>& requests, int threads,
                       const PrepareCallback& progress, int heartbeat_ms) {
    if (requests.empty()) {
        if (progress) progress(PrepareStatus{});
        return;
    }
    if (threads <= 0) threads = idle_cores();
    Job job(ctx, requests);
    // One thread works on the context; the others share what is not in the driver's cache yet.
    const size_t others = std::min(size_t(threads - 1), job.shared_count());
    if (progress) progress(PrepareStatus{0, requests.size(), ""});
    std::vector<std::thread> workers;
    workers.emplace_back([&] {
        job.run_on_context();
        job.stopped();
    });
    for (size_t k = 0; k < others; ++k)
        workers.emplace_back([&] {
            job.run_elsewhere();
            job.stopped();
        });
    std::exception_ptr callback_error;
    try {
        job.report(workers.size(), progress, heartbeat_ms);
    } catch (...) {
        callback_error = std::current_exception();
        job.cancel();
    }
    for (std::thread& t : workers) t.join();
    if (callback_error) std::rethrow_exception(callback_error);
    job.finish();
}

}  // namespace vkllm::gpu
