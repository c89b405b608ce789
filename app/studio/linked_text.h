// The Attention panel's linked text view (bertviz-style): a token of the text, hovered or
// pinned by a click, drawn with lines to the tokens it attends.
#pragma once

namespace vkllm::studio {

// Pins the view on the token at `position` (-1: none) and opens it, as a click on that token
// would; `mean_heads` shows the mean over the layer's heads instead of the selected head.
void pin_linked_token(int position, bool mean_heads);

}  // namespace vkllm::studio
