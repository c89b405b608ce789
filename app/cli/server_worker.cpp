#include "server_worker.h"

#include <stdexcept>

#include "vkllm/model.h"

namespace vkllm::cli::server {

bool Job::take(std::string& text, std::chrono::milliseconds timeout, std::vector<TokenLogprobs>* tokens, int choice) {
    std::unique_lock<std::mutex> lock(mutex_);
    Choice& c = choices_.at(size_t(choice));
    changed_.wait_for(lock, timeout, [&] { return !c.text.empty() || !c.tokens.empty() || c.done; });
    text += c.text;
    c.text.clear();
    if (tokens) tokens->insert(tokens->end(), c.tokens.begin(), c.tokens.end());
    c.tokens.clear();
    return c.done;
}

void Job::add_text(int choice, const std::string& text, const TokenEvent* event) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Choice& c = choices_[size_t(choice)];
        c.text += text;
        if (event) c.tokens.push_back({event->id, event->piece, event->logprob, event->top});
    }
    changed_.notify_all();
}

void Job::finish(int choice, GenerateResult result) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        choices_[size_t(choice)].result = std::move(result);
        choices_[size_t(choice)].done = true;
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
    job.finish(0, std::move(result));
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
        if (job->embeds() && !job->cancelled()) {
            embed(*job);
            std::lock_guard<std::mutex> lock(mutex_);
            busy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - running_since_).count();
            running_.reset();
            completed_.fetch_add(1);
            continue;
        }
        bool cancelled = false;
        for (int i = 0; i < job->n_choices; ++i) {
            GenerateResult result;
            if (job->cancelled()) {
                result.reason = StopReason::Cancelled;
            } else {
                // A cancel() between the check above and generate() is seen by the callback at the
                // first token (generate() starts with no cancel pending).
                const bool logprobs = job->logprobs;
                const TokenCallback on_token = [&](const TokenEvent& ev) {
                    const bool token = logprobs && !ev.end_of_generation;
                    if (!ev.text.empty() || token) job->add_text(i, ev.text, token ? &ev : nullptr);
                    return !job->cancelled();
                };
                GenerateOptions options = job->options;
                options.sampler.seed += uint64_t(i);  // each choice its own random stream
                result = job->json ? generate_json(session_, job->prompt, options, *job->json, vocabulary_, on_token)
                                   : session_.generate(job->prompt, options, on_token);
            }
            cancelled = cancelled || result.reason == StopReason::Cancelled || result.reason == StopReason::Callback;
            if (i + 1 == job->n_choices) {
                std::lock_guard<std::mutex> lock(mutex_);
                busy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - running_since_).count();
                running_.reset();
            }
            job->finish(i, std::move(result));
        }
        if (cancelled) cancelled_.fetch_add(1);
        completed_.fetch_add(1);
    }
}

}  // namespace vkllm::cli::server
