#include "server_worker.h"

#include <stdexcept>

#include "vkllm/model.h"

namespace vkllm::cli::server {

bool Job::take(std::string& text, std::chrono::milliseconds timeout, std::vector<TokenLogprobs>* tokens) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !text_.empty() || !tokens_.empty() || done_; });
    text += text_;
    text_.clear();
    if (tokens) tokens->insert(tokens->end(), tokens_.begin(), tokens_.end());
    tokens_.clear();
    return done_;
}

void Job::add_text(const std::string& text, const TokenEvent* event) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        text_ += text;
        if (event) tokens_.push_back({event->id, event->piece, event->logprob, event->top});
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

Worker::Worker(Session& session, size_t capacity)
    : session_(session), vocabulary_(session.model()), capacity_(capacity) {
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

bool Worker::busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_ != nullptr;
}

double Worker::busy_seconds() const {
    std::lock_guard<std::mutex> lock(mutex_);
    double s = busy_seconds_;
    if (running_) s += std::chrono::duration<double>(std::chrono::steady_clock::now() - running_since_).count();
    return s;
}

// Session::embed of each input in turn; a failure is the job's error (its answer).
void Worker::embed(Job& job) {
    GenerateResult result;
    try {
        for (const auto& tokens : job.embed_inputs) {
            if (job.cancelled()) {
                result.reason = StopReason::Cancelled;
                break;
            }
            Embeddings e = session_.embed(tokens);
            job.embeddings_.push_back(std::move(e.data));
        }
    } catch (const ContextOverflow& e) {
        result.reason = StopReason::Error;
        job.embed_error_ = ApiError(400, e.what(), "input", "context_length_exceeded");
    } catch (const NonFiniteEmbeddings& e) {
        result.reason = StopReason::Error;
        job.embed_error_ = ApiError(500, e.what(), "", "embedding_failed", "server_error");
    } catch (const std::invalid_argument& e) {
        result.reason = StopReason::Error;
        job.embed_error_ = ApiError(400, e.what(), "input", "invalid_value");
    } catch (const std::exception& e) {
        result.reason = StopReason::Error;
        job.embed_error_ = ApiError(500, e.what(), "", "embedding_failed", "server_error");
    }
    if (result.reason == StopReason::Error) result.message = job.embed_error_.what();
    job.finish(std::move(result));
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
            running_since_ = std::chrono::steady_clock::now();
        }
        GenerateResult result;
        if (job->embeds() && !job->cancelled()) {
            embed(*job);
            std::lock_guard<std::mutex> lock(mutex_);
            busy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - running_since_).count();
            running_.reset();
            completed_.fetch_add(1);
            continue;
        }
        if (job->cancelled()) {
            result.reason = StopReason::Cancelled;
        } else {
            // A cancel() between the check above and generate() is seen by the callback at the
            // first token (generate() starts with no cancel pending).
            const bool logprobs = job->logprobs;
            const TokenCallback on_token = [&](const TokenEvent& ev) {
                const bool token = logprobs && !ev.end_of_generation;
                if (!ev.text.empty() || token) job->add_text(ev.text, token ? &ev : nullptr);
                return !job->cancelled();
            };
            result = job->json ? generate_json(session_, job->prompt, job->options, *job->json, vocabulary_, on_token)
                               : session_.generate(job->prompt, job->options, on_token);
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            busy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - running_since_).count();
            running_.reset();
        }
        if (result.reason == StopReason::Cancelled || result.reason == StopReason::Callback) cancelled_.fetch_add(1);
        job->finish(std::move(result));
        completed_.fetch_add(1);
    }
}

}  // namespace vkllm::cli::server
