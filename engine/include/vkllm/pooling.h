// How an encoder's final hidden states become one vector per text.
#pragma once

namespace vkllm {

// Encoders (BERT): how the final hidden states of a text become its embedding. Model: the
// file's own (`<arch>.pooling_type`); None: one row per token; Mean: the mean of the rows;
// Cls: the first token's row ([CLS]); Last: the last token's row. A file's own pooling (the
// model's spec, ModelInfo) is never Model.
enum class Pooling { Model, None, Mean, Cls, Last };

}  // namespace vkllm
