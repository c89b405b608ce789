// GGUF reader/writer: round trips, malformed files (each must give one FormatError naming the
// file and the field), and the shared stories260K model files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include <sys/stat.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "test_support.h"

using namespace vkllm::gguf;

namespace {

std::unique_ptr<File> parse(const std::vector<uint8_t>& bytes, const std::string& name = "t.gguf") {
    return File::from_memory(bytes.data(), bytes.size(), name);
}

// Expects parsing to fail with a FormatError whose message starts with the file name and
// contains every one of `needles`.
void expect_format_error(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> needles) {
    try {
        parse(bytes, "bad.gguf");
        ADD_FAILURE() << "no error; expected one mentioning " << *needles.begin();
    } catch (const FormatError& e) {
        std::string msg = e.what();
        EXPECT_EQ(msg.rfind("bad.gguf: ", 0), 0u) << msg;
        for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

// Hand-assembles GGUF bytes so that any field can be made wrong.
struct Raw {
    std::vector<uint8_t> b;
    template <typename T>
    Raw& put(T v) {
        uint8_t tmp[sizeof(T)];
        std::memcpy(tmp, &v, sizeof(T));
        b.insert(b.end(), tmp, tmp + sizeof(T));
        return *this;
    }
    Raw& str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put<uint32_t>(v); }
    Raw& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(uint32_t(dims.size()));
        for (uint64_t d : dims) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    Raw& pad(size_t alignment = 32) {
        while (b.size() % alignment) b.push_back(0);
        return *this;
    }
    Raw& zeros(size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
};

Value nested(int depth) {
    Value v = Value::from_i32s({1, 2});
    for (int d = 0; d < depth; ++d) {
        Value outer;
        outer.type = ValueType::ARRAY;
        outer.elem_type = ValueType::ARRAY;
        outer.arr = {v, v};
        v = outer;
    }
    return v;
}

Writer writer_with_every_type() {
    Writer w;
    Value v;
    v.type = ValueType::UINT8, v.u = 250, w.set("t.u8", v);
    v = {}, v.type = ValueType::INT8, v.i = -100, w.set("t.i8", v);
    v = {}, v.type = ValueType::UINT16, v.u = 65000, w.set("t.u16", v);
    v = {}, v.type = ValueType::INT16, v.i = -32000, w.set("t.i16", v);
    w.set("t.u32", Value::from_u32(4000000000u));
    w.set("t.i32", Value::from_i32(-2000000000));
    w.set("t.f32", Value::from_f32(1.5f));
    w.set("t.bool", Value::from_bool(true));
    w.set("t.string", Value::from_string("h\xc3\xa9llo \n world"));
    w.set("t.empty_string", Value::from_string(""));
    w.set("t.u64", Value::from_u64(std::numeric_limits<uint64_t>::max()));
    v = {}, v.type = ValueType::INT64, v.i = std::numeric_limits<int64_t>::min(), w.set("t.i64", v);
    v = {}, v.type = ValueType::FLOAT64, v.f = 3.141592653589793, w.set("t.f64", v);
    w.set("t.strings", Value::from_strings({"a", "", "ccc"}));
    w.set("t.floats", Value::from_f32s({0.5f, -2.0f}));
    w.set("t.ints", Value::from_i32s({-1, 7}));
    w.set("t.empty_array", Value::from_i32s({}));
    Value bools;
    bools.type = ValueType::ARRAY, bools.elem_type = ValueType::BOOL;
    bools.arr = {Value::from_bool(false), Value::from_bool(true)};
    w.set("t.bools", bools);
    w.set("t.nested", nested(3));
    return w;
}

}  // namespace

TEST(Gguf, RoundTripsEveryMetadataType) {
    Writer w = writer_with_every_type();
    auto f = parse(w.to_bytes());
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->find("t.u8")->u, 250u);
    EXPECT_EQ(f->find("t.i8")->i, -100);
    EXPECT_EQ(f->find("t.u16")->u, 65000u);
    EXPECT_EQ(f->find("t.i16")->i, -32000);
    EXPECT_EQ(f->get_int("t.u32"), 4000000000ll);
    EXPECT_EQ(f->get_int("t.i32"), -2000000000);
    EXPECT_EQ(f->get_float("t.f32"), 1.5);
    EXPECT_EQ(f->get_bool("t.bool"), true);
    EXPECT_EQ(f->get_string("t.string"), "h\xc3\xa9llo \n world");
    EXPECT_EQ(f->get_string("t.empty_string"), "");
    EXPECT_EQ(f->find("t.u64")->u, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(f->get_int("t.i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(f->get_float("t.f64"), 3.141592653589793);
    EXPECT_EQ(f->get_strings("t.strings"), (std::vector<std::string>{"a", "", "ccc"}));
    EXPECT_EQ(f->get_floats("t.floats"), (std::vector<float>{0.5f, -2.0f}));
    EXPECT_EQ(f->get_ints("t.ints"), (std::vector<int64_t>{-1, 7}));
    EXPECT_EQ(f->get_ints("t.empty_array")->size(), 0u);
    EXPECT_EQ(f->get_ints("t.bools"), (std::vector<int64_t>{0, 1}));
    const Value* n = f->find("t.nested");
    ASSERT_NE(n, nullptr);
    ASSERT_EQ(n->elem_type, ValueType::ARRAY);
    ASSERT_EQ(n->arr.size(), 2u);
    const Value& leaf = n->arr[1].arr[0].arr[1];
    EXPECT_EQ(leaf.elem_type, ValueType::INT32);
    ASSERT_EQ(leaf.arr.size(), 2u);
    EXPECT_EQ(leaf.arr[1].i, 2);
    // Insertion order is kept.
    auto keys = f->keys_in_order();
    ASSERT_EQ(keys.size(), 19u);
    EXPECT_EQ(keys.front(), "t.u8");
    EXPECT_EQ(keys.back(), "t.nested");
    EXPECT_EQ(f->tensors().size(), 0u);
}

TEST(Gguf, TypedGettersNameTheKeyOnWrongType) {
    auto f = parse(writer_with_every_type().to_bytes());
    EXPECT_FALSE(f->get_int("absent").has_value());
    try {
        f->get_int("t.string");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("t.string"), std::string::npos) << e.what();
    }
    EXPECT_THROW(f->get_string("t.u32"), FormatError);
    EXPECT_THROW(f->get_bool("t.u8"), FormatError);
    EXPECT_THROW(f->get_strings("t.ints"), FormatError);
    EXPECT_THROW(f->get_int("t.u64"), FormatError);  // does not fit in int64
    EXPECT_THROW(f->get_floats("t.strings"), FormatError);
}

TEST(Gguf, RoundTripsTensorsWithCustomAlignment) {
    Writer w;
    w.set("general.alignment", Value::from_u32(64));
    std::vector<float> a = vkllm::test::random_floats(3 * 5, 1);
    w.add_tensor_f32("a", {5, 3}, a);
    std::vector<float> q = vkllm::test::random_floats(64 * 3, 2);
    w.add_tensor("q8", TensorType::Q8_0, {64, 3}, quantize(TensorType::Q8_0, q.data(), q.size()));
    std::vector<uint8_t> h(2 * 2 * 3 * 4 * 5, 0x3c);
    w.add_tensor("f16_4d", TensorType::F16, {2, 3, 4, 5}, h);
    std::vector<uint8_t> bytes = w.to_bytes();
    EXPECT_EQ(bytes.size() % 64, 0u);

    auto f = parse(bytes);
    EXPECT_EQ(f->alignment(), 64u);
    ASSERT_EQ(f->tensors().size(), 3u);
    const TensorInfo* ta = f->find_tensor("a");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->dims, (std::vector<uint64_t>{5, 3}));
    EXPECT_EQ(ta->n_elements(), 15u);
    EXPECT_EQ(ta->row_length(), 5u);
    EXPECT_EQ(ta->n_rows(), 3u);
    EXPECT_EQ(ta->n_bytes, 60u);
    EXPECT_EQ(std::memcmp(ta->data, a.data(), 60), 0);
    const TensorInfo* tq = f->find_tensor("q8");
    ASSERT_NE(tq, nullptr);
    EXPECT_EQ(tq->type, TensorType::Q8_0);
    EXPECT_EQ(tq->n_bytes, 3u * 2 * 34);
    EXPECT_LT(vkllm::test::nmse(dequantize_tensor(*tq), q), 1e-4);
    const TensorInfo* th = f->find_tensor("f16_4d");
    ASSERT_NE(th, nullptr);
    EXPECT_EQ(th->dims.size(), 4u);
    EXPECT_EQ(std::memcmp(th->data, h.data(), h.size()), 0);
    for (const auto& t : f->tensors()) {
        EXPECT_EQ(t.offset % 64, 0u) << t.name;
        EXPECT_EQ(uintptr_t(t.data - bytes.data()) % 1, 0u);
    }
    EXPECT_EQ(f->find_tensor("missing"), nullptr);
}

TEST(Gguf, WriteToDiskAndMapMatchesMemoryImage) {
    Writer w = writer_with_every_type();
    std::vector<float> x = vkllm::test::random_floats(32 * 7, 3);
    w.add_tensor_f32("x", {32, 7}, x);
    std::string path = (std::filesystem::temp_directory_path() / "vkllm_test_gguf_roundtrip.gguf").string();
    w.write(path);
    EXPECT_EQ(vkllm::test::read_file(path), w.to_bytes());
    auto f = File::open(path);
    EXPECT_EQ(f->path(), path);
    EXPECT_EQ(f->file_size(), w.to_bytes().size());
    EXPECT_EQ(dequantize_tensor(*f->find_tensor("x")), x);
    std::filesystem::remove(path);
}

TEST(Gguf, WriterRejectsInconsistentTensors) {
    Writer w;
    EXPECT_THROW(w.add_tensor("q", TensorType::Q8_0, {33}, std::vector<uint8_t>(34)), std::runtime_error);
    EXPECT_THROW(w.add_tensor("q", TensorType::Q8_0, {32}, std::vector<uint8_t>(33)), std::runtime_error);
    EXPECT_THROW(w.add_tensor("q", TensorType::F32, {}, {}), std::runtime_error);
    w.add_tensor_f32("a", {1}, {1.0f});
    EXPECT_THROW(w.add_tensor_f32("a", {1}, {1.0f}), std::runtime_error);
}

TEST(Gguf, OpenMissingFileSaysSo) {
    try {
        File::open("/nonexistent/dir/x.gguf");
        FAIL();
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.gguf"), std::string::npos);
    }
}

// ---- malformed files ----

TEST(GgufMalformed, BadMagicAndVersions) {
    expect_format_error({'G', 'G', 'M', 'L', 3, 0, 0, 0}, {"magic", "not a GGUF file"});
    expect_format_error({}, {"magic", "truncated"});
    expect_format_error(Raw().header(0, 0, 1).b, {"version", "version 1 is not supported"});
    expect_format_error(Raw().header(0, 0, 4).b, {"version", "unsupported GGUF version 4"});
    expect_format_error(Raw().header(0, 0, 0x03000000).b, {"version", "big-endian"});
    EXPECT_EQ(parse(Raw().header(0, 0, 2).b)->version(), 2u);
}

TEST(GgufMalformed, EveryTruncationOfAValidFileIsReported) {
    Writer w;
    w.set("general.architecture", Value::from_string("llama"));
    w.set("a.list", Value::from_strings({"x", "yy"}));
    w.set("a.nested", nested(1));
    w.add_tensor_f32("t0", {4, 2}, std::vector<float>(8, 1.0f));  // 32 bytes: no padding after
    w.add_tensor("t1", TensorType::Q8_0, {32}, std::vector<uint8_t>(34, 0));
    w.add_tensor_f32("t2", {8}, std::vector<float>(8, 2.0f));
    std::vector<uint8_t> full = w.to_bytes();
    ASSERT_NO_THROW(parse(full));
    ASSERT_EQ(full.size() % 32, 0u);
    for (size_t len = 0; len < full.size(); ++len) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + len);
        try {
            parse(cut, "cut.gguf");
            ADD_FAILURE() << "prefix of " << len << " bytes parsed";
        } catch (const FormatError& e) {
            std::string msg = e.what();
            EXPECT_EQ(msg.rfind("cut.gguf: ", 0), 0u) << msg;
            bool names_field = msg.find("header") != std::string::npos || msg.find("metadata") != std::string::npos ||
                               msg.find("tensor") != std::string::npos;
            EXPECT_TRUE(names_field) << msg;
        }
    }
}

