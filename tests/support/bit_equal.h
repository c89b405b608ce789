// Bit-for-bit comparison of two float results (a layout or a schedule that must not change the
// arithmetic): -0 and 0 differ, a NaN equals only a NaN of the same bits.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace vkllm::test {

inline void expect_bit_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << what << ": element " << i << " is " << got[i] << ", not " << want[i];
}

}  // namespace vkllm::test
