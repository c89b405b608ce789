#include "engine_worker.h"

#include "thread_priority.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>

#include "vkllm/chat_template.h"

namespace vkllm::studio {

// As the engine counts them against ProbeConfig::max_bytes: a pass's rows (n_batch) and the
// eval's kept rows (1024), each over every key of the context.
uint64_t attention_map_bytes(const ModelInfo& info, int n_ctx) {
    const uint64_t ctx = uint64_t(std::max(n_ctx, 1));
    const uint64_t rows = std::min<uint64_t>(uint64_t(SessionOptions().n_batch), 1024) + std::min<uint64_t>(ctx, 1024);
    uint64_t heads = 0;
    for (const LayerInfo& l : info.layers) heads += uint64_t(std::max(l.attention.n_head, 0));
    return heads * rows * (ctx + 1) * sizeof(float);
}

bool attention_maps_fit(const ModelInfo& info, int n_ctx) {
    return attention_map_bytes(info, n_ctx) <= std::min<uint64_t>(ProbeConfig().max_bytes * 3 / 4, kMaxUiMapBytes);
}

bool has_state(const LayerInfo& l) {
    return l.mixer == MixerKind::Rwkv7 || l.ssm.d_inner > 0;
}

bool has_state_map(const LayerInfo& l) { return l.mixer != MixerKind::Rwkv7 && l.ssm.d_inner > 0 && l.ssm.dt_rank == 0; }

int state_map_heads(const LayerInfo& l, int n_batch) {
    if (!has_state_map(l)) return 0;
    const uint64_t P = kStateMapPositions, per_map = (uint64_t(n_batch) * P + P * P) * sizeof(float);
    return int(std::min<uint64_t>(uint64_t(l.ssm.n_head), ProbeConfig().max_bytes / 8 / per_map));
}

ProbeConfig probe_config(const ProbeSelection& s, const ModelInfo& info, int n_ctx) {
    ProbeConfig c;
    std::vector<int> all_layers;
    for (int l = 0; l < info.n_layer; ++l) all_layers.push_back(l);
    if (s.attention) {
        if (attention_maps_fit(info, n_ctx)) {
            c.attention_layers = all_layers;
            c.attention_max_rows = 1024;
        } else {
            // Too large for maps: summaries, each row's top keys and every head's thumbnail.
            c.attention_summary = true;
            c.attention_top_k = 4;
            c.attention_thumbnail = 32;
        }
    }
    if (s.activations) {
        c.residual_stats = true;
        c.ffn_down = true;
        if (s.residual_full_layer >= -1) c.residual_full_layers = {s.residual_full_layer};
    }
    bool moe = false;
    for (const LayerInfo& l : info.layers) moe = moe || l.ffn.kind == FfnKind::Moe;
    if (s.experts && moe) {
        c.routing = true;
        c.expert_load = true;
    }
    // The lens reads the next-token head; an encoder has none (its head predicts masked tokens).
    if (s.lens && !is_encoder(info)) {
        c.logit_lens_layers = all_layers;
        c.logit_lens_top_n = 10;  // `vkllm probe`'s default: the same command line, the same document
        // The lens panel's layers x positions grid: the prompt's newest kLensPositions positions
        // (the whole text of a chat's first turns), then one column per generated token; the
        // export equals `vkllm probe --lens-positions 64`'s document.
        c.logit_lens_positions = kLensPositions;
    }
    c.timings = s.timings;
    c.state = s.state;
    if (s.state_map_layer >= 0 && s.state_map_layer < info.n_layer) {
        const LayerInfo& l = info.layers[size_t(s.state_map_layer)];
        for (int h = 0; h < state_map_heads(l); ++h) c.state_maps.push_back({s.state_map_layer, h});
        c.state_map_positions = std::min(n_ctx, kStateMapPositions);
    }
    return c;
}

bool is_encoder(const ModelInfo& info) {
    if (info.layers.empty()) return false;
    for (const LayerInfo& l : info.layers)
        if (l.attention.causal) return false;
    return true;
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::vector<float> softmax(const std::vector<float>& logits) {
    std::vector<float> p(logits.size());
    float mx = -INFINITY;
    for (float x : logits) mx = std::max(mx, x);
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] - mx);
    for (float& x : p) x = float(x / sum);
    return p;
}

