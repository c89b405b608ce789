// The server's one generating thread: it owns the Session and runs jobs first come, first
// served from a bounded queue. HTTP threads submit jobs and read their text as it comes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "vkllm/generate.h"
#include "vkllm/session.h"

namespace vkllm::cli::server {

// One request's generation. The HTTP thread fills prompt and options, then reads with take().
class Job {
public:
    Job(std::vector<int32_t> prompt, GenerateOptions options) : prompt(std::move(prompt)), options(std::move(options)) {}

    const std::vector<int32_t> prompt;
    const GenerateOptions options;

    // Waits until new text, the end, or `timeout`; appends the text released since the last call
    // to `text`. True once the job is done (then result() is final).
    bool take(std::string& text, std::chrono::milliseconds timeout);
    const GenerateResult& result() const { return result_; }  // after take() returned true
    bool cancelled() const { return cancelled_.load(); }

private:
    friend class Worker;
    void add_text(const std::string& text);
    void finish(GenerateResult result);

    std::mutex mutex_;
    std::condition_variable changed_;
    std::string text_;  // released, not yet taken
    bool done_ = false;
    GenerateResult result_;
    std::atomic<bool> cancelled_{false};
};

class Worker {
public:
    // `capacity`: jobs that may wait (the running one not counted).
    Worker(Session& session, size_t capacity);
    ~Worker();  // stop()

    // Queues a job; false when the queue is full or the worker is stopping.
    bool submit(const std::shared_ptr<Job>& job);
    // Stops a job: taken out of the queue, or its generation stopped after the current step.
    // The job finishes with StopReason::Cancelled (or what it had reached).
    void cancel(const std::shared_ptr<Job>& job);
    // Refuses new jobs, cancels the waiting and the running ones, and joins the thread.
    void stop();

    size_t waiting() const;
    uint64_t completed() const { return completed_.load(); }  // jobs finished, cancelled ones included
    uint64_t cancelled() const { return cancelled_.load(); }  // jobs that ended cancelled

private:
    void run();

    Session& session_;
    const size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::shared_ptr<Job> running_;
    bool stopping_ = false;
    std::atomic<uint64_t> completed_{0}, cancelled_{0};
    std::thread thread_;
};

}  // namespace vkllm::cli::server
