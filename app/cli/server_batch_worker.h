// `vkllm serve --parallel N`: one scheduler thread owns a BatchSession of N slots and a
// BatchGenerator over it (vkllm/batch_generate.h). Jobs wait in a bounded FIFO queue; between
// forward passes each waiting job's choices take free slots (a job of n choices may take n
// slots, its later choices starting as slots free up), and every pass decodes a token for
// each generating slot while joining prompts are evaluated in chunks beside them. Each choice
// keeps its own sampler (seed + choice), stop strings, logit_bias, logprobs and JSON
// constraint; a cancelled job (client gone) frees its slots at the next pass.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server_worker.h"
#include "vkllm/batch.h"
#include "vkllm/batch_generate.h"

namespace vkllm::cli::server {

class BatchWorker : public JobRunner {
public:
    // `capacity`: jobs that may wait (those with a choice in a slot not counted).
    BatchWorker(BatchSession& batch, size_t capacity);
    ~BatchWorker() override;  // stop()

    bool submit(const std::shared_ptr<Job>& job) override;
    void cancel(const std::shared_ptr<Job>& job) override;
    void stop() override;

    size_t waiting() const override;
    bool busy() const override { return slots_busy() > 0; }
    double busy_seconds() const override;
    uint64_t completed() const override { return completed_.load(); }
    uint64_t cancelled() const override { return cancelled_.load(); }
    size_t slots() const override { return size_t(generator_.n_slots()); }
    size_t slots_busy() const override { return busy_slots_.load(); }

private:
    // A job taken from the queue: its choices not yet started, and those running or done.
    struct Running {
        std::shared_ptr<Job> job;
        int next_choice = 0;  // choices before it have started
        int done = 0;         // choices finished
        bool any_cancelled = false;
    };
    // A slot's choice: its job and the matcher of its JSON constraint.
    struct SlotJob {
        std::shared_ptr<Running> running;
        int choice = 0;
        std::unique_ptr<TokenConstraint> matcher;
    };

    void run();
    // Starts waiting choices in free slots, oldest job first (scheduler thread, under mutex_).
    void admit();
    // Starts one choice of r in a free slot; false when none is free.
    bool start_choice(const std::shared_ptr<Running>& r);
    // Ends the choice in a slot with its result.
    void finish(int slot, GenerateResult result);
    // A job that needs no slot (an embedding job, which this runner does not serve; one
    // cancelled while waiting): answered at once.
    void answer_without_slot(Job& job);

    BatchSession& batch_;
    BatchGenerator generator_;
    const TokenBytes vocabulary_;
    const size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::deque<std::shared_ptr<Running>> started_;  // jobs with choices still to start, oldest first
    std::vector<SlotJob> slots_;                    // by slot (running null: free); scheduler thread
    bool stopping_ = false;
    std::atomic<uint64_t> completed_{0}, cancelled_{0};
    std::atomic<size_t> busy_slots_{0};
    std::chrono::steady_clock::time_point busy_since_;
    double busy_seconds_ = 0;  // of the busy periods that ended
    std::thread thread_;
};

}  // namespace vkllm::cli::server
