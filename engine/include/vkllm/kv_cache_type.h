// The KV cache's element type: chosen in SessionOptions, reported by Session::kv_cache_usage,
// and the type the engine's cache and attention kernels are told (there never Auto).
#pragma once

#include <optional>
#include <string>

namespace vkllm {

// The KV cache's element type. Auto: F16 where the device has 16-bit storage (llama.cpp's
// default cache type too: half the memory and half the bytes attention reads), else F32, and
// F32 for encoders (BERT: one bidirectional pass, nothing kept for later tokens). F16
// on a device without 16-bit storage makes the Session constructor throw. Q8_0: ggml's 8-bit
// blocks of 32 values (36 bytes each here: 0.28x of F32), for models whose K and V rows are
// whole blocks (the constructor throws otherwise).
enum class KvCacheType { Auto, F32, F16, Q8_0 };
// "auto", "f32", "f16", "q8_0"; and back (nullopt for any other name).
const char* kv_cache_type_name(KvCacheType t);
std::optional<KvCacheType> parse_kv_cache_type(const std::string& name);

}  // namespace vkllm