TEST(GgufMalformed, HugeCountsAndLengths) {
    expect_format_error(Raw().header(0, uint64_t(1) << 62).b, {"metadata count", "claims"});
    expect_format_error(Raw().header(uint64_t(1) << 62, 0).b, {"tensor count", "claims"});
    expect_format_error(Raw().header(0, 1).put<uint64_t>(uint64_t(1) << 63).zeros(16).b, {"metadata key #0", "string length"});
    // A string value whose length runs past the end.
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(1000).zeros(8).b, {"metadata 'k'", "string length 1000"});
    // Arrays whose element count cannot fit, including counts whose byte size overflows 64 bits.
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(10).put<uint64_t>(uint64_t(1) << 61).zeros(8).b,
                        {"metadata 'k'", "array of", "cannot fit"});
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(100).zeros(20).b,
                        {"metadata 'k'", "100 uint8 elements"});
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(3).str("a").str("b").put<uint64_t>(99).b,
                        {"metadata 'k'[2]", "string length 99"});
}

TEST(GgufMalformed, BadValues) {
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(13).zeros(8).b, {"metadata 'k'", "unknown value type 13"});
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(0).b, {"metadata 'k'", "element type 77"});
    expect_format_error(Raw().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).b, {"metadata 'k'", "bool"});
    expect_format_error(Raw().header(0, 2).kv_u32("k", 1).kv_u32("k", 2).b, {"metadata 'k'", "duplicate key"});
    expect_format_error(Raw().header(0, 1).kv_u32("general.alignment", 48).b, {"general.alignment", "power of two"});
    expect_format_error(Raw().header(0, 1).kv_u32("general.alignment", 0).b, {"general.alignment"});
    // Found by the fuzzer: an unsigned alignment above 2^63 once escaped without the file name.
    expect_format_error(Raw().header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(~uint64_t(0)).b,
                        {"general.alignment", "power of two", "18446744073709551615"});
    expect_format_error(Raw().header(0, 1).str("general.alignment").put<uint32_t>(5).put<int32_t>(-32).b,
                        {"general.alignment", "-32"});
    // Nesting beyond the limit.
    Writer deep;
    deep.set("deep", nested(12));
    expect_format_error(deep.to_bytes(), {"metadata 'deep'", "nested deeper"});
    Writer ok;
    ok.set("ok", nested(7));
    EXPECT_NO_THROW(parse(ok.to_bytes()));
}

