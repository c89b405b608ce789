// TokenConstraint: what constrained sampling asks of a grammar's matcher. The decode loop keeps
// one per generation, asks for each candidate token whether its bytes continue the text
// (accepts), feeds the chosen token's bytes (feed), and ends generation where the text is
// whole (complete) or nothing more can follow (closed). JsonMatcher and GbnfMatcher implement it.
#pragma once

#include <string_view>

namespace vkllm::sampling {

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
};

}  // namespace vkllm::sampling
