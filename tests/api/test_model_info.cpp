// The public value types of the API: ModelInfo (read_model_info) of the four zoo models against
// their files and against what a Session allocates, DeviceInfo of devices(), GgufFile's
// metadata rendering, and quantize_file's atomic write.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"  // below the API only to write fixture files and to compare with ModelSpec
#include "model/spec.h"
#include "random_model/random_model.h"
#include "test_support.h"
#include "vkllm/device.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/model_info.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

namespace fs = std::filesystem;

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

ModelInfo info_of(const std::string& path) { return read_model_info(*GgufFile::open(path)); }

int64_t meta_int(const GgufFile& f, const std::string& key) {
    const GgufValue* v = f.find(key);
    if (!v || !v->integer) throw std::runtime_error("no integer key " + key);
    return *v->integer;
}

uint64_t n_elements(const TensorInfo& t) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    return n;
}

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// ---- ModelInfo ----

TEST(ModelInfo, HyperparametersAreTheFilesForEveryZooModel) {
    for (const char* name : {"zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla"}) {
        SCOPED_TRACE(name);
        auto file = GgufFile::open(zoo(name));
        const ModelInfo info = read_model_info(*file);
        const std::string arch = file->find("general.architecture")->string.value();
        EXPECT_EQ(info.arch, arch);
        EXPECT_EQ(info.name, name);
        EXPECT_EQ(info.source, zoo(name));
        EXPECT_EQ(info.n_layer, meta_int(*file, arch + ".block_count"));
        EXPECT_EQ(info.n_embd, meta_int(*file, arch + ".embedding_length"));
        EXPECT_EQ(info.n_ctx_train, meta_int(*file, arch + ".context_length"));
        EXPECT_EQ(uint64_t(info.n_vocab), file->find("tokenizer.ggml.tokens")->n_elements);
        ASSERT_EQ(int(info.layers.size()), info.n_layer);
        for (int l = 0; l < info.n_layer; ++l) {
            const LayerInfo& L = info.layers[size_t(l)];
            EXPECT_EQ(L.index, l);
            EXPECT_EQ(L.attention.n_head, meta_int(*file, arch + ".attention.head_count"));
            EXPECT_GT(L.attention.gqa_group(), 0);
            EXPECT_GT(L.kv_bytes_per_token, 0u);
        }
        EXPECT_EQ(info.tokenizer, "llama (SentencePiece)");
        EXPECT_TRUE(info.add_bos);
        std::map<std::string, std::pair<int32_t, std::string>> special;
        for (const SpecialToken& t : info.special_tokens) special[t.role] = {t.id, t.text};
        EXPECT_EQ(special["bos"], std::make_pair(int32_t(1), std::string("<s>")));
        EXPECT_EQ(special["eos"], std::make_pair(int32_t(2), std::string("</s>")));
        EXPECT_EQ(special["unk"], std::make_pair(int32_t(0), std::string("<unk>")));
        EXPECT_TRUE(info.chat_template.empty());  // the zoo models have none
    }
}

TEST(ModelInfo, ZooSwaIsFiveSlidingWindowLayersToOneGlobal) {
    const ModelInfo info = info_of(zoo("zoo-swa"));
    ASSERT_EQ(info.n_layer, 6);
    for (const LayerInfo& L : info.layers) {
        SCOPED_TRACE(L.index);
        const bool global = (L.index + 1) % 6 == 0;
        EXPECT_EQ(L.attention.kind, global ? AttentionKind::Global : AttentionKind::SlidingWindow);
        EXPECT_EQ(L.attention.window, global ? 0 : 32);
        EXPECT_EQ(L.attention.qk_norm, QkNorm::PerHead);
        EXPECT_EQ(L.norm_placement, NormPlacement::Sandwich);
        EXPECT_EQ(L.ffn.kind, FfnKind::DenseGated);
        EXPECT_EQ(L.ffn.activation, Activation::GeluTanh);
    }
    EXPECT_EQ(info.n_local_layers, 5);
    EXPECT_EQ(info.n_global_layers, 1);
    EXPECT_EQ(info.kv_bytes_per_token_local, 5 * info.layers[0].kv_bytes_per_token);
    EXPECT_EQ(info.kv_bytes_per_token_global, info.layers[5].kv_bytes_per_token);
    // Gemma 3: RoPE base 10000 on local layers, 1e6 on global ones; embeddings scaled by sqrt(n_embd).
    EXPECT_FLOAT_EQ(info.layers[0].attention.rope.freq_base, 10000.0f);
    EXPECT_FLOAT_EQ(info.layers[5].attention.rope.freq_base, 1e6f);
    EXPECT_NEAR(info.embd_scale, std::sqrt(float(info.n_embd)), 1e-4);
}

