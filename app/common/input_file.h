// Whole inputs the user names (a prompt file, a text to measure, a saved conversation, a
// script): read with a size limit, and only from what can hold text. A regular file is checked
// against the limit before anything is read; a pipe, FIFO, socket or terminal (standard input
// included) is read up to the limit and refused past it. A directory, a block device or a
// character device other than a terminal (/dev/zero, /dev/urandom) is refused before a byte is
// read, so an endless source cannot fill memory.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace vkllm::app {

// Why an input cannot be read; the message names the path (and the limit, when it is past it).
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The whole of `path` ("-": standard input), at most `max_bytes` bytes. `what` says what the
// input is for, in the messages ("prompt file", "conversation"). Throws InputError: the path does
// not open, is not a file, pipe or terminal, is larger than max_bytes, or a read fails (a signal
// that interrupts a blocked read, such as Ctrl-C, counts as a failure).
std::string read_input(const std::string& path, uint64_t max_bytes, const std::string& what);

// A byte count as people read it: "512 bytes", "64 KiB", "1.5 MiB", "256 MiB".
std::string byte_size_text(uint64_t bytes);

// The limits the front-ends read their inputs with (documented in their usage texts).
inline constexpr uint64_t kMiB = uint64_t(1) << 20;
inline constexpr uint64_t kPromptFileMax = 128 * kMiB;      // run/logits/tokenize -f
inline constexpr uint64_t kTextFileMax = 512 * kMiB;        // perplexity -f: a corpus
inline constexpr uint64_t kEmbedFileMax = 64 * kMiB;        // embed -f: one text per line
inline constexpr uint64_t kConversationFileMax = 64 * kMiB; // chat /load
inline constexpr uint64_t kSmallFileMax = 16 * kMiB;        // settings, scripts

}  // namespace vkllm::app
