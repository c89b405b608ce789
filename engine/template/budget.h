// What one render may spend, enforced: the sizes of the values it builds (checked before a
// value is built, so a template cannot make the renderer allocate more than the limits), the
// loop iterations and macro calls it runs, and the work it does in all (bytes and values
// copied, compared or scanned), which bounds its time whatever it computes, quadratic patterns
// included. The work counter also polls the caller's cancellation callback.
//
// The value and builtin code has no interpreter at hand, so the budget of the render running
// on a thread is installed for that thread (Budget's constructor) and charge() reaches it;
// outside a render charge() does nothing and only the size checks apply.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "template/limits.h"

namespace vkllm::jinja {

class Budget {
public:
    // Installs this budget for the calling thread until it is destroyed.
    explicit Budget(std::function<bool()> cancelled);
    ~Budget();
    Budget(const Budget&) = delete;
    Budget& operator=(const Budget&) = delete;

    // `units` of work (limits::kMaxWork). Cheap: the limit and the cancellation callback are
    // looked at only every limits::kPollWork units.
    void charge(uint64_t units) {
        used_ = units > UINT64_MAX - used_ ? UINT64_MAX : used_ + units;
        if (used_ >= next_check_) check();
    }
    // A loop iteration or a macro call (limits::kMaxSteps), which also costs work.
    void step();
    // Throws Error::cancellation() when the cancellation callback says so.
    void poll();

private:
    void check();

    std::function<bool()> cancelled_;
    uint64_t used_ = 0, next_check_ = 0, steps_ = 0;
    Budget* previous_;
};

// Charges the budget of the render running on this thread (nothing outside a render).
void charge(uint64_t units);
// A string of `bytes` copied or written whole (more per byte when large: limits.h).
void charge_string(uint64_t bytes);
// The work of scanning `haystack` bytes for a `needle`-byte string: the search compares up to
// the needle's length at every position.
void charge_search(size_t haystack, size_t needle);

// Overflow-safe size arithmetic: a result past 64 bits saturates (and crosses every limit).
inline uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
inline uint64_t mul_sat(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// Throw an Error naming the limit when a string of `bytes` or a list of `items` would cross
// it: called with the size a result will have, before building it.
void check_string_size(uint64_t bytes);
void check_list_size(uint64_t items);
// out += piece, the string limit checked first (for results built piece by piece, whose
// size is known only as they grow); charges the bytes copied.
void append_checked(std::string& out, std::string_view piece);
void append_checked(std::string& out, size_t count, char c);

}  // namespace vkllm::jinja