std::vector<TokenAlternative> top_tokens(const Model& m, const std::vector<float>& p, int n) {
    std::vector<int32_t> ids(p.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    n = std::min<int>(n, int(ids.size()));
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
    std::vector<TokenAlternative> out;
    for (int i = 0; i < n; ++i)
        out.push_back({ids[size_t(i)], m.piece(ids[size_t(i)], true), std::log(std::max(p[size_t(ids[size_t(i)])], 1e-30f))});
    return out;
}

}  // namespace

EngineWorker::EngineWorker() {
    published_ = std::make_shared<WorkerState>(work_);
    work_.status = "no model";
    thread_ = std::thread([this] { run(); });
}

EngineWorker::~EngineWorker() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
        queue_.clear();
        stop_requested_ = true;
        if (live_session_) live_session_->cancel();
    }
    cv_.notify_all();
    thread_.join();
}

void EngineWorker::post(std::function<void()> command, bool clears_error) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(command), clears_error});
    }
    cv_.notify_all();
}

void EngineWorker::run() {
    for (;;) {
        std::function<void()> command;
        bool clears_error = true;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return quit_ || !queue_.empty(); });
            if (quit_) return;
            command = std::move(queue_.front().first);
            clears_error = queue_.front().second;
            queue_.pop_front();
            running_command_ = true;
            stop_requested_ = false;  // a stop() before this command was for the one before
        }
        if (clears_error) work_.error.clear();
        work_.busy = true;
        try {
            command();
        } catch (const std::exception& e) {
            work_.error = e.what();
            work_.status = "error";
        }
        work_.busy = false;
        work_.generating = false;
        publish();
        {
            std::lock_guard lock(mutex_);
            running_command_ = false;
        }
        cv_.notify_all();
    }
}

void EngineWorker::publish() {
    if (session_) {
        work_.kv_bytes = session_->kv_cache_bytes();
        work_.scratch_bytes = session_->scratch_bytes();
        work_.probe_bytes = session_->probe_bytes();
        work_.state_bytes = session_->recurrent_state_bytes();
        work_.snapshot_bytes = session_->state_snapshot_bytes();
    }
    work_.probes = std::make_shared<ProbeHistory>(history_);
    ++work_.version;
    auto next = std::make_shared<WorkerState>(work_);
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        published_ = std::move(next);
        wake = on_publish_;
    }
    if (wake) wake();
}

void EngineWorker::set_on_publish(std::function<void()> f) {
    std::lock_guard lock(mutex_);
    on_publish_ = std::move(f);
}

void EngineWorker::lower_priority(int nice) {
    post(
        [this, nice] {
            work_.engine_priority_error = lower_thread_priority(nice);
            work_.engine_nice = work_.engine_priority_error.empty() ? nice : 0;
        },
        false);
}

void EngineWorker::set_context_length(int n_ctx) {
    post([this, n_ctx] { n_ctx_request_ = std::max(n_ctx, 0); }, false);
}

std::shared_ptr<const WorkerState> EngineWorker::state() const {
    std::lock_guard lock(mutex_);
    return published_;
}

bool EngineWorker::idle() const {
    std::lock_guard lock(mutex_);
    return queue_.empty() && !running_command_;
}

void EngineWorker::wait_idle() const {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return queue_.empty() && !running_command_; });
}

void EngineWorker::stop() {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
    if (live_session_) live_session_->cancel();
}

// ---- Model loading ----

void EngineWorker::load_file(const std::string& path, const std::string& device) {
    post([this, path, device] {
        try {
            do_load([path, device] { return Model::load(path, ModelOptions{device}); }, path);
        } catch (...) {
            work_.failed_source = path;
            work_.last_load_ok = false;
            ++work_.load_serial;
            throw;
        }
    });
}

