// vkllm info [--json]: every Vulkan device and its capability record.
#include <cstdio>

#include <nlohmann/json.hpp>

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
        nlohmann::ordered_json all;
        all["devices"] = nlohmann::ordered_json::array();
        for (const DeviceInfo& d : list) all["devices"].push_back(nlohmann::ordered_json::parse(d.to_json()));
        std::printf("%s\n", all.dump().c_str());
    } else {
        if (list.empty()) std::printf("no Vulkan devices found\n");
        for (const auto& d : list) std::printf("%s\n", d.to_text().c_str());
    }
    return 0;
}

}  // namespace vkllm::cli
