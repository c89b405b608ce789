// Test names of suites parameterised by a model or golden-set name: GoogleTest takes letters,
// digits and underscores, and the names carry dashes ("zoo-swa" -> "zoo_swa").
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace vkllm::test {

// `name` with each '-' an '_'.
inline std::string test_name_of(std::string name) {
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

// The name generator of INSTANTIATE_TEST_SUITE_P for a suite whose parameter is the model's name.
struct ModelParamName {
    std::string operator()(const ::testing::TestParamInfo<std::string>& info) const { return test_name_of(info.param); }
};

}  // namespace vkllm::test