TEST(GgufMalformed, BadTensorRecords) {
    auto one = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
        return Raw().header(1, 0).tensor("blk.0.w", dims, type, offset).pad().zeros(data_bytes).b;
    };
    EXPECT_NO_THROW(parse(one({4, 2}, 0, 0, 32)));
    expect_format_error(one({4, 2}, 0, 0, 31), {"tensor 'blk.0.w'", "data [0..32]", "beyond the end of the file"});
    expect_format_error(one({4, 2}, 0, 64, 64), {"tensor 'blk.0.w'", "beyond the end of the file"});
    expect_format_error(one({4, 2}, 0, uint64_t(-32), 32), {"tensor 'blk.0.w'", "beyond the end of the file"});
    expect_format_error(one({4, 2}, 0, 8, 64), {"tensor 'blk.0.w'", "offset 8", "alignment 32"});
    expect_format_error(one({4, 2}, 99, 0, 32), {"tensor 'blk.0.w'", "unknown tensor type 99"});
    expect_format_error(one({}, 0, 0, 32), {"tensor 'blk.0.w'", "0 dimensions"});
    expect_format_error(one({1, 1, 1, 1, 1}, 0, 0, 32), {"tensor 'blk.0.w'", "5 dimensions"});
    expect_format_error(one({4, 0}, 0, 0, 32), {"tensor 'blk.0.w'", "dimension 1 is 0"});
    expect_format_error(one({uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0, 32), {"tensor 'blk.0.w'", "overflow"});
    expect_format_error(one({uint64_t(1) << 62, 4}, 0, 0, 32), {"tensor 'blk.0.w'", "overflow"});
    // 2^62 F32 elements: fits in 63 bits but 2^64 bytes do not.
    expect_format_error(one({uint64_t(1) << 62}, 0, 0, 32), {"tensor 'blk.0.w'", "overflows 64 bits"});
    expect_format_error(one({33, 2}, 8, 0, 256), {"tensor 'blk.0.w'", "row length 33", "Q8_0 block size 32"});
    // A name with unprintable bytes is shown escaped.
    expect_format_error(Raw().header(1, 0).tensor(std::string("a\x01", 2), {4}, 99, 0).b, {"tensor 'a\\x01'", "unknown tensor type"});
}

