// llama-quantize-imatrix: llama.cpp's llama_model_quantize with an importance matrix read from a
// GGUF imatrix file (llama.cpp's or vkllm's), normalised as llama-quantize's load_imatrix does
// (each expert's sums divided by its count; ones where the count is 0).
//   llama-quantize-imatrix IN.gguf OUT.gguf FTYPE IMATRIX.gguf [THREADS]
// FTYPE: Q4_K_M Q3_K_S IQ2_XXS ... (llama-quantize's names; tools/imatrix_oracle/build.sh).
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

static const std::map<std::string, llama_ftype> k_ftypes = {
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},       {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},       {"Q2_K_S", LLAMA_FTYPE_MOSTLY_Q2_K_S},
    {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S},   {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},   {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
    {"IQ1_S", LLAMA_FTYPE_MOSTLY_IQ1_S},     {"IQ1_M", LLAMA_FTYPE_MOSTLY_IQ1_M},
    {"IQ2_XXS", LLAMA_FTYPE_MOSTLY_IQ2_XXS}, {"IQ2_XS", LLAMA_FTYPE_MOSTLY_IQ2_XS},
    {"IQ2_S", LLAMA_FTYPE_MOSTLY_IQ2_S},     {"IQ2_M", LLAMA_FTYPE_MOSTLY_IQ2_M},
    {"IQ3_XXS", LLAMA_FTYPE_MOSTLY_IQ3_XXS}, {"IQ3_S", LLAMA_FTYPE_MOSTLY_IQ3_S},
    {"IQ3_M", LLAMA_FTYPE_MOSTLY_IQ3_M},     {"IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL},
    {"IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS},
};

int main(int argc, char** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s IN.gguf OUT.gguf FTYPE IMATRIX.gguf [THREADS]\n", argv[0]);
        return 2;
    }
    const auto it = k_ftypes.find(argv[3]);
    if (it == k_ftypes.end()) {
        fprintf(stderr, "unknown ftype %s\n", argv[3]);
        return 2;
    }
    ggml_context* data = nullptr;
    gguf_init_params gp = {false, &data};
    gguf_context* g = gguf_init_from_file(argv[4], gp);
    if (!g) {
        fprintf(stderr, "cannot read the imatrix %s\n", argv[4]);
        return 1;
    }
    std::map<std::string, std::vector<float>> values;
    for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
        std::string name = gguf_get_tensor_name(g, i);
        const std::string suffix = ".in_sum2";
        if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
        const std::string w = name.substr(0, name.size() - suffix.size());
        const ggml_tensor* sums = ggml_get_tensor(data, name.c_str());
        const ggml_tensor* counts = ggml_get_tensor(data, (w + ".counts").c_str());
        if (!sums || !counts) {
            fprintf(stderr, "%s: sums without counts\n", w.c_str());
            return 1;
        }
        const int64_t n_mat = ggml_nelements(counts), per = ggml_nelements(sums) / n_mat;
        std::vector<float>& v = values[w];
        v.resize(size_t(ggml_nelements(sums)));
        for (int64_t m = 0; m < n_mat; ++m) {
            const float c = static_cast<const float*>(counts->data)[m];
            for (int64_t j = 0; j < per; ++j)
                v[size_t(m * per + j)] = c > 0 ? static_cast<const float*>(sums->data)[m * per + j] / c : 1.0f;
        }
    }
    std::vector<llama_model_imatrix_data> imatrix;
    for (const auto& [name, v] : values) imatrix.push_back({name.c_str(), v.data(), v.size()});
    imatrix.push_back({nullptr, nullptr, 0});
    llama_backend_init();
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = it->second;
    p.nthread = argc > 5 ? atoi(argv[5]) : 0;
    p.imatrix = imatrix.data();
    const uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    llama_backend_free();
    gguf_free(g);
    ggml_free(data);
    if (rc != 0) {
        fprintf(stderr, "llama_model_quantize failed (%u)\n", rc);
        return 1;
    }
    return 0;
}
