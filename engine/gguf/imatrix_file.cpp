// Importance matrices (vkllm/imatrix.h): llama.cpp's GGUF imatrix files, read and written, and
// its legacy .dat files, read.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "gguf/gguf.h"
#include "vkllm/imatrix.h"

namespace vkllm {
namespace {

constexpr const char* kType = "general.type";
constexpr const char* kDatasets = "imatrix.datasets";
constexpr const char* kChunkCount = "imatrix.chunk_count";
constexpr const char* kChunkSize = "imatrix.chunk_size";
constexpr const char* kSums = ".in_sum2";
constexpr const char* kCounts = ".counts";

std::runtime_error bad(const std::string& path, const std::string& what) {
    return std::runtime_error("imatrix file '" + path + "': " + what);
}

bool ends_with(const std::string& s, const char* suffix, std::string* stem) {
    const size_t n = std::strlen(suffix);
    if (s.size() <= n || s.compare(s.size() - n, n, suffix) != 0) return false;
    *stem = s.substr(0, s.size() - n);
    return true;
}

void check_finite(const std::string& path, const ImatrixEntry& e) {
    for (float v : e.sums)
        if (!std::isfinite(v) || v < 0) throw bad(path, "entry " + e.name + " holds a negative or non-finite sum");
}

// The GGUF magic: anything else is read as the legacy format.
bool is_gguf(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in && std::memcmp(magic, "GGUF", 4) == 0;
}

Imatrix read_gguf(const std::string& path) {
    std::unique_ptr<gguf::File> f;
    try {
        f = gguf::File::open(path);
    } catch (const std::exception& e) {
        throw bad(path, e.what());
    }
    if (const auto t = f->get_string(kType); t && *t != "imatrix")
        throw bad(path, "general.type is '" + *t + "', not 'imatrix' (a model file?)");
    Imatrix m;
    if (const auto d = f->get_strings(kDatasets)) m.datasets = *d;
    m.chunk_count = int32_t(f->get_int(kChunkCount).value_or(0));
    m.chunk_size = int32_t(f->get_int(kChunkSize).value_or(0));

    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> by_name;
    for (const gguf::TensorInfo& t : f->tensors()) {
        std::string stem;
        if (ends_with(t.name, kSums, &stem))
            by_name[stem].first = &t;
        else if (ends_with(t.name, kCounts, &stem))
            by_name[stem].second = &t;
    }
    if (by_name.empty()) throw bad(path, "no <name>.in_sum2 / <name>.counts tensors: not an imatrix");
    for (const auto& [name, pair] : by_name) {
        const auto [sums, counts] = pair;
        if (!sums || !counts) throw bad(path, name + " has " + (sums ? "sums without counts" : "counts without sums"));
        if (sums->type != gguf::TensorType::F32 || counts->type != gguf::TensorType::F32)
            throw bad(path, name + ": sums and counts must be F32");
        const uint64_t n_mat = counts->n_elements();
        if (n_mat == 0 || sums->n_elements() % n_mat)
            throw bad(path, name + ": " + std::to_string(sums->n_elements()) + " sums do not divide into " +
                                std::to_string(n_mat) + " matrices");
        ImatrixEntry e;
        e.name = name;
        e.n_cols = int64_t(sums->n_elements() / n_mat);
        e.sums.resize(sums->n_elements());
        std::memcpy(e.sums.data(), sums->data, e.sums.size() * sizeof(float));
        std::vector<float> c(n_mat);
        std::memcpy(c.data(), counts->data, n_mat * sizeof(float));
        for (float v : c) {
            if (!std::isfinite(v) || v < 0) throw bad(path, name + ": a count is negative or not finite");
            e.counts.push_back(std::lround(v));
        }
        check_finite(path, e);
        m.entries.push_back(std::move(e));
    }
    return m;
}

// The legacy format: int32 n_entries; per entry int32 name length, the name, int32 ncall (chunks),
// int32 nval, float[nval] (each column's mean times ncall); then optionally int32 chunk count,
// int32 length and the dataset's name.
Imatrix read_legacy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw bad(path, "cannot open it");
    in.seekg(0, std::ios::end);
    const int64_t size = in.tellg();
    in.seekg(0);
    auto read_i32 = [&](const char* what) {
        int32_t v = 0;
        if (!in.read(reinterpret_cast<char*>(&v), sizeof v)) throw bad(path, std::string("truncated at ") + what);
        return v;
    };
    const int32_t n = read_i32("the entry count");
    if (n < 1 || int64_t(n) * 12 > size) throw bad(path, "neither a GGUF file nor a legacy imatrix (entry count " +
                                                          std::to_string(n) + ")");
    Imatrix m;
    m.legacy = true;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t len = read_i32("a name length");
        if (len < 1 || len > 4096) throw bad(path, "entry " + std::to_string(i) + " has a name of length " + std::to_string(len));
        ImatrixEntry e;
        e.name.resize(size_t(len));
        if (!in.read(e.name.data(), len)) throw bad(path, "truncated in a name");
        const int32_t ncall = read_i32("a call count");
        const int32_t nval = read_i32("a value count");
        if (nval < 1 || int64_t(nval) * 4 > size) throw bad(path, e.name + " has " + std::to_string(nval) + " values");
        e.n_cols = nval;
        e.sums.resize(size_t(nval));
        if (!in.read(reinterpret_cast<char*>(e.sums.data()), int64_t(nval) * 4)) throw bad(path, "truncated in " + e.name);
        e.counts = {ncall};
        check_finite(path, e);
        m.entries.push_back(std::move(e));
    }
    int32_t chunks = 0;
    if (in.read(reinterpret_cast<char*>(&chunks), sizeof chunks)) {
        m.chunk_count = chunks;
        int32_t len = 0;
        if (in.read(reinterpret_cast<char*>(&len), sizeof len) && len > 0 && len < 65536) {
            std::string d(size_t(len), '\0');
            if (in.read(d.data(), len)) m.datasets.push_back(d);
        }
    }
    std::sort(m.entries.begin(), m.entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return m;
}

}  // namespace

