// vkllm::validation_error_count (vkllm/device.h): the runtime's count of validation-layer errors.
#include "gpu/device.h"
#include "vkllm/device.h"

namespace vkllm {

uint64_t validation_error_count() { return gpu::validation_error_count(); }

}  // namespace vkllm