// An offset near 2^64 once made offset + size wrap, and the message showed the wrapped range
// ("data [18446744073709551584..0]"): the numbers must be the file's own, and the end exact.
TEST(GgufMalformed, OffsetsNearTwoToTheSixtyFourAreReportedAsTheyAre) {
    auto one = [](uint64_t offset) { return Raw().header(1, 0).tensor("blk.0.w", {4, 2}, 0, offset).pad().zeros(32).b; };
    // 2^64 - 32: aligned, and offset + 32 bytes is exactly 2^64.
    expect_format_error(one(uint64_t(-32)), {"tensor 'blk.0.w'", "data [18446744073709551584..18446744073709551616]",
                                             "starts beyond the end of the file", "32 bytes at offset 18446744073709551584",
                                             "data section of 32 bytes"});
    // The largest aligned offset: the end passes 2^64.
    expect_format_error(one(uint64_t(-64)), {"data [18446744073709551552..18446744073709551584]", "starts beyond"});
    // In the file, but running past its end.
    expect_format_error(Raw().header(1, 0).tensor("blk.0.w", {4, 2}, 0, 32).pad().zeros(48).b,
                        {"data [32..64]", "ends beyond the end of the file", "data section of 48 bytes"});
    // No message anywhere shows a wrapped sum.
    try {
        parse(one(uint64_t(-32)));
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()).find("..0]"), std::string::npos) << e.what();
    }
}

