// llama-imatrix-lite: llama.cpp's importance-matrix collection, as llama-imatrix does it, against
// the oracle's libllama (tools/imatrix_oracle/build.sh builds it; not part of vkllm's build).
//   llama-imatrix-lite MODEL.gguf TEXT.txt OUT.gguf [CHUNK=512] [CHUNKS=all] [THREADS=2]
// The text is tokenized with BOS, cut into chunks of CHUNK tokens (each chunk's first token
// replaced by BOS), and every chunk evaluated from an empty cache; for each matrix product whose
// weight is a layer's (`blk.*`) and whose input has 16 rows or more, the input's x_j^2 are summed
// per column (per expert for MUL_MAT_ID, over the tokens routed to it), as llama-imatrix's
// collect_imatrix does. The perplexity over the second half of each chunk is printed. The file
// is llama.cpp's GGUF imatrix (general.type imatrix, imatrix.datasets / chunk_count /
// chunk_size, <name>.in_sum2 and <name>.counts).
#include "ggml.h"
#include "ggml-backend.h"
#include "gguf.h"
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Stats {
    std::vector<double> sums;
    std::vector<int64_t> counts;
};
std::map<std::string, Stats> g_stats;
std::vector<char> g_buf;

// "CPU#blk.0.attn_q.weight#0" -> "blk.0.attn_q.weight"
std::string weight_name(const char* name) {
    std::string s = name;
    const size_t a = s.find('#');
    if (a == std::string::npos) return s;
    const size_t b = s.find('#', a + 1);
    return s.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
}

const char* host_data(const ggml_tensor* t, std::vector<char>& buf) {
    if (ggml_backend_buffer_is_host(t->buffer)) return static_cast<const char*>(t->data);
    buf.resize(ggml_nbytes(t));
    ggml_backend_tensor_get(t, buf.data(), 0, buf.size());
    return buf.data();
}

bool collect(ggml_tensor* t, bool ask, void*) {
    const ggml_tensor* src0 = t->src[0];
    const ggml_tensor* src1 = t->src[1];
    if (ask) {
        if (t->op == GGML_OP_MUL_MAT_ID) return true;
        if (t->op != GGML_OP_MUL_MAT) return false;
        if (src1->ne[1] < 16 || src1->type != GGML_TYPE_F32) return false;
        return weight_name(src0->name).rfind("blk.", 0) == 0;
    }
    const std::string name = weight_name(src0->name);
    const char* data = host_data(src1, g_buf);
    Stats& e = g_stats[name];
    const int64_t ne0 = src1->ne[0];
    if (t->op == GGML_OP_MUL_MAT_ID) {
        const ggml_tensor* ids = t->src[2];
        const int64_t n_as = src0->ne[2];
        std::vector<char> id_buf(ggml_nbytes(ids));
        ggml_backend_tensor_get(ids, id_buf.data(), 0, id_buf.size());
        if (e.sums.empty()) {
            e.sums.assign(size_t(ne0 * n_as), 0.0);
            e.counts.assign(size_t(n_as), 0);
        }
        for (int64_t idx = 0; idx < ids->ne[0]; ++idx)
            for (int64_t row = 0; row < src1->ne[2]; ++row) {
                const int32_t ex = *reinterpret_cast<const int32_t*>(id_buf.data() + row * ids->nb[1] + idx * ids->nb[0]);
                const float* x = reinterpret_cast<const float*>(data + (idx % src1->ne[1]) * src1->nb[1] + row * src1->nb[2]);
                e.counts[size_t(ex)]++;
                for (int64_t j = 0; j < ne0; ++j) e.sums[size_t(ex * ne0 + j)] += double(x[j]) * double(x[j]);
            }
        return true;
    }
    const int64_t n_mat = src0->ne[2] * src0->ne[3];
    if (e.sums.empty()) {
        e.sums.assign(size_t(ne0 * n_mat), 0.0);
        e.counts.assign(size_t(n_mat), 0);
    }
    for (int64_t i3 = 0; i3 < src1->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < src1->ne[2]; ++i2) {
            const int64_t mat = (i3 % src0->ne[3]) * src0->ne[2] + (i2 % src0->ne[2]);
            for (int64_t row = 0; row < src1->ne[1]; ++row) {
                const float* x = reinterpret_cast<const float*>(data + row * src1->nb[1] + i2 * src1->nb[2] + i3 * src1->nb[3]);
                for (int64_t j = 0; j < ne0; ++j) e.sums[size_t(mat * ne0 + j)] += double(x[j]) * double(x[j]);
            }
        }
    for (int64_t& c : e.counts) c += ggml_nrows(src1) / n_mat;
    return true;
}

