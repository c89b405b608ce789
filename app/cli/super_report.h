// vkllm inspect --super: the super-weight finder's report (vkllm/super_weights.h) as text or JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "vkllm/super_weights.h"

namespace vkllm::cli {

nlohmann::json super_report_json(const SuperWeightReport& r);
std::string super_report_text(const SuperWeightReport& r, const Model& model);

// Loads the model (empty path: the built-in one), runs the finder and prints the report.
int inspect_super(const std::string& path, bool json);

}  // namespace vkllm::cli
