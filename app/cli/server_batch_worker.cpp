#include "server_batch_worker.h"

#include <stdexcept>

#include "vkllm/model.h"

namespace vkllm::cli::server {

namespace {
double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

BatchWorker::BatchWorker(BatchSession& batch, size_t capacity)
    : batch_(batch), generator_(batch), vocabulary_(batch.model()), capacity_(capacity),
      slots_(size_t(batch.n_slots())) {
    thread_ = std::thread([this] { run(); });
}

BatchWorker::~BatchWorker() { stop(); }

bool BatchWorker::submit(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || queue_.size() >= capacity_) return false;
        queue_.push_back(job);
    }
    wake_.notify_one();
    return true;
}

// The scheduler sees the flag before its next pass: a waiting job is answered without a slot,
// a running one's slots end with StopReason::Cancelled.
void BatchWorker::cancel(const std::shared_ptr<Job>& job) {
    job->cancelled_.store(true);
    wake_.notify_one();
}

void BatchWorker::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

size_t BatchWorker::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
}

double BatchWorker::busy_seconds() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return busy_seconds_ + (busy_slots_.load() > 0 ? since(busy_since_) : 0.0);
}

void BatchWorker::answer_without_slot(Job& job) {
    GenerateResult result;
    result.reason = StopReason::Cancelled;
    if (job.embeds() && !job.cancelled()) {
        // Embeddings are an encoder's, and encoders are not served with --parallel.
        result.reason = StopReason::Error;
        job.embed_error_ = ApiError(400, "embeddings are not served by batched decoding (serve --parallel 1 does)",
                                    "input", "unsupported_parameter");
        result.message = job.embed_error_.what();
    }
    for (int i = 0; i < job.n_choices; ++i) job.finish(i, result);
    if (result.reason == StopReason::Cancelled) cancelled_.fetch_add(1);
    completed_.fetch_add(1);
}

bool BatchWorker::start_choice(const std::shared_ptr<Running>& r) {
    if (generator_.active() >= generator_.n_slots()) return false;
    Job& job = *r->job;
    const int choice = r->next_choice;
    BatchRequest request;
    request.prompt = job.prompt;
    request.options = job.options;
    request.options.sampler.seed += uint64_t(choice);  // each choice its own random stream
    std::unique_ptr<TokenConstraint> matcher;
    if (job.json) {
        matcher = make_constraint(*job.json);
        request.options.constraint = {matcher.get(), &vocabulary_};
    }
    std::shared_ptr<Job> held = r->job;
    const bool logprobs = job.logprobs;
    request.on_token = [held, choice, logprobs](const TokenEvent& ev) {
        const bool token = logprobs && !ev.end_of_generation;
        if (!ev.text.empty() || token) held->add_text(choice, ev.text, token ? &ev : nullptr);
        return !held->cancelled();
    };
    ++r->next_choice;
    int slot = -1;
    try {
        slot = generator_.start(std::move(request));
    } catch (const std::exception& e) {
        GenerateResult failed;
        failed.reason = StopReason::Error;
        failed.message = e.what();
        job.finish(choice, std::move(failed));
        if (++r->done == job.n_choices) completed_.fetch_add(1);
        return true;
    }
    if (slot < 0) throw std::logic_error("BatchWorker: no free slot after checking for one");
    slots_[size_t(slot)] = SlotJob{r, choice, std::move(matcher)};
    return true;
}

void BatchWorker::admit() {
    while (true) {
        if (started_.empty()) {
            if (queue_.empty()) return;
            std::shared_ptr<Job> job = queue_.front();
            if (job->embeds() || job->cancelled()) {
                queue_.pop_front();
                answer_without_slot(*job);
                continue;
            }
            if (generator_.active() >= generator_.n_slots()) return;
            queue_.pop_front();
            started_.push_back(std::make_shared<Running>(Running{job}));
        }
        std::shared_ptr<Running> r = started_.front();
        if (r->job->cancelled()) {
            // Its choices not yet started end here; those in slots end at the next pass.
            r->any_cancelled = true;
            for (; r->next_choice < r->job->n_choices; ++r->next_choice) {
                GenerateResult result;
                result.reason = StopReason::Cancelled;
                r->job->finish(r->next_choice, std::move(result));
                ++r->done;
            }
            if (r->done == r->job->n_choices) {
                completed_.fetch_add(1);
                cancelled_.fetch_add(1);
            }
        }
        while (r->next_choice < r->job->n_choices)
            if (!start_choice(r)) return;
        started_.pop_front();
    }
}

void BatchWorker::finish(int slot, GenerateResult result) {
    SlotJob sj = std::move(slots_[size_t(slot)]);
    slots_[size_t(slot)] = SlotJob{};
    Running& r = *sj.running;
    if (result.reason == StopReason::Cancelled || result.reason == StopReason::Callback) r.any_cancelled = true;
    r.job->finish(sj.choice, std::move(result));
    if (++r.done == r.job->n_choices) {
        completed_.fetch_add(1);
        if (r.any_cancelled) cancelled_.fetch_add(1);
    }
}

void BatchWorker::run() {
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] {
                return stopping_ || !queue_.empty() || !started_.empty() || generator_.active() > 0;
            });
            if (stopping_) {
                for (const auto& job : queue_) job->cancelled_.store(true);
                for (const SlotJob& sj : slots_)
                    if (sj.running) sj.running->job->cancelled_.store(true);
            }
            admit();
            if (stopping_ && queue_.empty() && started_.empty() && generator_.active() == 0) return;
            const size_t busy = size_t(generator_.active());
            if (busy > 0 && busy_slots_.load() == 0) busy_since_ = std::chrono::steady_clock::now();
            busy_slots_.store(busy);
        }
        for (size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s].running && slots_[s].running->job->cancelled()) generator_.cancel(int(s));
        std::vector<BatchGenerator::Finished> finished = generator_.step();
        for (BatchGenerator::Finished& f : finished) finish(f.slot, std::move(f.result));
        std::lock_guard<std::mutex> lock(mutex_);
        const size_t busy = size_t(generator_.active());
        if (busy == 0 && busy_slots_.load() > 0) busy_seconds_ += since(busy_since_);
        busy_slots_.store(busy);
    }
}

}  // namespace vkllm::cli::server