void save(const std::string& path, const std::string& dataset, int chunks, int chunk) {
    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.type", "imatrix");
    const char* ds[1] = {dataset.c_str()};
    gguf_set_arr_str(g, "imatrix.datasets", ds, 1);
    gguf_set_val_u32(g, "imatrix.chunk_count", uint32_t(chunks));
    gguf_set_val_u32(g, "imatrix.chunk_size", uint32_t(chunk));
    size_t bytes = 0;
    for (const auto& [name, s] : g_stats) bytes += 2 * ggml_tensor_overhead() + (s.sums.size() + s.counts.size()) * 4 + 64;
    ggml_init_params ip = {bytes + 1024, nullptr, false};
    ggml_context* ctx = ggml_init(ip);
    for (const auto& [name, s] : g_stats) {
        const int64_t n_mat = int64_t(s.counts.size());
        ggml_tensor* sums = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, int64_t(s.sums.size()) / n_mat, n_mat);
        ggml_tensor* counts = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, n_mat);
        ggml_format_name(sums, "%s.in_sum2", name.c_str());
        ggml_format_name(counts, "%s.counts", name.c_str());
        for (size_t j = 0; j < s.sums.size(); ++j) static_cast<float*>(sums->data)[j] = float(s.sums[j]);
        for (size_t j = 0; j < s.counts.size(); ++j) static_cast<float*>(counts->data)[j] = float(s.counts[j]);
        gguf_add_tensor(g, sums);
        gguf_add_tensor(g, counts);
    }
    gguf_write_to_file(g, path.c_str(), false);
    gguf_free(g);
    ggml_free(ctx);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf TEXT.txt OUT.gguf [CHUNK=512] [CHUNKS=all] [THREADS=2]\n", argv[0]);
        return 2;
    }
    const int chunk = argc > 4 ? atoi(argv[4]) : 512;
    const int max_chunks = argc > 5 ? atoi(argv[5]) : -1;
    const int threads = argc > 6 ? atoi(argv[6]) : 2;
    llama_log_set([](ggml_log_level lvl, const char* txt, void*) { if (lvl >= GGML_LOG_LEVEL_WARN) fputs(txt, stderr); }, nullptr);
    if (getenv("GGML_BACKEND_DIR")) ggml_backend_load_all_from_path(getenv("GGML_BACKEND_DIR"));
    else ggml_backend_load_all();
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    ggml_backend_dev_t devs[1] = {nullptr};
    mp.devices = devs;  // CPU only
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const llama_vocab* vocab = llama_model_get_vocab(model);
    std::ifstream f(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f
    std::vector<llama_token> toks(text.size() + 8);
    const int n = llama_tokenize(vocab, text.c_str(), int(text.size()), toks.data(), int(toks.size()), true, false);
    if (n < 0) return 1;
    toks.resize(size_t(n));
    int n_chunks = n / chunk;
    if (max_chunks > 0 && max_chunks < n_chunks) n_chunks = max_chunks;
    if (n_chunks < 1) {
        fprintf(stderr, "%d tokens: not one chunk of %d\n", n, chunk);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(chunk);
    cp.n_batch = cp.n_ubatch = uint32_t(chunk);
    cp.n_threads = cp.n_threads_batch = threads;
    cp.cb_eval = collect;
    cp.cb_eval_user_data = nullptr;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    const int n_vocab = llama_vocab_n_tokens(vocab);
    double nll = 0;
    int count = 0;
    llama_batch batch = llama_batch_init(chunk, 0, 1);
    for (int c = 0; c < n_chunks; ++c) {
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = 0;
        for (int k = 0; k < chunk; ++k) {
            const int i = batch.n_tokens++;
            batch.token[i] = k == 0 && llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : toks[size_t(c * chunk + k)];
            batch.pos[i] = k;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        if (llama_decode(ctx, batch)) return 1;
        const float* logits = llama_get_logits(ctx);
        for (int k = chunk / 2; k < chunk - 1; ++k) {
            const float* l = logits + size_t(k) * size_t(n_vocab);
            double mx = l[0], sum = 0;
            for (int v = 1; v < n_vocab; ++v) mx = std::max(mx, double(l[v]));
            for (int v = 0; v < n_vocab; ++v) sum += std::exp(double(l[v]) - mx);
            nll += std::log(sum) + mx - double(l[toks[size_t(c * chunk + k + 1)]]);
            ++count;
        }
        printf("[%d]%.4f ", c + 1, std::exp(nll / count));
        fflush(stdout);
    }
    printf("\nFinal estimate: PPL = %.4f\n", std::exp(nll / count));
    save(argv[3], argv[2], n_chunks, chunk);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