TEST(ModelInfo, ZooMoeLayersRouteTwoOfEightExperts) {
    const ModelInfo info = info_of(zoo("zoo-moe"));
    for (const LayerInfo& L : info.layers) {
        SCOPED_TRACE(L.index);
        EXPECT_EQ(L.ffn.kind, FfnKind::Moe);
        EXPECT_EQ(L.ffn.n_expert, 8);
        EXPECT_EQ(L.ffn.top_k, 2);
        EXPECT_EQ(L.ffn.n_ff_expert, 96);
        EXPECT_EQ(L.ffn.gating, MoeGating::Softmax);
        EXPECT_EQ(L.ffn.n_shared_expert_ff, 0);
        EXPECT_EQ(L.attention.kind, AttentionKind::Global);
    }
}

TEST(ModelInfo, ZooMlaShowsLatentAttentionAndASharedExpert) {
    auto file = GgufFile::open(zoo("zoo-mla"));
    const ModelInfo info = read_model_info(*file);
    const int64_t kv_lora = meta_int(*file, "deepseek2.attention.kv_lora_rank");
    const int64_t rope_dims = meta_int(*file, "deepseek2.rope.dimension_count");
    const int64_t key_length = meta_int(*file, "deepseek2.attention.key_length_mla");
    const int64_t n_dense = meta_int(*file, "deepseek2.leading_dense_block_count");
    for (const LayerInfo& L : info.layers) {
        SCOPED_TRACE(L.index);
        EXPECT_EQ(L.attention.kind, AttentionKind::Mla);
        EXPECT_EQ(L.attention.kv_lora_rank, kv_lora);
        EXPECT_EQ(L.attention.q_lora_rank, 0);  // a plain attn_q (V2-Lite style)
        EXPECT_EQ(L.attention.qk_rope, rope_dims);
        EXPECT_EQ(L.attention.qk_nope, key_length - rope_dims);
        EXPECT_EQ(L.attention.v_head, meta_int(*file, "deepseek2.attention.value_length_mla"));
        if (L.index < n_dense) {
            EXPECT_EQ(L.ffn.kind, FfnKind::DenseGated);
        } else {
            EXPECT_EQ(L.ffn.kind, FfnKind::Moe);
            EXPECT_EQ(L.ffn.n_expert, 8);
            EXPECT_EQ(L.ffn.top_k, 2);
            EXPECT_EQ(L.ffn.n_ff_expert, meta_int(*file, "deepseek2.expert_feed_forward_length"));
            // One shared expert of the experts' width.
            EXPECT_EQ(L.ffn.n_shared_expert_ff, L.ffn.n_ff_expert);
        }
    }
}