void EngineWorker::load_memory(const void* data, size_t size, const std::string& name, const std::string& device) {
    post([this, data, size, name, device] {
        do_load([=] { return Model::load_from_memory(data, size, name, ModelOptions{device}); }, name);
    });
}

void EngineWorker::do_load(std::function<std::unique_ptr<Model>()> open, const std::string& what) {
    work_.status = "loading " + what;
    publish();
    const uint64_t serial = work_.load_serial + 1;
    std::unique_ptr<Model> model = open();  // throws: the old model stays
    {
        std::lock_guard lock(mutex_);
        live_session_ = nullptr;
    }
    session_.reset();
    model_ = std::move(model);
    SessionOptions so;
    so.n_ctx = n_ctx_request_ > 0 ? n_ctx_request_
                                  : std::min(model_->info().n_ctx_train > 0 ? model_->info().n_ctx_train : 2048, 2048);
    so.probes = probe_config(probe_sel_, model_->info(), so.n_ctx);
    session_ = std::make_unique<Session>(*model_, so);
    {
        std::lock_guard lock(mutex_);
        live_session_ = session_.get();
    }
    residual_edits_.clear();
    history_.clear();
    const int nice = work_.engine_nice;  // the thread's, not the model's
    const std::string nice_error = work_.engine_priority_error;
    work_ = WorkerState{};
    work_.engine_nice = nice;
    work_.engine_priority_error = nice_error;
    work_.loaded = true;
    work_.loaded_source = what;
    work_.load_serial = serial;
    work_.n_ctx = session_->n_ctx();
    work_.info = std::make_shared<ModelInfo>(model_->info());
    work_.device = model_->device();
    work_.weight_bytes = model_->weight_bytes();
    work_.chat_template = false;
    work_.encoder = is_encoder(model_->info());
    // Compile the pipelines the first answer needs now, on every core, with the progress in the
    // status bar (a cold start on lavapipe takes a while; a warm one returns at once).
    const Clock::time_point t0 = Clock::now();
    Clock::time_point shown = t0;
    try {
        // The first prompt's length picks the matrix kernels (up to 16 tokens the few-rows
        // matvec, more the tiled matmul), and a kernel not prepared compiles at its first
        // dispatch (5-6 s of the first answer on lavapipe). Without a chat template the first
        // prompt is what was typed, a few words; a template's markup and the system prompt take
        // it past 16 tokens.
        PrepareOptions po;
        po.prompt_tokens = model_->info().chat_template.empty() ? 8 : 32;
        const PrepareProgress p = session_->prepare(po, [&](const PrepareProgress& progress) {
            if (stop_requested_) throw std::runtime_error("stopped");
            if (progress.total == 0 || ms_since(shown) < 100) return;
            shown = Clock::now();
            work_.status = "preparing shaders " + std::to_string(progress.done) + "/" + std::to_string(progress.total);
            publish();
        });
        work_.shaders_prepared = p.total;
    } catch (const std::exception& e) {
        // Not fatal: a pipeline not compiled now is compiled at its first dispatch.
        work_.notice = std::string("shaders not prepared ahead (") + e.what() + "): the first answer compiles them";
    }
    work_.prepare_seconds = ms_since(t0) / 1000.0;
    char prepared[64] = "";
    if (work_.shaders_prepared > 0)
        snprintf(prepared, sizeof prepared, " (prepared %d shaders in %.1f s)", work_.shaders_prepared, work_.prepare_seconds);
    work_.status = "ready: " + (model_->info().name.empty() ? what : model_->info().name) +
                   (work_.encoder ? " (an encoder: sending a text evaluates it, nothing is generated)" : "") + prepared;
}

// ---- Chat ----