std::vector<float> ImatrixEntry::importance() const {
    std::vector<float> out(sums.size(), 1.0f);
    if (counts.empty() || n_cols <= 0) return out;
    const size_t per = sums.size() / counts.size();
    for (size_t m = 0; m < counts.size(); ++m) {
        if (counts[m] <= 0) continue;  // a matrix no token reached: every column alike
        for (size_t j = 0; j < per; ++j) out[m * per + j] = sums[m * per + j] / float(counts[m]);
    }
    return out;
}

const ImatrixEntry* Imatrix::find(const std::string& name) const {
    auto it = std::lower_bound(entries.begin(), entries.end(), name,
                               [](const ImatrixEntry& e, const std::string& n) { return e.name < n; });
    return it != entries.end() && it->name == name ? &*it : nullptr;
}

ImatrixEntry& Imatrix::entry(const std::string& name, int64_t n_cols, int64_t n_mat) {
    if (n_cols < 1 || n_mat < 1) throw std::invalid_argument("imatrix: " + name + " needs n_cols and n_mat >= 1");
    auto it = std::lower_bound(entries.begin(), entries.end(), name,
                               [](const ImatrixEntry& e, const std::string& n) { return e.name < n; });
    if (it == entries.end() || it->name != name) {
        ImatrixEntry e;
        e.name = name;
        e.n_cols = n_cols;
        e.sums.assign(size_t(n_cols * n_mat), 0.0f);
        e.counts.assign(size_t(n_mat), 0);
        it = entries.insert(it, std::move(e));
    }
    if (it->n_cols != n_cols || it->n_mat() != n_mat)
        throw std::invalid_argument("imatrix: " + name + " is " + std::to_string(it->n_mat()) + " x " +
                                    std::to_string(it->n_cols) + ", not " + std::to_string(n_mat) + " x " +
                                    std::to_string(n_cols));
    return *it;
}

void Imatrix::accumulate(const std::string& name, const float* x, int64_t rows, int64_t n_cols, int64_t mat,
                         int64_t n_mat) {
    ImatrixEntry& e = entry(name, n_cols, n_mat);
    if (mat < 0 || mat >= n_mat) throw std::invalid_argument("imatrix: matrix " + std::to_string(mat) + " of " + name);
    float* acc = e.sums.data() + mat * n_cols;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n_cols; ++j) acc[j] += x[r * n_cols + j] * x[r * n_cols + j];
    e.counts[size_t(mat)] += rows;
}

