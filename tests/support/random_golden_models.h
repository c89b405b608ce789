// The golden folders whose models vkllm-random-model writes (tests/golden/<dir>/models.txt: one
// model a line, its name then the generator's arguments; '#' comments): the models listed, and
// the check that each committed file is what the generator makes today, byte for byte. If that
// fails, the generator changed and the golden logits no longer describe the files it makes.
// For test programs that link vkllm_random_model.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "random_model/command_line.h"
#include "random_model/random_model.h"
#include "test_support.h"

namespace vkllm::test {

struct RandomGoldenModel {
    std::string name;                        // the file is <dir>/<name>.gguf
    random_model::RandomModelConfig config;  // what the arguments on its line ask for
};

// The models of <dir>/models.txt, in order.
inline std::vector<RandomGoldenModel> random_golden_models(const std::string& dir) {
    std::vector<RandomGoldenModel> models;
    for (const std::string& line : read_lines(dir + "/models.txt")) {
        std::vector<std::string> words = random_model::split_words(line);
        if (words.empty() || words[0][0] == '#') continue;
        RandomGoldenModel m;
        m.name = words[0];
        words.erase(words.begin());
        m.config = random_model::parse_command_line(words, "").config;
        models.push_back(std::move(m));
    }
    return models;
}

// Each model of <dir>/models.txt (`count` of them), written with the vocabulary `vocab`, equals
// its committed file.
inline void expect_random_golden_models_reproducible(const std::string& dir, const gguf::File& vocab, size_t count) {
    const std::vector<RandomGoldenModel> models = random_golden_models(dir);
    EXPECT_EQ(models.size(), count) << dir << "/models.txt";
    for (const RandomGoldenModel& m : models)
        EXPECT_EQ(random_model::build_random_model(m.config, vocab).to_bytes(), read_file(dir + "/" + m.name + ".gguf"))
            << m.name;
}

}  // namespace vkllm::test