std::vector<int32_t> EngineWorker::conversation_tokens(const std::string& system) {
    const std::string& source = model_->info().chat_template;
    if (!source.empty()) {
        // The model's chat template, with the prompt for a new answer.
        std::vector<vkllm::ChatMessage> turns;
        if (!system.empty()) turns.push_back({"system", system});
        for (const ChatTurn& m : work_.messages) turns.push_back({m.role, m.text});
        auto text_of = [&](int32_t id) { return id >= 0 ? model_->token_text(id) : std::string(); };
        try {
            const std::string text = render_chat_template(source, turns, true, text_of(model_->bos()),
                                                          text_of(model_->eos()), [this] { return stop_requested_.load(); });
            work_.chat_template = true;
            return model_->tokenize(text, false, true);
        } catch (const std::exception& e) {
            // Stopped: no answer, rather than a fallback to plain continuation.
            if (const auto* t = dynamic_cast<const TemplateError*>(&e); t && t->cancelled()) throw;
            work_.notice = std::string("the chat template failed (") + e.what() + "); using plain continuation";
        }
    }
    // Plain continuation: the turns are one text the model continues.
    work_.chat_template = false;
    std::string text = system.empty() ? std::string() : system + "\n\n";
    for (const ChatTurn& m : work_.messages) text += m.text;
    return model_->tokenize(text, true, false);
}

void EngineWorker::sync_context() {
    const std::vector<int32_t>& t = session_->tokens();
    const size_t keep = std::min(work_.context.size(), t.size());
    size_t same = 0;
    while (same < keep && work_.context[same] == t[same]) ++same;
    work_.context.resize(same);
    work_.context_pieces.resize(same);
    for (size_t i = same; i < t.size(); ++i) {
        work_.context.push_back(t[i]);
        work_.context_pieces.push_back(model_->piece(t[i], true));
    }
}

void EngineWorker::do_encode(const GenerationSettings& g) {
    std::string text;
    for (const ChatTurn& m : work_.messages)
        if (m.role == "user") text = m.text;
    // Special tokens typed in the text ([MASK], [SEP]) are parsed as `vkllm fill-mask` does.
    const std::vector<int32_t> tokens = model_->tokenize(text, /*add_special=*/true, /*parse_special=*/true);
    if (tokens.empty()) throw std::runtime_error("nothing to encode: the text gives no tokens");
    work_.status = "encoding";
    publish();
    // One probed pass with the masked-token logits of every position; it replaces the cache.
    session_->set_probes(probe_config(probe_sel_, model_->info(), session_->n_ctx()));
    history_.clear();
    const Clock::time_point t0 = Clock::now();
    const std::vector<float> logits = session_->encode_logits(tokens);
    EncoderView v;
    v.ms = ms_since(t0);
    history_.add_step(session_->probes(), 0, int(tokens.size()), true);
    const size_t n_vocab = logits.size() / tokens.size();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::vector<float> row(logits.begin() + long(i * n_vocab), logits.begin() + long((i + 1) * n_vocab));
        v.predictions.push_back(top_tokens(*model_, softmax(row), std::max(g.top_n, 1)));
        v.masked.push_back(tokens[i] == model_->mask_token());
    }
    // The text's embedding as the file pools it (mean when it names none), probes off: the
    // probed pass above is the one the panels show.
    const ProbeConfig probes = session_->probe_config();
    session_->set_probes({});
    const bool file_pools = model_->info().pooling != Pooling::None;
    const Embeddings e = session_->embed(tokens, file_pools ? Pooling::Model : Pooling::Mean);
    session_->set_probes(probes);
    v.pooling = file_pools ? to_string(model_->info().pooling) : "mean";
    v.embedding.assign(e.data.begin(), e.data.begin() + e.n_embd);
    double norm = 0;
    for (float x : v.embedding) norm += double(x) * x;
    v.embedding_norm = float(std::sqrt(norm));
    v.valid = true;
    work_.encoded = std::move(v);
    GenerateResult r;
    r.reason = StopReason::MaxTokens;  // nothing to generate: "max_tokens" of 0
    r.n_prompt = r.n_prompt_evaluated = int(tokens.size());
    r.prompt_seconds = work_.encoded.ms / 1000.0;
    work_.last_result = r;
    sync_context();
    work_.status = "encoded " + std::to_string(tokens.size()) + " tokens (an encoder: no generation)";
}

