// The server's one generating thread: it owns the Session and runs jobs first come, first
// served from a bounded queue. HTTP threads submit jobs and read their text as it comes.
// A job generates (a prompt, one or more choices) or embeds (Session::embed of one or more
// token lists).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server_api.h"
#include "vkllm/generate.h"
#include "vkllm/json_output.h"
#include "vkllm/session.h"

namespace vkllm::cli::server {

// One request's generation. The HTTP thread fills prompt and options, then reads with take().
class Job {
public:
    // A generation; `logprobs`: keep each generated token's log-probabilities (take());
    // `json`: the text must be what the grammar allows (constrained sampling). n_choices
    // generations of the prompt, one after another (the later ones find the prompt in the
    // cache); choice i samples with the seed options.sampler.seed + i.
    Job(std::vector<int32_t> prompt, GenerateOptions options, bool logprobs = false,
        std::optional<JsonGrammar> json = std::nullopt, int n_choices = 1)
        : prompt(std::move(prompt)), options(std::move(options)), logprobs(logprobs), json(std::move(json)),
          n_choices(std::max(n_choices, 1)), choices_(size_t(this->n_choices)) {}
    // An embedding of each token list (the model's pooling).
    explicit Job(std::vector<std::vector<int32_t>> embed_inputs)
        : logprobs(false), json(std::nullopt), n_choices(1), embed_inputs(std::move(embed_inputs)), choices_(1) {}

    const std::vector<int32_t> prompt;
    const GenerateOptions options;
    const bool logprobs;
    const std::optional<JsonGrammar> json;
    const int n_choices;
    const std::vector<std::vector<int32_t>> embed_inputs;  // non-empty: an embedding job
    bool embeds() const { return !embed_inputs.empty(); }

    // Waits until new text of choice `choice`, its end, or `timeout`; appends the text released
    // since the last call to `text` (and with logprobs the tokens generated since, an
    // end-of-generation token left out, to `tokens`). True once the choice is done (then
    // result(choice) is final). Choices are generated in order.
    bool take(std::string& text, std::chrono::milliseconds timeout, std::vector<TokenLogprobs>* tokens = nullptr,
              int choice = 0);
    // After take() returned true for the choice.
    const GenerateResult& result(int choice = 0) const { return choices_[size_t(choice)].result; }
    // An embedding job's rows, one per input, after take() returned true. When it failed:
    // result().reason is Error and embed_error() is the answer's error.
    const std::vector<std::vector<float>>& embeddings() const { return embeddings_; }
    const ApiError& embed_error() const { return embed_error_; }
    bool cancelled() const { return cancelled_.load(); }

private:
    friend class Worker;
    friend class BatchWorker;
    void add_text(int choice, const std::string& text, const TokenEvent* event);
    void finish(int choice, GenerateResult result);

    struct Choice {
        std::string text;                   // released, not yet taken
        std::vector<TokenLogprobs> tokens;  // generated, not yet taken
        bool done = false;
        GenerateResult result;
    };
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Choice> choices_;
    std::vector<std::vector<float>> embeddings_;
    ApiError embed_error_{500, ""};
    std::atomic<bool> cancelled_{false};
};

// What the HTTP threads ask of the thread that runs jobs: Worker (one Session, one job at a time)
// or BatchWorker (server_batch_worker.h: continuous batching over the slots of a BatchSession).
class JobRunner {
public:
    virtual ~JobRunner() = default;
    // Queues a job; false when the queue is full or the runner is stopping.
    virtual bool submit(const std::shared_ptr<Job>& job) = 0;
    // Stops a job: taken out of the queue, or its generation stopped after the current step.
    // The job finishes with StopReason::Cancelled (or what it had reached).
    virtual void cancel(const std::shared_ptr<Job>& job) = 0;
    // Refuses new jobs, cancels the waiting and the running ones, and joins the thread.
    virtual void stop() = 0;

    virtual size_t waiting() const = 0;
    virtual bool busy() const = 0;            // a job is running
    virtual double busy_seconds() const = 0;  // time spent running jobs so far (the running ones included)
    virtual uint64_t completed() const = 0;   // jobs finished, cancelled ones included
    virtual uint64_t cancelled() const = 0;   // jobs that ended cancelled
    virtual size_t slots() const { return 1; }                    // generations that can run at once
    virtual size_t slots_busy() const { return busy() ? 1 : 0; }  // of which running now
};

class Worker : public JobRunner {
public:
    // `capacity`: jobs that may wait (the running one not counted).
    Worker(Session& session, size_t capacity);
    ~Worker() override;  // stop()

    bool submit(const std::shared_ptr<Job>& job) override;
    void cancel(const std::shared_ptr<Job>& job) override;
    void stop() override;

    size_t waiting() const override;
    bool busy() const override;
    double busy_seconds() const override;
    uint64_t completed() const override { return completed_.load(); }
    uint64_t cancelled() const override { return cancelled_.load(); }

private:
    void run();
    void embed(Job& job);

    Session& session_;
    const TokenBytes vocabulary_;  // each token's bytes, for constrained sampling
    const size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::shared_ptr<Job> running_;
    bool stopping_ = false;
    std::atomic<uint64_t> completed_{0}, cancelled_{0};
    std::chrono::steady_clock::time_point running_since_;
    double busy_seconds_ = 0;  // of the jobs finished
    std::thread thread_;
};

}  // namespace vkllm::cli::server