TEST(ModelInfo, TensorsAddUpToTheFileAndLayersHoldTheirOwn) {
    for (const char* name : {"zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla"}) {
        SCOPED_TRACE(name);
        auto file = GgufFile::open(zoo(name));
        const ModelInfo info = read_model_info(*file);
        ASSERT_EQ(info.tensors.size(), file->tensors().size());
        uint64_t bytes = 0, params = 0, in_layers = 0;
        for (const TensorInfo& t : info.tensors) {
            ASSERT_EQ(t.type, "F32") << t.name;  // the zoo is trained and written in F32
            EXPECT_EQ(t.bytes, 4 * n_elements(t)) << t.name;
            bytes += t.bytes;
            params += n_elements(t);
        }
        EXPECT_EQ(info.tensor_bytes, bytes);
        EXPECT_EQ(info.parameters, params);
        // The data blob is the end of the file: every tensor padded to the alignment.
        EXPECT_LE(bytes, file->file_size());
        EXPECT_GT(bytes, file->file_size() * 9 / 10);
        for (const LayerInfo& L : info.layers) {
            ASSERT_FALSE(L.tensors.empty()) << L.index;
            const std::string prefix = "blk." + std::to_string(L.index) + ".";
            for (const TensorInfo& t : L.tensors) {
                EXPECT_EQ(t.name.rfind(prefix, 0), 0u) << t.name;
                in_layers += t.bytes;
            }
        }
        uint64_t outside = 0;
        for (const TensorInfo& t : info.tensors)
            if (t.name.rfind("blk.", 0) != 0) outside += t.bytes;
        EXPECT_EQ(in_layers + outside, bytes);
    }
    // A quantised file: the byte counts follow the type's blocks (Q8_0: 34 bytes per 32).
    const std::string q8 = test::temp_path("zoo-dense-q8.gguf");
    quantize_file(*GgufFile::open(zoo("zoo-dense")), q8, "Q8_0");
    const ModelInfo info = info_of(q8);
    int n_q8 = 0;
    for (const TensorInfo& t : info.tensors) {
        if (t.type != "Q8_0") continue;
        ++n_q8;
        EXPECT_EQ(t.bytes, n_elements(t) / 32 * 34) << t.name;
    }
    EXPECT_GT(n_q8, 4 * 7 - 1);  // the 7 matrices of every layer, and the embeddings
    fs::remove(q8);
}

// The KV bytes per token the description promises are what a Session allocates: global layers
// n_ctx positions, sliding-window layers a ring of window + n_batch - 1.
TEST(ModelInfo, KvBytesPerTokenMatchTheSessionsCache) {
    for (const char* name : {"zoo-swa", "zoo-mla", "zoo-dense"}) {
        SCOPED_TRACE(name);
        auto model = Model::load(zoo(name));
        const ModelInfo& info = model->info();
        SessionOptions so;
        so.n_ctx = 256;
        so.n_batch = 8;
        so.kv_cache = KvCacheType::F32;  // ModelInfo's bytes per token are an f32 cache's
        Session session(*model, so);
        const Session::KvCacheUsage u = session.kv_cache_usage();
        EXPECT_EQ(u.global_layers, info.n_global_layers);
        EXPECT_EQ(u.local_layers, info.n_local_layers);
        EXPECT_EQ(u.global_bytes, info.kv_bytes_per_token_global * 256);
        uint64_t ring = 0;
        for (const LayerInfo& L : info.layers)
            if (L.attention.window > 0) ring += L.kv_bytes_per_token * uint64_t(L.attention.window + so.n_batch - 1);
        EXPECT_EQ(u.local_bytes, ring);
        EXPECT_EQ(session.kv_cache_bytes(), u.global_bytes + u.local_bytes);
        // An f16 cache (the default where the device has 16-bit storage) takes half.
        SessionOptions half = so;
        half.kv_cache = KvCacheType::Auto;
        Session half_session(*model, half);
        const bool f16 = half_session.kv_cache_usage().type == KvCacheType::F16;
        EXPECT_EQ(half_session.kv_cache_bytes() * (f16 ? 2 : 1), session.kv_cache_bytes());
        // The loaded model describes itself as read_model_info does.
        EXPECT_EQ(info.layer_table(), info_of(zoo(name)).layer_table());
    }
}