void EngineWorker::do_generate(const GenerationSettings& g) {
    if (!session_) throw std::runtime_error("no model is loaded");
    if (work_.encoder) return do_encode(g);
    validate(g.sampler);
    std::vector<int32_t> prompt;
    try {
        prompt = conversation_tokens(g.system);
    } catch (const TemplateError& e) {
        if (!e.cancelled()) throw;
        take_back_user_turn();
        work_.status = "stopped while the chat template rendered: no answer";
        return;
    }
    if (prompt.empty()) throw std::runtime_error("nothing to answer: the conversation is empty");
    // Keep the cache's common prefix with the new prompt (Session::truncate), leaving at least
    // one prompt token to evaluate so the prompt step has its own probes and logits.
    const std::vector<int32_t>& cached = session_->tokens();
    int common = 0;
    while (common < int(cached.size()) && common < int(prompt.size()) && cached[size_t(common)] == prompt[size_t(common)])
        ++common;
    common = std::min(common, int(prompt.size()) - 1);
    session_->truncate(common);
    history_.truncate(common);
    session_->set_probes(probe_config(probe_sel_, model_->info(), session_->n_ctx()));

    work_.messages.push_back({"assistant", "", {}});
    work_.generating = true;
    work_.status = "generating";
    publish();

    GenerateOptions o;
    o.sampler = g.sampler;
    o.max_tokens = g.max_tokens;
    o.top_n = g.top_n;
    o.funnel = true;
    const int prompt_eval = int(prompt.size()) - common;
    auto on_token = [&](const TokenEvent& e) {
        // The eval just finished produced this token's logits: the prompt for the first token,
        // the previous token for the others.
        const int n = e.index == 0 ? prompt_eval : 1;
        history_.add_step(session_->probes(), e.position - n, n, e.index == 0);
        ChatTurn& m = work_.messages.back();
        m.tokens.push_back(e);
        m.text += e.text;
        sync_context();
        publish();
        return true;
    };
    GenerateResult r = session_->generate(prompt, o, on_token);
    // generate() samples its last token without evaluating it. Evaluate it too, so that its
    // own attention row, residual and lens are probed like every other token's (as `vkllm
    // probe -n N` does) and the next turn finds it in the cache. An end-of-generation token
    // stays out, as do the tokens of a stopped or failed generation.
    const bool finished = r.reason == StopReason::MaxTokens || r.reason == StopReason::StopString;
    if (finished && !r.tokens.empty() && !model_->is_eog(r.tokens.back()) && session_->n_past() < session_->n_ctx()) {
        const int position = session_->n_past();
        session_->eval({r.tokens.back()});
        history_.add_step(session_->probes(), position, 1, false);
    }
    work_.last_result = r;
    work_.messages.back().text = r.text;
    sync_context();
    history_.truncate(session_->n_past());
    if (r.reason == StopReason::Error) work_.error = r.message;
    work_.status = std::string("done: ") + to_string(r.reason) + ", " + std::to_string(r.tokens.size()) + " tokens";
    if (r.reason == StopReason::Cancelled && r.tokens.empty()) {
        // Stopped before the first token: no empty answer stays; the question goes back to the box.
        work_.messages.pop_back();
        take_back_user_turn();
        work_.status = "stopped before the answer began";
    }
    work_.context_full = r.reason == StopReason::ContextFull;
    if (work_.context_full) {
        if (r.tokens.empty() && work_.messages.back().text.empty()) work_.messages.pop_back();
        work_.status = "the context is full (" + std::to_string(session_->n_past()) + " of " +
                       std::to_string(session_->n_ctx()) + " tokens): stop, or drop the oldest turns";
    }
}

void EngineWorker::take_back_user_turn() {
    if (work_.messages.empty() || work_.messages.back().role != "user") return;
    work_.returned_input = work_.messages.back().text;
    ++work_.returned_serial;
    work_.messages.pop_back();
}