Imatrix read_imatrix(const std::string& path) {
    if (!std::filesystem::is_regular_file(path)) throw bad(path, "not a regular file");
    return is_gguf(path) ? read_gguf(path) : read_legacy(path);
}

namespace {

void check_sizes(const ImatrixEntry& e) {
    const uint64_t n_mat = e.counts.size();
    if (n_mat == 0 || e.n_cols < 1 || e.sums.size() != n_mat * uint64_t(e.n_cols))
        throw std::invalid_argument("imatrix: entry " + e.name + " has " + std::to_string(e.sums.size()) +
                                    " sums for " + std::to_string(n_mat) + " x " + std::to_string(e.n_cols));
}

// Writes through `write_to(tmp)` and renames tmp over path.
template <class F> void write_atomically(const std::string& path, F write_to) {
    const std::string tmp = path + ".tmp";
    try {
        write_to(tmp);
        std::filesystem::rename(tmp, path);
    } catch (const std::exception& e) {
        std::remove(tmp.c_str());
        throw std::runtime_error("writing imatrix '" + path + "': " + e.what());
    }
}

}  // namespace

void write_imatrix(const Imatrix& m, const std::string& path) {
    gguf::Writer w;
    w.set(kType, gguf::Value::from_string("imatrix"));
    w.set(kDatasets, gguf::Value::from_strings(m.datasets));
    w.set(kChunkCount, gguf::Value::from_u32(uint32_t(std::max(m.chunk_count, 0))));
    w.set(kChunkSize, gguf::Value::from_u32(uint32_t(std::max(m.chunk_size, 0))));
    for (const ImatrixEntry& e : m.entries) {
        check_sizes(e);
        const uint64_t n_mat = e.counts.size();
        std::vector<float> counts(e.counts.begin(), e.counts.end());
        // ggml writes a tensor's dimensions up to its last one above 1, so a plain matrix's sums
        // are [n_cols] and its count [1], as in llama-imatrix's files.
        w.add_tensor_f32(e.name + kSums, n_mat > 1 ? std::vector<uint64_t>{uint64_t(e.n_cols), n_mat}
                                                   : std::vector<uint64_t>{uint64_t(e.n_cols)},
                         e.sums);
        w.add_tensor_f32(e.name + kCounts, n_mat > 1 ? std::vector<uint64_t>{1, n_mat} : std::vector<uint64_t>{1},
                         counts);
    }
    write_atomically(path, [&](const std::string& tmp) { w.write(tmp); });
}

void write_imatrix_dat(const Imatrix& m, const std::string& path) {
    std::vector<const ImatrixEntry*> kept;
    for (const ImatrixEntry& e : m.entries) {
        check_sizes(e);
        if (std::any_of(e.counts.begin(), e.counts.end(), [](int64_t c) { return c > 0; })) kept.push_back(&e);
    }
    const int64_t chunk = std::max(m.chunk_size, 1);
    write_atomically(path, [&](const std::string& tmp) {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot create " + tmp);
        auto put_i32 = [&](int64_t v) {
            const int32_t x = int32_t(v);
            out.write(reinterpret_cast<const char*>(&x), sizeof x);
        };
        put_i32(int64_t(kept.size()));
        for (const ImatrixEntry* e : kept) {
            put_i32(int64_t(e->name.size()));
            out.write(e->name.data(), std::streamsize(e->name.size()));
            // llama-imatrix's ncall: chunks' worth of the most-used matrix's tokens, rounded up.
            const int64_t ncall = (*std::max_element(e->counts.begin(), e->counts.end()) + chunk - 1) / chunk;
            put_i32(ncall);
            put_i32(int64_t(e->sums.size()));
            std::vector<float> values(e->sums.size());
            for (size_t i = 0; i < values.size(); ++i) {
                const int64_t c = e->counts[i / size_t(e->n_cols)];
                values[i] = (c > 0 ? e->sums[i] / float(c) : 1.0f) * float(ncall);
            }
            out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
        }
        put_i32(m.chunk_count);
        const std::string dataset = m.datasets.empty() ? std::string() : m.datasets.back();
        put_i32(int64_t(dataset.size()));
        out.write(dataset.data(), std::streamsize(dataset.size()));
        out.close();
        if (!out) throw std::runtime_error("cannot write " + tmp);
    });
}

}  // namespace vkllm