TEST(ModelInfo, LayerTableHasOneRowPerLayer) {
    const ModelInfo info = info_of(zoo("zoo-swa"));
    const std::string table = info.layer_table();
    EXPECT_EQ(table.rfind("architecture gemma3 (zoo-swa): 6 layers, n_embd 128, n_vocab 1024, context 256\n", 0), 0u)
        << table;
    EXPECT_NE(table.find("\n    0  4/2         32        window 32        neox 32 base 10000       sandwich  gated gelu 256, qk-norm\n"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("\n    5  4/2         32        global           neox 32 base 1e+06       sandwich  gated gelu 256, qk-norm\n"),
              std::string::npos)
        << table;
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3 + 6);
}

// Every architecture the engine runs (seeded random models of each, with each RoPE scaling):
// the table from ModelInfo is the one ModelSpec prints, and each layer's attention kind follows
// the rule (mla, else sliding_window, chunked, nope, global).
TEST(ModelInfo, EveryArchitectureDescribesItselfAsItsSpecDoes) {
    auto vocab = gguf::File::open(zoo("zoo-dense"));
    std::vector<random_model::RandomModelConfig> configs;
    for (const std::string& arch : random_model::architectures()) {
        random_model::RandomModelConfig c;
        c.arch = arch;
        c.seed = 7;
        if (arch == "deepseek2") c.n_head_kv = 1;
        if (arch == "gpt2" || arch == "olmoe" || arch == "bert") c.n_head_kv = c.n_head;  // multi-head attention only
        if (arch == "gemma3" || arch == "llama4") c.n_layer = 6;  // a global layer among the local ones
        configs.push_back(c);
    }
    for (const char* scaling : {"linear:2", "yarn:4:128", "llama3:8:1:4:128"}) {
        random_model::RandomModelConfig c;
        c.rope_scaling = random_model::parse_rope_scaling(scaling);
        configs.push_back(c);
    }
    random_model::RandomModelConfig phi3;
    phi3.arch = "phi3";
    phi3.rope_scaling = random_model::parse_rope_scaling("longrope:128");
    configs.push_back(phi3);

    std::map<std::string, int> kinds;
    for (const random_model::RandomModelConfig& c : configs) {
        SCOPED_TRACE(c.arch);
        const std::vector<uint8_t> bytes = random_model::build_random_model(c, *vocab).to_bytes();
        auto file = GgufFile::from_memory(bytes.data(), bytes.size(), "random-" + c.arch);
        const ModelInfo info = read_model_info(*file);
        const model::ModelSpec spec = model::ModelSpec::from_gguf(file->internal());
        const std::string table = info.layer_table();  // three heading lines, then one per layer
        EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), long(3 + spec.layers.size()));
        ASSERT_EQ(info.layers.size(), spec.layers.size());
        uint64_t kv = 0;
        for (size_t l = 0; l < spec.layers.size(); ++l) {
            const model::AttentionSpec& a = spec.layers[l].attn;
            const std::string kind = to_string(info.layers[l].attention.kind);
            const char* expected = a.mla.kv_lora_rank > 0 ? "mla"
                                   : a.window > 0         ? "sliding_window"
                                   : a.chunk > 0          ? "chunked"
                                   : !a.rope.enabled      ? "nope"
                                                          : "global";
            EXPECT_EQ(kind, expected) << "layer " << l;
            kinds[kind]++;
            EXPECT_EQ(info.layers[l].ffn.kind == FfnKind::Moe, spec.layers[l].ffn.moe.n_expert > 0) << "layer " << l;
            kv += info.layers[l].kv_bytes_per_token;
        }
        EXPECT_EQ(kv, spec.kv_bytes_per_token());
        EXPECT_EQ(info.kv_bytes_per_token_global + info.kv_bytes_per_token_local, kv);
    }
    // The generator's families cover every kind.
    for (const char* kind : {"global", "sliding_window", "chunked", "nope", "mla"}) EXPECT_GT(kinds[kind], 0) << kind;
}

