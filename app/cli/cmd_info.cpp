// vkllm info [--json]: every Vulkan device and its capability record.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "json_text.h"
#include "options.h"
#include "vkllm/device.h"

namespace vkllm::cli {

namespace {

int info(const Args& args) {
    const bool json = Options(args, {}, {"--json"}).has("--json");
    const std::vector<DeviceInfo> list = devices();
    if (json) {
        nlohmann::ordered_json all;
        all["devices"] = nlohmann::ordered_json::array();
        for (const DeviceInfo& d : list) all["devices"].push_back(nlohmann::ordered_json::parse(d.to_json()));
        std::printf("%s\n", app::json_text(all).c_str());
    } else {
        if (list.empty()) std::printf("no Vulkan devices found\n");
        for (const auto& d : list) std::printf("%s\n", d.to_text().c_str());
    }
    return 0;
}

}  // namespace

int cmd_info(const Args& args) { return with_usage("vkllm info [--json]", info, args); }

}  // namespace vkllm::cli
