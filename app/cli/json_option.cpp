#include "json_option.h"

#include <string>

#include "input_file.h"

namespace vkllm::cli {

std::optional<JsonGrammar> json_grammar_option(const Options& options) {
    const bool any = options.has("--json");
    if (any && options.has("--json-schema")) throw UsageError("--json and --json-schema are exclusive; give one");
    if (any) return JsonGrammar::any_object();
    if (!options.has("--json-schema")) return std::nullopt;
    const std::string path = options.str("--json-schema");
    std::string text;
    try {
        text = app::read_input(path, app::kSmallFileMax, "JSON Schema file");
    } catch (const app::InputError& e) {
        throw UsageError(std::string("--json-schema: ") + e.what());
    }
    try {
        return JsonGrammar::from_schema(text);
    } catch (const JsonSchemaError& e) {
        // The message names the keyword and where it is ("the schema's 'pattern' at #/properties/name ...").
        throw UsageError("--json-schema " + path + ": " + e.what());
    }
}

std::optional<Grammar> gbnf_grammar_option(const Options& options) {
    if (!options.has("--grammar")) return std::nullopt;
    if (options.has("--json") || options.has("--json-schema"))
        throw UsageError("--grammar does not combine with --json or --json-schema; give one");
    const std::string path = options.str("--grammar");
    std::string text;
    try {
        text = app::read_input(path, app::kSmallFileMax, "grammar file");
    } catch (const app::InputError& e) {
        throw UsageError(std::string("--grammar: ") + e.what());
    }
    try {
        return Grammar::from_gbnf(text);
    } catch (const GrammarError& e) {
        throw UsageError("--grammar " + path + ":" + e.what());  // what(): "LINE:COLUMN: reason"
    }
}

}  // namespace vkllm::cli