TEST(ModelInfo, ChatTemplatesAndTheirNamedVariants) {
    // zoo-dense with two templates added (written with the engine's GGUF writer).
    auto src = gguf::File::open(zoo("zoo-dense"));
    gguf::Writer w;
    for (const std::string& key : src->keys_in_order()) w.set(key, *src->find(key));
    w.set("tokenizer.chat_template", gguf::Value::from_string("{% for m in messages %}{{ m.content }}{% endfor %}"));
    w.set("tokenizer.chat_template.tool_use", gguf::Value::from_string("{{ tools }}"));
    for (const gguf::TensorInfo& t : src->tensors())
        w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    const std::string path = test::temp_path("zoo-dense-templates.gguf");
    w.write(path);

    const ModelInfo info = info_of(path);
    EXPECT_EQ(info.chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}");
    EXPECT_EQ(info.chat_template_names, std::vector<std::string>{"tool_use"});
    EXPECT_EQ(info.layer_table(), info_of(zoo("zoo-dense")).layer_table());
    fs::remove(path);
}

TEST(ModelInfo, BadInputGivesAClearError) {
    auto file = GgufFile::open(zoo("zoo-dense"));
    auto model = Model::load(*file);  // takes the file's reader
    EXPECT_THROW(read_model_info(*file), std::logic_error);
    EXPECT_EQ(file->metadata().size(), GgufFile::open(zoo("zoo-dense"))->metadata().size());  // still describable

    try {
        GgufFile::open(test::temp_path("missing.gguf"));
        FAIL() << "opened a missing file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("missing.gguf"), std::string::npos) << e.what();
    }
}

// ---- DeviceInfo ----

TEST(DeviceInfo, DevicesDescribeTheirCapabilitiesAndTheMobileClamp) {
    const std::vector<DeviceInfo> list = devices();
    ASSERT_FALSE(list.empty());
    for (const DeviceInfo& d : list) {
        SCOPED_TRACE(d.name);
        EXPECT_FALSE(d.name.empty());
        EXPECT_FALSE(d.vendor.empty());
        EXPECT_GT(d.max_storage_buffer_range, 0u);
        EXPECT_GT(d.max_shared_memory, 0u);
        EXPECT_FALSE(d.heaps.empty());
        const char* limits = std::getenv("VKLLM_LIMITS");
        if (limits && std::string(limits) == "mobile") {
            EXPECT_EQ(d.limits_profile, "mobile");
            EXPECT_LE(d.max_storage_buffer_range, 128u << 20);
            EXPECT_FALSE(d.fp16_arithmetic);
            EXPECT_TRUE(d.mobile_clamp_changes.empty());  // the record is clamped already
        } else {
            EXPECT_EQ(d.limits_profile, "native");
            // lavapipe (and any desktop GPU) has more than a mobile GPU: 32 KiB of shared
            // memory at least, fp16 or subgroup arithmetic.
            EXPECT_FALSE(d.mobile_clamp_changes.empty());
            for (const std::string& c : d.mobile_clamp_changes) EXPECT_NE(c.find(" -> "), std::string::npos) << c;
        }
        const std::string text = d.to_text();
        EXPECT_EQ(text.rfind("device " + std::to_string(d.index) + ": " + d.name, 0), 0u) << text;
        EXPECT_NE(text.find("limits profile: " + d.limits_profile), std::string::npos) << text;

        // The JSON fields scripts read.
        const nlohmann::json j = nlohmann::json::parse(d.to_json());
        EXPECT_EQ(j.at("index"), d.index);
        EXPECT_EQ(j.at("name"), d.name);
        EXPECT_EQ(j.at("vendor"), d.vendor);
        EXPECT_EQ(j.at("max_storage_buffer_range"), d.max_storage_buffer_range);
        EXPECT_EQ(j.at("max_workgroup_size").size(), 3u);
        EXPECT_EQ(j.at("heaps").size(), d.heaps.size());
        EXPECT_EQ(j.at("mobile_clamp_changes").size(), d.mobile_clamp_changes.size());
        for (const char* key : {"type", "vendor_id", "device_id", "api_version", "driver_version", "driver_name",
                                "driver_info", "limits_profile", "subgroup_size", "subgroup_arithmetic",
                                "max_shared_memory", "max_workgroup_invocations", "max_memory_allocation_size",
                                "fp16_arithmetic", "int8_arithmetic", "storage_8bit", "storage_16bit",
                                "integer_dot_product", "integer_dot_accelerated", "integer_dot_matvec", "cooperative_matrix", "timestamps",
                                "timestamp_period_ns"})
            EXPECT_TRUE(j.contains(key)) << key;
    }
}