TEST(GgufMalformed, DuplicateAndOverlappingTensors) {
    expect_format_error(Raw().header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().zeros(64).b,
                        {"tensor 'w'", "duplicate tensor name"});
    expect_format_error(Raw().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(96).b,
                        {"tensor 'b'", "overlaps tensor 'a'"});
    auto f = parse(Raw().header(2, 0).tensor("a", {8}, 0, 32).tensor("b", {8}, 0, 0).pad().zeros(64).b);
    EXPECT_EQ(f->find_tensor("a")->offset, 32u);
}

TEST(GgufMalformed, UnknownButNamedTypesOpenForInspection) {
    // Q8_K (15) is a ggml type we cannot decode: the file opens, decoding says which type.
    auto f = parse(Raw().header(1, 0).tensor("w", {256}, 15, 0).pad().zeros(320).b);
    const TensorInfo* t = f->find_tensor("w");
    EXPECT_EQ(t->n_bytes, 292u);
    EXPECT_FALSE(type_traits(t->type)->dequantizable);
    try {
        dequantize_tensor(*t);
        FAIL();
    } catch (const UnsupportedType& e) {
        EXPECT_NE(std::string(e.what()).find("Q8_K"), std::string::npos) << e.what();
    }
}

TEST(GgufMalformed, FuzzCorpusParsesOrFailsCleanly) {
    // The fuzzer's seeds and regression inputs (tests/fuzz/corpus/gguf), replayed without clang.
    const std::filesystem::path dir = std::filesystem::path(vkllm::test::source_dir()) / "tests/fuzz/corpus/gguf";
    if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " not found (set VKLLM_SOURCE_DIR)";
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        SCOPED_TRACE(entry.path().string());
        std::vector<uint8_t> bytes = vkllm::test::read_file(entry.path().string());
        bool regression = entry.path().filename().string().rfind("regress_", 0) == 0;
        try {
            auto f = parse(bytes, "corpus.gguf");
            EXPECT_FALSE(regression) << "regression input parsed";
            for (const TensorInfo& t : f->tensors()) {
                if (type_traits(t.type)->dequantizable) {
                    EXPECT_EQ(dequantize_tensor(t).size(), t.n_elements());
                }
            }
        } catch (const FormatError& e) {
            EXPECT_TRUE(regression) << e.what();
            EXPECT_EQ(std::string(e.what()).rfind("corpus.gguf: ", 0), 0u) << e.what();
        }
        ++n;
    }
    EXPECT_GE(n, 6);
}

