#include "template/budget.h"

#include <algorithm>

#include "template/value.h"

namespace vkllm::jinja {

namespace {

thread_local Budget* t_budget = nullptr;

}  // namespace

Budget::Budget(std::function<bool()> cancelled) : cancelled_(std::move(cancelled)), previous_(t_budget) {
    next_check_ = std::min(limits::kPollWork, limits::kMaxWork + 1);
    t_budget = this;
}

Budget::~Budget() { t_budget = previous_; }

void Budget::step() {
    if (++steps_ > limits::kMaxSteps)
        throw Error("template runs too long (limit: " + std::to_string(limits::kMaxSteps) +
                    " loop iterations and macro calls)");
    charge(limits::kStepWork);
}

void Budget::check() {
    if (used_ > limits::kMaxWork)
        throw Error("template does too much work (limit: " + std::to_string(limits::kMaxWork) +
                    " units, about a byte copied or compared each)");
    poll();
    next_check_ = std::min(add_sat(used_, limits::kPollWork), limits::kMaxWork + 1);
}

void Budget::poll() {
    if (cancelled_ && cancelled_()) throw Error::cancellation();
}

void charge(uint64_t units) {
    if (t_budget) t_budget->charge(units);
}

void charge_string(uint64_t bytes) {
    const uint64_t per_byte = bytes >= limits::kHugeStringBytes    ? limits::kHugeByteWork
                              : bytes >= limits::kLargeStringBytes ? limits::kLargeByteWork
                                                                   : 1;
    charge(mul_sat(bytes, per_byte));
}

void charge_search(size_t haystack, size_t needle) {
    if (needle > haystack) return charge(haystack);
    charge(mul_sat(haystack - needle + 1, std::max<size_t>(needle, 1)));
}

void check_string_size(uint64_t bytes) {
    if (bytes > limits::kMaxStringBytes)
        throw Error("string too long (limit: " + std::to_string(limits::kMaxStringBytes) + " bytes)");
}

void check_list_size(uint64_t items) {
    if (items > limits::kMaxListItems)
        throw Error("list too long (limit: " + std::to_string(limits::kMaxListItems) + " items)");
}

void append_checked(std::string& out, std::string_view piece) {
    check_string_size(add_sat(out.size(), piece.size()));
    charge(piece.size());
    out += piece;
}

void append_checked(std::string& out, size_t count, char c) {
    check_string_size(add_sat(out.size(), count));
    charge(count);
    out.append(count, c);
}

}  // namespace vkllm::jinja