// ---- GgufFile ----

TEST(GgufFile, MetadataValuesAndTheirOneLineText) {
    auto file = GgufFile::open(zoo("zoo-swa"));
    EXPECT_EQ(file->version(), 3u);
    EXPECT_EQ(file->file_size(), fs::file_size(zoo("zoo-swa")));

    const GgufValue* name = file->find("general.name");
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(name->type, "string");
    EXPECT_EQ(name->string.value(), "zoo-swa");
    EXPECT_EQ(name->text, "\"zoo-swa\"");

    const GgufValue* window = file->find("gemma3.attention.sliding_window");
    ASSERT_NE(window, nullptr);
    EXPECT_EQ(window->integer.value(), 32);
    EXPECT_EQ(window->text, "32");

    const GgufValue* eps = file->find("gemma3.attention.layer_norm_rms_epsilon");
    ASSERT_NE(eps, nullptr);
    EXPECT_EQ(eps->type, "f32");
    EXPECT_NEAR(eps->real.value(), 1e-6, 1e-12);
    EXPECT_EQ(eps->text, "1e-06");

    const GgufValue* tokens = file->find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->type, "array");
    EXPECT_EQ(tokens->elem_type, "string");
    EXPECT_EQ(tokens->n_elements, 1024u);
    ASSERT_EQ(tokens->strings.size(), 1024u);
    EXPECT_EQ(tokens->strings[1], "<s>");
    EXPECT_EQ(tokens->text, "[string x 1024] \"<unk>\", \"<s>\", \"</s>\", ...");

    const GgufValue* types = file->find("tokenizer.ggml.token_type");
    ASSERT_NE(types, nullptr);
    EXPECT_EQ(types->elem_type, "i32");
    ASSERT_EQ(types->numbers.size(), 1024u);
    EXPECT_EQ(types->numbers[0], 2.0);  // <unk>: UNKNOWN
    EXPECT_EQ(types->text.rfind("[int32 x 1024] 2, 3, 3, ", 0), 0u) << types->text;

    const GgufValue* add_bos = file->find("tokenizer.ggml.add_bos_token");
    ASSERT_NE(add_bos, nullptr);
    EXPECT_EQ(add_bos->type, "bool");
    EXPECT_EQ(add_bos->text, "true");

    // The metadata in file order, every key once.
    std::vector<std::string> keys;
    for (const GgufValue& v : file->metadata()) keys.push_back(v.key);
    EXPECT_EQ(keys.front(), "general.architecture");
    EXPECT_EQ(file->find("no.such.key"), nullptr);

    // Strings on one line: newlines and tabs escaped, other control characters shown as '?',
    // long text cut with its length.
    EXPECT_EQ(quoted_one_line("a\nb\tc\x01"), "\"a\\nb\\tc?\"");
    EXPECT_EQ(quoted_one_line(std::string(100, 'x'), 4), "\"xxxx\" ... (100 chars)");
}