void EngineWorker::prefill(const GenerationSettings& g) {
    if (work_.messages.empty() || work_.encoder) return;
    // The conversation so far without the prompt for a new answer: the tokens the next answer
    // will share as its prefix.
    const std::vector<int32_t> tokens = conversation_tokens(g.system);
    const int keep = std::min<int>(int(tokens.size()), session_->n_ctx());
    if (keep <= 0) return;
    session_->reset();
    history_.clear();
    session_->set_probes(probe_config(probe_sel_, model_->info(), session_->n_ctx()));
    const int n_batch = std::max(session_->n_batch(), 1);
    for (int at = 0; at < keep; at += n_batch) {
        const int n = std::min(n_batch, keep - at);
        session_->eval(std::vector<int32_t>(tokens.begin() + at, tokens.begin() + at + n));
        history_.add_step(session_->probes(), at, n, true);
    }
    sync_context();
}

void EngineWorker::shift_context(const GenerationSettings& g) {
    post([this, g] {
        if (!session_) throw std::runtime_error("no model is loaded");
        // Drop whole exchanges (a user message and its answer) from the front until what is
        // left takes at most half the context, keeping at least the newest exchange.
        int dropped = 0;
        const size_t half = size_t(session_->n_ctx() / 2);
        auto exchanges = [&] {
            int n = 0;
            for (const ChatTurn& m : work_.messages) n += m.role == "user";
            return n;
        };
        while (exchanges() > 1 && conversation_tokens(g.system).size() > half) {
            size_t end = 1;
            while (end < work_.messages.size() && work_.messages[end].role != "user") ++end;
            work_.messages.erase(work_.messages.begin(), work_.messages.begin() + long(end));
            ++dropped;
        }
        work_.context_full = false;
        work_.status = "re-evaluating the kept turns";
        publish();
        prefill(g);
        work_.status = "context shifted: dropped " + std::to_string(dropped) + (dropped == 1 ? " turn, " : " turns, ") +
                       std::to_string(session_->n_past()) + " of " + std::to_string(session_->n_ctx()) + " tokens kept";
    });
}

void EngineWorker::load_conversation(std::vector<ChatTurn> messages, const GenerationSettings& g) {
    post([this, messages = std::move(messages), g] {
        if (!session_) throw std::runtime_error("no model is loaded");
        work_.messages = messages;
        work_.context_full = false;
        work_.last_result = {};
        work_.encoded = {};
        session_->reset();
        history_.clear();
        work_.context.clear();
        work_.context_pieces.clear();
        work_.status = "reading the conversation";
        publish();
        prefill(g);
        work_.status = "opened a conversation of " + std::to_string(work_.messages.size()) + " messages, " +
                       std::to_string(session_->n_past()) + " tokens";
    });
}

void EngineWorker::send(const std::string& text, const GenerationSettings& g) {
    post([this, text, g] {
        work_.messages.push_back({"user", text, {}});
        do_generate(g);
    });
}

void EngineWorker::regenerate(const GenerationSettings& g) {
    post([this, g] {
        if (!work_.messages.empty() && work_.messages.back().role == "assistant") work_.messages.pop_back();
        if (work_.messages.empty()) throw std::runtime_error("nothing to regenerate");
        do_generate(g);
    });
}

void EngineWorker::edit_and_rerun(int message, const std::string& text, const GenerationSettings& g) {
    post([this, message, text, g] {
        if (message < 0 || message >= int(work_.messages.size()))
            throw std::runtime_error("edit: no message " + std::to_string(message));
        work_.messages.resize(size_t(message) + 1);
        work_.messages.back().text = text;
        work_.messages.back().tokens.clear();
        // An edited answer stays an answer: plain continuation continues its text, a chat
        // template answers it with a new turn.
        do_generate(g);
    });
}

void EngineWorker::clear_chat() {
    post([this] {
        work_.messages.clear();
        if (session_) session_->reset();
        history_.clear();
        work_.context.clear();
        work_.context_pieces.clear();
        work_.last_result = {};
        work_.encoded = {};
        work_.context_full = false;
        work_.status = "ready";
    });
}

void EngineWorker::set_probes(const ProbeSelection& s) {
    post([this, s] {
        probe_sel_ = s;
        if (session_) session_->set_probes(probe_config(probe_sel_, model_->info(), session_->n_ctx()));
    }, false);
}

