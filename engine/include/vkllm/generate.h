// Generation: sampling parameters, the per-token event a front-end receives, and why a
// generation ended. Session::generate (session.h) runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm {

class Model;
class Session;
struct TokenBytes;  // vkllm/json_output.h

// Applied per token in this order (llama.cpp's rules):
//  0. logit_bias: bias added to each listed token's logit (-100: the token is never chosen)
//  1. penalties on tokens accepted within the last repeat_last_n (prompt included): a token
//     seen c times gets logit / repeat_penalty if logit > 0 else logit * repeat_penalty, then
//     - c * frequency_penalty - presence_penalty
//  2. top-k: the k highest logits (ties toward the lower id)
//  3. top-p: softmax (temperature 1) over what is left; the shortest prefix by descending
//     probability whose cumulative probability reaches top_p
//  4. min-p: drop tokens below min_p times the largest probability
//  5. temperature: logits / temperature, softmax over the survivors, one draw
// temperature <= 0 is greedy (argmax after the bias and penalties). NaN and -inf logits are
// never chosen.
struct SamplerParams {
    float temperature = 0.8f;
    int top_k = 40;                 // <= 0 or >= n_vocab: off
    float top_p = 0.95f;            // >= 1: off
    float min_p = 0.05f;            // <= 0: off
    float repeat_penalty = 1.0f;    // 1: off
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    int repeat_last_n = 64;         // 0: off, < 0: every accepted token
    uint64_t seed = 0;
    // OpenAI's logit_bias: token id -> bias in [-100, 100], added to the model's logit before
    // everything else; -100 bans the token. Ids must be in the model's vocabulary.
    std::map<int32_t, float> logit_bias;
};
// Throws std::invalid_argument naming the first parameter out of its range (NaN temperature,
// top_p outside [0, 1], min_p outside [0, 1], repeat_penalty <= 0, a logit bias outside
// [-100, 100] or for a negative id, ...).
void validate(const SamplerParams& p);
// As validate(p), and every logit_bias id must be below n_vocab.
void validate(const SamplerParams& p, int32_t n_vocab);

// One sampling stage's survivors: how many candidates are left after it and the probability
// mass they hold under the model's own distribution (softmax of the raw logits).
struct FunnelStage {
    std::string stage;  // "vocabulary", "penalties", "top_k", "top_p", "min_p", "temperature"
    int candidates = 0;
    float mass = 0;
};
struct SamplerFunnel {
    std::vector<FunnelStage> stages;  // in the order applied
    int chosen_rank = 0;              // the chosen token's rank in the model's distribution (0: most likely)
    float chosen_p = 0;               // its probability in the final (sampling) distribution
};

struct TokenAlternative {
    int32_t id = 0;
    std::string piece;
    float logprob = 0;  // natural log of the model's probability (softmax of the raw logits)
};

// What the callback receives once per generated token.
struct TokenEvent {
    int index = 0;         // 0 for the first generated token
    int position = 0;      // its position in the context
    int32_t id = 0;
    std::string piece;     // the bytes the token contributes
    std::string text;      // the text this token releases: complete UTF-8 characters, minus
                           // anything held back while it could begin a stop string
    float logprob = 0;     // of the chosen token under the model's distribution
    std::vector<TokenAlternative> top;  // the top_n most likely tokens, most likely first
    SamplerFunnel funnel;               // filled when GenerateOptions::funnel
    bool end_of_generation = false;     // the token is an end-of-generation token (its piece adds no text;
                                        // its text is whatever was still held back)
};

// Return false to stop generation after this token (StopReason::Callback). It runs on the
// thread that called generate(), between steps: it may call the Session's worker methods that
// do not evaluate (probes(), set_probes(), tokens(), ...) and cancel().
using TokenCallback = std::function<bool(const TokenEvent&)>;

// Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a small draft model proposes
// up to n_draft tokens (its greedy continuation), the target evaluates its pending token and
// the proposals in one batched pass, and every position is then sampled from the target's own
// logits with the same sampler, the same penalties and the same random draws as plain
// generation. A proposal is accepted while it equals the token the target chose; the first
// token that differs (or, when all were accepted, the token after them) is the target's own and
// is kept too. So the output is the one plain generation gives, token for token, for greedy
// and for sampling with the same seed (up to the rounding difference between a batched pass
// and a one-token pass, which only a near-tie can show); events, logprobs and stop reasons are
// the target's. Under sampling fewer proposals are accepted than with the rejection-sampling
// rule of those papers, which keeps the distribution but not the plain run's tokens.
// The draft Session belongs to the draft Model, whose vocabulary must equal the target's
// (check_draft_vocabulary); its cache is brought to the target's context before each proposal
// (longest common prefix kept) and left holding a prefix of the generated text. When either
// context has no room for proposals, the step evaluates the pending token alone.
struct DraftOptions {
    Session* session = nullptr;  // a Session of the draft model; null: plain decoding
    int n_draft = 4;             // tokens proposed per step, >= 1
};
// Throws std::invalid_argument when the draft's vocabulary differs from the target's (its
// size, or the text of the first token id whose texts differ), naming both.
void check_draft_vocabulary(const Model& target, const Model& draft);

// What constrained sampling asks of a grammar's matcher (JsonGrammar's and Grammar's implement
// it: vkllm/json_output.h, vkllm/grammar.h). The generation asks for each candidate token
// whether its bytes continue the text (accepts), feeds the chosen token's bytes (feed), allows
// an end-of-generation token only where the text is whole (complete) and ends where nothing
// more can follow (closed).
class TokenConstraint {
public:
    virtual ~TokenConstraint() = default;
    // Advances by `bytes`. False (and the matcher unchanged) when they cannot continue the text.
    virtual bool feed(std::string_view bytes) = 0;
    // Whether feed(bytes) would succeed; the matcher is unchanged.
    virtual bool accepts(std::string_view bytes) const = 0;
    // The text so far is whole: generation may end here.
    virtual bool complete() const = 0;
    // No byte can follow: generation must end here.
    virtual bool closed() const = 0;
    // What the text is, for errors ("the JSON value").
    virtual std::string text_name() const { return "the constrained text"; }
};

// Output constrained by a TokenConstraint: a token is sampled only when its bytes continue the
// text (a control token, which has none, never is); an end-of-generation token only where the
// text is complete; generation ends with StopReason::EndOfGeneration when the matcher is closed.
// When no token of the vocabulary continues the text the result is an Error naming it.
struct ConstrainedOutput {
    TokenConstraint* matcher = nullptr;      // null: unconstrained. Fed by the generation: one per call
    const TokenBytes* vocabulary = nullptr;  // the model's token bytes (null: read for this call)
};

struct GenerateOptions {
    SamplerParams sampler;
    int max_tokens = 128;               // generated tokens at most (0: only evaluate the prompt)
    std::vector<std::string> stop;      // generation ends when the text contains one; it is not released
    int top_n = 0;                      // alternatives per TokenEvent
    bool funnel = false;                // fill TokenEvent::funnel
    // Tokens the penalties count as already seen: by default the whole prompt.
    bool penalize_prompt = true;
    DraftOptions draft;                 // speculative decoding (see DraftOptions)
    ConstrainedOutput constraint;       // constrained sampling (not combined with a draft)
};

enum class StopReason {
    EndOfGeneration,  // the model produced an end-of-generation token
    StopString,       // the text reached one of GenerateOptions::stop
    MaxTokens,        // max_tokens generated
    ContextFull,      // no room for another token (or the prompt does not fit: tokens_generated == 0)
    Callback,         // the callback returned false
    Cancelled,        // Session::cancel()
    Error,            // an exception inside the engine; `message` has it
};
const char* to_string(StopReason r);

struct GenerateResult {
    StopReason reason = StopReason::MaxTokens;
    std::string message;          // for Error and ContextFull, what happened
    std::vector<int32_t> tokens;  // generated tokens (the end-of-generation token included)
    // The released text (without a stop string): the events' texts concatenated. Text held back
    // while it could begin a stop string (or an unfinished UTF-8 character) is released by the
    // last event when generation ends by EndOfGeneration, MaxTokens or ContextFull, and dropped
    // when it ends by Callback, Cancelled or Error.
    std::string text;
    int n_prompt = 0;             // prompt tokens
    int n_prompt_evaluated = 0;   // of which evaluated (the rest came from the cache)
    double prompt_seconds = 0;    // evaluating the prompt
    double decode_seconds = 0;    // generating
    double first_token_seconds = 0;  // from the call to the first token
    // Speculative decoding: tokens the draft proposed, and of them those the target accepted
    // (each accepted one is a generated token that cost no pass of its own).
    int draft_proposed = 0;
    int draft_accepted = 0;
};

}  // namespace vkllm
