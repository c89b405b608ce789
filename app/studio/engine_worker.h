// The engine's thread: owns the Model and the Session, runs commands from a queue (load a
// model, send a message, regenerate, edit a turn and rerun, interventions) and publishes
// immutable snapshots the UI reads without ever waiting for the GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probe_history.h"
#include "text_effect.h"
#include "vkllm/generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::studio {

struct ChatTurn {
    std::string role;                // "user" or "assistant"
    std::string text;
    std::vector<TokenEvent> tokens;  // assistant: one event per generated token
};

// Which probes run (each panel asks for its own).
struct ProbeSelection {
    bool attention = true;
    bool activations = true;   // residual stats + ffn_down
    bool experts = true;       // routing + expert load
    bool lens = true;
    bool timings = true;
    int residual_full_layer = -2;  // < -1: none; else the token x channel map of this layer
    bool state = false;            // the recurrent layers' state norms and decays
    int state_map_layer = -1;      // >= 0: the mixing maps of this Mamba-2 layer's heads
    bool operator==(const ProbeSelection&) const = default;
};
// The Attention panel's probes: every layer's full maps while they fit three quarters of the
// probe budget at n_ctx keys (the rest is left to the other probes) and kMaxUiMapBytes
// (attention_maps_fit); larger models and contexts get every layer and head's summary, computed
// on the GPU, for the layer x head overview instead.
ProbeConfig probe_config(const ProbeSelection& s, const ModelInfo& info, int n_ctx = 2048);
// Positions of each eval the logit lens grid covers (its newest ones).
constexpr int kLensPositions = 64;
// Host bytes of every layer's full maps (a pass's rows and the eval's, at most 1024).
uint64_t attention_map_bytes(const ModelInfo& info, int n_ctx);
// The most map bytes the UI redraws from: each published state (every generated token) rebuilds
// the view-models and every head's matrix from the maps, which took 0.7-2.0 s of the UI thread
// per token at 172 MB (zoo-dense at a 2,026-token context, lavapipe's 2 cores loaded), so frames
// stalled for that long; the zoo models at their contexts take 3-16 MiB.
constexpr uint64_t kMaxUiMapBytes = 64ull << 20;
bool attention_maps_fit(const ModelInfo& info, int n_ctx);
// Layers with a recurrent state (Mamba-1, Mamba-2, RWKV-7), and those whose heads have a mixing
// map (Mamba-2: a scalar decay per head, alone or beside attention).
bool has_state(const LayerInfo& l);
bool has_state_map(const LayerInfo& l);
// Positions a studio state map covers, and how many heads of a layer fit an eighth of the budget.
constexpr int kStateMapPositions = 512;
int state_map_heads(const LayerInfo& l, int n_batch = 512);

struct GenerationSettings {
    std::string system;   // the system prompt (empty: none), the conversation's first message
    SamplerParams sampler;
    int max_tokens = 64;
    int top_n = 5;
};

// The next-token distribution before and after an intervention.
struct InterventionResult {
    std::string description;   // "zero W_down[3, 17] of layer 1" ...
    std::vector<TokenAlternative> before, after;  // top tokens, most likely first
    float kl = 0;              // KL(before || after) over the whole vocabulary, nats
    TextEffect text;           // every position of the conversation before and after
    bool valid = false;
};

// The probes' own cost: the same evaluation timed with probes off and on.
struct ProbeCost {
    double prompt_ms_off = 0, prompt_ms_on = 0;
    double decode_ms_off = 0, decode_ms_on = 0;
    int prompt_tokens = 0;
    bool valid = false;
};

// An encoder's (BERT's) reading of the newest user text: it evaluates the text in one
// bidirectional pass and generates nothing.
struct EncoderView {
    bool valid = false;
    std::string pooling;       // how `embedding` was pooled ("cls", "mean", ...)
    std::vector<float> embedding;  // the pooled text embedding [n_embd]
    float embedding_norm = 0;
    // Masked-token prediction (the output projection over every position): the most likely
    // tokens at each position, most likely first, and whether the token there is [MASK].
    std::vector<std::vector<TokenAlternative>> predictions;
    std::vector<bool> masked;
    double ms = 0;             // the probed pass
};
bool is_encoder(const ModelInfo& info);  // every layer bidirectional

