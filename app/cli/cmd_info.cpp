// vkllm info [--json]: every Vulkan device and its capability record.
#include <cstdio>

#include "commands.h"
#include "vkllm/device.h"

namespace vkllm::cli {

int cmd_info(const Args& args) {
    bool json = false;
    for (const auto& a : args) {
        if (a == "--json") json = true;
        else {
            std::fprintf(stderr, "usage: vkllm info [--json]\n");
            return 2;
        }
    }
    const std::vector<DeviceInfo> list = devices();
    if (json) {
        std::printf("{\"devices\": [");
        for (size_t i = 0; i < list.size(); ++i) std::printf("%s%s", i ? ", " : "", list[i].to_json().c_str());
        std::printf("]}\n");
    } else {
        if (list.empty()) std::printf("no Vulkan devices found\n");
        for (const auto& d : list) std::printf("%s\n", d.to_text().c_str());
    }
    return 0;
}

}  // namespace vkllm::cli