TEST(GgufFile, FromMemoryIsTheSameAsTheFile) {
    const std::string bytes = file_bytes(zoo("zoo-moe"));
    auto a = GgufFile::from_memory(bytes.data(), bytes.size(), "zoo-moe in memory");
    auto b = GgufFile::open(zoo("zoo-moe"));
    EXPECT_EQ(a->path(), "zoo-moe in memory");
    ASSERT_EQ(a->metadata().size(), b->metadata().size());
    for (size_t i = 0; i < a->metadata().size(); ++i) EXPECT_EQ(a->metadata()[i].text, b->metadata()[i].text);
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    EXPECT_EQ(read_model_info(*a).layer_table(), read_model_info(*b).layer_table());
    EXPECT_THROW(GgufFile::from_memory(bytes.data(), 100, "cut"), std::runtime_error);
}

// ---- quantize_file ----

TEST(Quantize, WritesTheFileAndReportsEachTensor) {
    auto in = GgufFile::open(zoo("zoo-moe"));
    const std::string out = test::temp_path("zoo-moe-q4.gguf");
    const QuantizeReport r = quantize_file(*in, out, "q4_0");  // type names are case-insensitive
    ASSERT_EQ(r.tensors.size(), in->tensors().size());
    int converted = 0;
    for (const QuantizedTensor& t : r.tensors) {
        if (t.from != t.to) {
            EXPECT_EQ(t.to, "Q4_0") << t.name;
            ++converted;
        } else {
            EXPECT_FALSE(t.note.empty()) << t.name;  // kept: says why (1-D, router)
        }
    }
    EXPECT_GT(converted, 0);
    EXPECT_LT(r.bytes_out, r.bytes_in / 3);
    auto written = GgufFile::open(out);
    uint64_t bytes = 0;
    for (const TensorInfo& t : written->tensors()) bytes += t.bytes;
    EXPECT_EQ(bytes, r.bytes_out);
    // Nothing left beside it.
    for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
        EXPECT_EQ(e.path().filename().string().find(".zoo-moe-q4.gguf.tmp"), std::string::npos) << e.path();
    fs::remove(out);

    for (const std::string& type : quantize_types()) EXPECT_TRUE(type == "F32" || type == "F16" || type == "BF16" ||
                                                                 type.rfind("Q", 0) == 0 || type == "MXFP4" ||
                                                                 type.rfind("IQ", 0) == 0 || type.rfind("TQ", 0) == 0)
        << type;
    const auto types = quantize_types();
    EXPECT_NE(std::find(types.begin(), types.end(), "IQ2_XXS"), types.end());  // the i-quants are written too
    EXPECT_THROW(quantize_file(*in, test::temp_path("x.gguf"), "Q9_9"), std::invalid_argument);
}

// A failed write leaves an existing target as it was and no temporary behind: the file size
// limit (RLIMIT_FSIZE) makes a write fail half-way, as a full disk does.
TEST(Quantize, AFailedWriteLeavesTheTargetUntouched) {
    const std::string dir = test::temp_path("quantize-target");
    fs::create_directories(dir);
    const std::string out = dir + "/model.gguf";
    const std::string old_contents = "an existing model file the user cares about";
    std::ofstream(out, std::ios::binary) << old_contents;
    auto in = GgufFile::open(zoo("zoo-dense"));

    struct rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
    struct rlimit small = saved;
    small.rlim_cur = 64 << 10;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string error;
    try {
        quantize_file(*in, out, "F16");  // ~1.8 MB: past the limit
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);

    EXPECT_NE(error.find("model.gguf"), std::string::npos) << error;
    const std::string now = file_bytes(out);
    EXPECT_TRUE(now == old_contents) << "the target changed: " << now.size() << " bytes now";
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1)
        << "a temporary file was left in " << dir;

    // A folder that does not exist, and a target that is a folder: errors naming the path.
    EXPECT_THROW(quantize_file(*in, dir + "/no-such-folder/model.gguf", "Q8_0"), std::runtime_error);
    EXPECT_THROW(quantize_file(*in, dir, "Q8_0"), std::runtime_error);
    EXPECT_TRUE(fs::is_directory(dir));
    // Writing over the input itself is refused.
    EXPECT_THROW(quantize_file(*in, zoo("zoo-dense"), "Q8_0"), std::runtime_error);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace vkllm
