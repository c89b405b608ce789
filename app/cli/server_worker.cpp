#include "server_worker.h"

namespace vkllm::cli::server {

bool Job::take(std::string& text, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !text_.empty() || done_; });
    text += text_;
    text_.clear();
    return done_;
}

void Job::add_text(const std::string& text) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        text_ += text;
    }
    changed_.notify_all();
}

void Job::finish(GenerateResult result) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        result_ = std::move(result);
        done_ = true;
    }
    changed_.notify_all();
}

Worker::Worker(Session& session, size_t capacity) : session_(session), capacity_(capacity) {
    thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { stop(); }

bool Worker::submit(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || queue_.size() >= capacity_) return false;
        queue_.push_back(job);
    }
    wake_.notify_one();
    return true;
}

void Worker::cancel(const std::shared_ptr<Job>& job) {
    job->cancelled_.store(true);
    std::lock_guard<std::mutex> lock(mutex_);
    // A waiting job is left in the queue: the worker finishes it at once when it comes to it.
    // A running one is stopped within a step (during its prompt too).
    if (running_ == job) session_.cancel();
}

void Worker::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        for (const auto& job : queue_) job->cancelled_.store(true);
        if (running_) {
            running_->cancelled_.store(true);
            session_.cancel();
        }
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

size_t Worker::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
}

void Worker::run() {
    while (true) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and every job answered
            job = queue_.front();
            queue_.pop_front();
            running_ = job;
        }
        GenerateResult result;
        if (job->cancelled()) {
            result.reason = StopReason::Cancelled;
        } else {
            // A cancel() between the check above and generate() is seen by the callback at the
            // first token (generate() starts with no cancel pending).
            result = session_.generate(job->prompt, job->options, [&](const TokenEvent& ev) {
                if (!ev.text.empty()) job->add_text(ev.text);
                return !job->cancelled();
            });
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            running_.reset();
        }
        if (result.reason == StopReason::Cancelled || result.reason == StopReason::Callback) cancelled_.fetch_add(1);
        job->finish(std::move(result));
        completed_.fetch_add(1);
    }
}

}  // namespace vkllm::cli::server