TEST(Gguf, TypeNames) {
    EXPECT_EQ(type_from_name("q4_k"), TensorType::Q4_K);
    EXPECT_EQ(type_from_name("MXFP4"), TensorType::MXFP4);
    EXPECT_FALSE(type_from_name("Q9_9").has_value());
    EXPECT_STREQ(type_traits(TensorType::Q6_K)->name, "Q6_K");
    EXPECT_EQ(type_traits(TensorType::Q6_K)->type_size, 210u);
    EXPECT_FALSE(type_traits(static_cast<TensorType>(5)).has_value());
    EXPECT_STREQ(value_type_name(ValueType::FLOAT64), "float64");
}

// ---- the shared stories260K files ----

TEST(GgufStories, HyperparametersAndTensorTypes) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string dir = shared + "/models/stories260K/";
    struct Case {
        const char* file;
        TensorType matrix_type;
        TensorType embd_type;
        TensorType output_type;
    };
    const Case cases[] = {
        {"stories260K-F32.gguf", TensorType::F32, TensorType::F32, TensorType::F32},
        {"stories260K-F16.gguf", TensorType::F16, TensorType::F16, TensorType::F16},
        {"stories260K-Q8_0.gguf", TensorType::Q8_0, TensorType::Q8_0, TensorType::Q8_0},
        {"stories260K-Q4_0.gguf", TensorType::Q4_0, TensorType::Q4_0, TensorType::Q8_0},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.file);
        auto f = File::open(dir + c.file);
        EXPECT_EQ(f->version(), 3u);
        EXPECT_EQ(f->get_string("general.architecture"), "llama");
        EXPECT_EQ(f->get_int("llama.block_count"), 5);
        EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
        EXPECT_EQ(f->get_int("llama.feed_forward_length"), 172);
        EXPECT_EQ(f->get_int("llama.attention.head_count"), 8);
        EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
        EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens")->size(), 512u);
        EXPECT_EQ(f->get_floats("tokenizer.ggml.scores")->size(), 512u);
        ASSERT_EQ(f->tensors().size(), 48u);
        const TensorInfo* embd = f->find_tensor("token_embd.weight");
        ASSERT_NE(embd, nullptr);
        EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 512}));
        EXPECT_EQ(embd->type, c.embd_type);
        EXPECT_EQ(f->find_tensor("output.weight")->type, c.output_type);
        EXPECT_EQ(f->find_tensor("blk.3.attn_q.weight")->type, c.matrix_type);
        EXPECT_EQ(f->find_tensor("blk.4.attn_k.weight")->dims, (std::vector<uint64_t>{64, 32}));
        EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, TensorType::F32);
        const TensorInfo* down = f->find_tensor("blk.2.ffn_down.weight");
        EXPECT_EQ(down->dims, (std::vector<uint64_t>{172, 64}));
        EXPECT_EQ(down->type, c.matrix_type == TensorType::F32 ? TensorType::F32 : TensorType::F16);
        uint64_t total = 0;
        for (const auto& t : f->tensors()) total += t.n_bytes;
        EXPECT_LE(total, f->file_size());
    }
}

// A named pipe given as a model must be refused at once, not wait forever for a writer.
TEST(Gguf, NamedPipeIsRefusedWithoutBlocking) {
    const std::string dir = ::testing::TempDir() + "/vkllm_fifo_test";
    std::filesystem::create_directories(dir);
    const std::string fifo = dir + "/model.gguf";
    std::filesystem::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    try {
        File::open(fifo);
        ADD_FAILURE() << "a named pipe was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    std::filesystem::remove(fifo);
    try {
        File::open(dir);
        ADD_FAILURE() << "a directory was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
}
