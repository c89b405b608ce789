// vkllm run --json / --json-schema FILE: stdout is one JSON value the schema allows, for any seed
// and prompt, on the built-in model (byte-level tokens) and stories260K (SentencePiece); bad
// schema files are usage errors that name the file and the keyword.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "test_support.h"

namespace vkllm {
namespace {

using json = nlohmann::json;

using Result = test::ShellResult;

// Runs vkllm with `args`; its stderr goes to `stderr_to` (a shell redirection target).
Result run(const std::string& args, const std::string& stderr_to = "&1") {
    return test::shell(test::vkllm_bin() + " " + args + " 2>" + stderr_to);
}

std::string write_file(const std::string& name, const std::string& bytes) { return test::write_temp_file(name, bytes); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Code points of a UTF-8 string (maxLength counts characters, not bytes).
size_t characters(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

const char* kPersonSchema = R"({
  "type": "object",
  "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
                 "pet": {"enum": ["cat", "dog", "fish"]}},
  "required": ["name", "age", "pet"], "additionalProperties": false})";

// The value `out` holds matches kPersonSchema: exactly the three keys, of their types.
void expect_person(const std::string& out, const std::string& what) {
    json v;
    ASSERT_NO_THROW(v = json::parse(out)) << what << ": " << out;
    ASSERT_TRUE(v.is_object()) << what << ": " << out;
    EXPECT_EQ(v.size(), 3u) << what << ": " << out;
    ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << what << ": " << out;
    EXPECT_LE(characters(v["name"].get<std::string>()), 12u) << what << ": " << out;
    ASSERT_TRUE(v.contains("age")) << what << ": " << out;
    EXPECT_TRUE(v["age"].is_number_integer()) << what << ": " << out;
    ASSERT_TRUE(v.contains("pet") && v["pet"].is_string()) << what << ": " << out;
    const std::string pet = v["pet"];
    EXPECT_TRUE(pet == "cat" || pet == "dog" || pet == "fish") << what << ": " << out;
}

void check_schema_runs(const std::string& model_args, const std::vector<int>& seeds) {
    const std::string schema = write_file("person.schema.json", kPersonSchema);
    for (const char* prompt : {"Tom had a pet", "Once upon a time", "{"})
        for (int seed : seeds) {
            const std::string args = "run " + model_args + " --json-schema " + schema + " -p '" + prompt +
                                     "' -n 200 --temp 0.9 --seed " + std::to_string(seed);
            const Result r = run(args, "/dev/null");
            ASSERT_EQ(r.code, 0) << args << ": " << r.out;
            expect_person(r.out, args);
        }
    // Greedy too, and the same seed gives the same value.
    const std::string args = "run " + model_args + " --json-schema " + schema + " -p 'Lily' -n 200 --temp 0";
    const Result a = run(args, "/dev/null");
    ASSERT_EQ(a.code, 0) << a.out;
    expect_person(a.out, args);
    EXPECT_EQ(run(args, "/dev/null").out, a.out);
}

TEST(CliJson, SchemaOutputMatchesOnTheBuiltInModel) { check_schema_runs("", {1, 2, 3, 4}); }

TEST(CliJson, SchemaOutputMatchesOnStories260K) {
    VKLLM_REQUIRE_SHARED(shared);
    check_schema_runs("-m " + shared + "/models/stories260K/stories260K-F32.gguf", {5, 6});
}

TEST(CliJson, AnyObjectAloneOnStdout) {
    for (int seed : {1, 2, 3}) {
        const Result r = run("run --json -p 'Once upon a time' -n 200 --temp 1 --seed " + std::to_string(seed), "/dev/null");
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_FALSE(has(r.out, "Once upon a time")) << r.out;  // stdout is the value alone
        json v;
        ASSERT_NO_THROW(v = json::parse(r.out)) << r.out;
        EXPECT_TRUE(v.is_object()) << r.out;
    }
}

TEST(CliJson, AValueCutShortIsAnError) {
    const std::string schema = write_file("person-short.schema.json", kPersonSchema);
    const Result r = run("run --json-schema " + schema + " -p Tom -n 2 --seed 1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(has(r.out, "the JSON value is incomplete")) << r.out;
    EXPECT_TRUE(has(r.out, "-n")) << r.out;
}

TEST(CliJson, BadSchemaFilesAreUsageErrorsNamingTheFileAndKeyword) {
    struct Case {
        std::string file, text, expect;
    };
    const std::vector<Case> cases = {
        {"not-json.schema.json", "{\"type\": ", "not valid JSON"},
        {"pattern.schema.json", R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^a+$"}}})",
         "'pattern' at #/properties/id"},
        {"minimum.schema.json", R"({"type": "integer", "minimum": 3})", "'minimum'"},
        {"not-object.schema.json", "[1, 2]", "must be an object"},
    };
    for (const Case& c : cases) {
        const std::string path = write_file(c.file, c.text);
        const Result r = run("run --json-schema " + path + " -p hi");
        EXPECT_EQ(r.code, 2) << c.file << ": " << r.out;
        EXPECT_TRUE(has(r.out, c.file)) << r.out;
        EXPECT_TRUE(has(r.out, c.expect)) << r.out;
        EXPECT_TRUE(has(r.out, "usage: vkllm run")) << r.out;
    }
    Result r = run("run --json-schema " + test::temp_path("no-such.schema.json") + " -p hi");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "no-such.schema.json")) << r.out;
    r = run("run --json-schema /tmp -p hi");  // a directory
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "/tmp")) << r.out;
    r = run("run --json --json-schema " + write_file("any.schema.json", "{}") + " -p hi");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "exclusive")) << r.out;
    r = run("run --json --draft draft.gguf -p hi");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "--draft")) << r.out;
}

}  // namespace
}  // namespace vkllm