// ---- Interventions ----

// The edit judged on the next token (the last row) and over every position of the text, one
// forward pass at a time in a scratch session (no tokens x vocabulary logits kept).
void EngineWorker::do_intervention(const std::string& what, const std::function<void()>& apply) {
    if (!session_) throw std::runtime_error("no model is loaded");
    if (session_->tokens().empty()) throw std::runtime_error("the conversation is empty: send a message first");
    const InterventionState state_before = weights_zeroed(*model_, residual_edits_);
    apply();
    const InterventionState state_after = weights_zeroed(*model_, residual_edits_);
    const TextJudgement j = judge_over_text(*model_, *session_, SessionOptions{}, state_before, state_after);
    const std::vector<float> before = softmax(j.next_before);
    const std::vector<float> after = softmax(j.next_after);
    InterventionResult r;
    r.text = j.text;
    r.description = what;
    r.before = top_tokens(*model_, before, 10);
    r.after = top_tokens(*model_, after, 10);
    double kl = 0;
    for (size_t i = 0; i < before.size(); ++i)
        if (before[i] > 0) kl += before[i] * (std::log(before[i]) - std::log(std::max(after[i], 1e-30f)));
    r.kl = float(kl);
    r.valid = true;
    work_.intervention = r;
    work_.interventions.push_back(what);
    work_.status = "intervention: " + what;
}

void EngineWorker::zero_weight(const WeightRef& w) {
    post([this, w] {
        const std::string what = "zero " + w.tensor + "[" + std::to_string(w.row) + ", " + std::to_string(w.col) +
                                 "] of layer " + std::to_string(w.layer) +
                                 (w.expert >= 0 ? " expert " + std::to_string(w.expert) : "");
        do_intervention(what, [&] { model_->set_weight(w, 0.0f); });
    });
}

void EngineWorker::set_activation_to_mean(int layer, int channel) {
    post([this, layer, channel] {
        const std::string what = "residual channel " + std::to_string(channel) + " after layer " + std::to_string(layer) +
                                 " set to its mean";
        do_intervention(what, [&] {
            residual_edits_.push_back({layer, channel, ResidualEdit::Mode::Mean, 0.0f});
            session_->set_residual_edits(residual_edits_);
        });
    });
}

void EngineWorker::restore_interventions() {
    post([this] {
        if (!session_) return;
        do_intervention("restore every intervention", [&] {
            model_->restore_weights();
            residual_edits_.clear();
            session_->set_residual_edits({});
        });
        work_.interventions.clear();
    });
}

void EngineWorker::measure_probe_cost() {
    post([this] {
        if (!session_) throw std::runtime_error("no model is loaded");
        const std::vector<int32_t> tokens = session_->tokens();
        if (tokens.size() < 2) throw std::runtime_error("the conversation is empty: send a message first");
        const ProbeConfig with = probe_config(probe_sel_, model_->info(), session_->n_ctx());
        ProbeCost c;
        c.prompt_tokens = int(tokens.size());
        const std::vector<int32_t> last(tokens.end() - 1, tokens.end());
        const std::vector<int32_t> head(tokens.begin(), tokens.end() - 1);
        auto time_evals = [&](const ProbeConfig& config, double& prompt_ms, double& decode_ms) {
            session_->set_probes(config);
            session_->reset();
            Clock::time_point t0 = Clock::now();
            session_->eval(head);
            prompt_ms = ms_since(t0);
            // A decode step: the last token alone, best of three.
            decode_ms = 1e30;
            for (int rep = 0; rep < 3; ++rep) {
                session_->truncate(int(head.size()));
                t0 = Clock::now();
                session_->eval(last);
                decode_ms = std::min(decode_ms, ms_since(t0));
            }
        };
        time_evals({}, c.prompt_ms_off, c.decode_ms_off);
        time_evals(with, c.prompt_ms_on, c.decode_ms_on);
        session_->set_probes(with);
        c.valid = true;
        work_.probe_cost = c;
        work_.status = "measured the probes' cost";
    });
}

}  // namespace vkllm::studio