struct WorkerState {
    uint64_t version = 0;
    bool loaded = false;
    std::shared_ptr<const ModelInfo> info;
    DeviceInfo device;
    uint64_t weight_bytes = 0, kv_bytes = 0, scratch_bytes = 0, probe_bytes = 0;
    // The recurrent layers' state, and its snapshots (copies kept for undo and edits).
    uint64_t state_bytes = 0, snapshot_bytes = 0;
    std::string status;  // one line for the status bar
    std::string error;   // the last command's error; empty when it went well
    std::string notice;  // something the user should know that is not an error (a template fallback)
    bool busy = false, generating = false;
    std::vector<ChatTurn> messages;
    std::vector<int32_t> context;             // tokens in the session's cache
    std::vector<std::string> context_pieces;  // their text
    std::shared_ptr<const ProbeHistory> probes = std::make_shared<ProbeHistory>();
    GenerateResult last_result;
    InterventionResult intervention;
    std::vector<std::string> interventions;   // in force, described
    ProbeCost probe_cost;
    bool chat_template = false;               // the model's template formats the prompt
    bool encoder = false;                     // an encoder (BERT): sending evaluates, nothing generates
    EncoderView encoded;                      // the newest text's, when `encoder`
    int n_ctx = 0;                            // the session's context, in tokens
    // The last answer stopped because the context is full: the chat offers to stop there or to
    // drop the oldest turns and go on (shift_context).
    bool context_full = false;
    // A user message taken back: its turn was stopped before any token came (the chat puts it
    // back in the input box); `returned_serial` counts them so the UI takes each once.
    std::string returned_input;
    uint64_t returned_serial = 0;
    std::string loaded_source;   // the file (or built-in name) the model came from, once it loaded
    std::string failed_source;   // the last file that did not load
    bool last_load_ok = true;    // whether the newest load (load_serial) opened its model
    int shaders_prepared = 0;    // pipelines compiled ahead of the first answer at the load (0: warm)
    double prepare_seconds = 0;
    uint64_t load_serial = 0;    // counts the loads tried, so the UI sees each outcome once
    int engine_nice = 0;         // the engine thread's nice value (0: the UI's priority)
    std::string engine_priority_error;  // why lowering it failed, when it did
};

class EngineWorker {
public:
    EngineWorker();
    ~EngineWorker();  // cancels a generation and joins the thread

    // Commands (return at once; the worker runs them in order).
    void load_file(const std::string& path, const std::string& device);
    void load_memory(const void* data, size_t size, const std::string& name, const std::string& device);
    void send(const std::string& text, const GenerationSettings& g);
    void regenerate(const GenerationSettings& g);            // drops the last answer, answers again
    void edit_and_rerun(int message, const std::string& text, const GenerationSettings& g);
    void clear_chat();
    // Context shift: drops the oldest turns (the system prompt stays) until the conversation
    // takes at most half the context, evaluates what is kept, and clears `context_full`.
    void shift_context(const GenerationSettings& g);
    // Replaces the conversation with saved messages (user and assistant in turn, no system
    // message: that is GenerationSettings::system) and evaluates them, so the next answer
    // starts at once.
    void load_conversation(std::vector<ChatTurn> messages, const GenerationSettings& g);
    // The context of the sessions made by the next loads (0: the model's, at most 2048).
    void set_context_length(int n_ctx);
    // Runs the engine at a lower CPU priority than the UI (thread_priority.h; nice 1 to 19).
    // Call it once, before the first load: the driver's threads inherit it when the device is made.
    void lower_priority(int nice);
    // Called on the worker's thread after each publish (the UI wakes its event loop with it).
    void set_on_publish(std::function<void()> f);
    void set_probes(const ProbeSelection& s);
    void zero_weight(const WeightRef& w);                    // a super weight
    void set_activation_to_mean(int layer, int channel);     // a massive activation
    void restore_interventions();
    void measure_probe_cost();
    void stop();  // thread-safe: cancels the running generation, or the chat template's rendering

    // The newest published state (cheap: a shared pointer).
    std::shared_ptr<const WorkerState> state() const;
    // True while a command is queued or running.
    bool idle() const;
    // Waits until the queue is empty and nothing runs (tests and the headless mode).
    void wait_idle() const;

private:
    // `clears_error`: the command starts by forgetting the last error (false for settings that
    // the UI sends on its own, so they never hide the error of what the user asked for).
    void post(std::function<void()> command, bool clears_error = true);
    void run();
    void publish();
    void do_load(std::function<std::unique_ptr<Model>()> open, const std::string& what);
    void do_generate(const GenerationSettings& g);
    void do_encode(const GenerationSettings& g);
    std::vector<int32_t> conversation_tokens(const std::string& system);
    void prefill(const GenerationSettings& g);  // evaluates the conversation, no answer
    void take_back_user_turn();                 // the newest user message back to the box
    void sync_context();
    void do_intervention(const std::string& what, const std::function<void()>& apply);

    // Worker-thread state
    std::unique_ptr<Model> model_;
    std::unique_ptr<Session> session_;
    ProbeSelection probe_sel_;
    std::vector<ResidualEdit> residual_edits_;
    WorkerState work_;     // the worker's copy, published by copying
    ProbeHistory history_;
    bool pending_prompt_step_ = false;
    int n_ctx_request_ = 0;
    std::function<void()> on_publish_;  // set before the first command; read by the worker

    // Set by stop() and the destructor, cleared as each command starts: the chat template's
    // rendering polls it (a slow template must not hold up a stop or the app's closing).
    std::atomic<bool> stop_requested_{false};

    mutable std::mutex mutex_;  // guards everything below
    mutable std::condition_variable cv_;
    std::deque<std::pair<std::function<void()>, bool>> queue_;
    bool running_command_ = false;
    bool quit_ = false;
    std::shared_ptr<const WorkerState> published_;
    Session* live_session_ = nullptr;  // for stop()
    std::thread thread_;
};

}  // namespace vkllm::studio
