#include "ops/tensor_view.h"

#include <string>

#include "ops/dispatch_util.h"

namespace vkllm::ops::detail {

uint64_t checked_f32(const TensorView& v, const char* op, const char* what) {
    const std::string name(what);
    require(v.buffer != nullptr, op, name + " has no buffer");
    require(v.type == gguf::TensorType::F32, op, name + " must be f32");
    require(v.rows >= 0 && v.cols >= 0, op,
            name + " has a negative shape [" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + "]");
    require(v.row_stride >= 0 && v.stride() >= v.cols, op,
            name + "'s row stride " + std::to_string(v.stride()) + " is shorter than its " + std::to_string(v.cols) +
                " columns");
    require(v.offset % 4 == 0, op, name + "'s byte offset " + std::to_string(v.offset) + " is not a whole float");
    return v.offset / 4;
}

}  // namespace vkllm::ops::detail
