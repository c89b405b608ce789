#!/usr/bin/env bash
# Token ids from llama.cpp for tokenizer cases: builds a small driver against the llama-oracle's
# libllama (../shared/tools/llama-oracle/setup.sh), loads a vocab-only GGUF and tokenizes each
# case of a llama.cpp-style .inp file (cases separated by "\n__ggml_vocab_test__\n"; no BOS/EOS,
# special-token text not parsed), one line of ids per case, as llama.cpp's .out files.
#
# Made tests/tokenizer/golden/nomic-bert-moe.{inp,out}: llama.cpp ships the Unigram vocabulary
# models/ggml-vocab-nomic-bert-moe.gguf without cases, so its cases are a copy of llama-spm's .inp:
#   scripts/make-golden-unigram.sh $home/src/models/ggml-vocab-nomic-bert-moe.gguf \
#       $home/src/models/ggml-vocab-llama-spm.gguf.inp > tests/tokenizer/golden/nomic-bert-moe.out
# On llama.cpp's other fixtures the driver gives the ids of their own .out files.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 VOCAB.gguf CASES.inp > CASES.out" >&2; exit 2; }
home=${ORACLE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/llama-oracle}
[[ -d $home/src/include ]] || home=$("$(dirname "$0")/../../shared/tools/llama-oracle/setup.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/tokenize_cases.cpp" <<'CPP'
#include <llama.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
static void quiet(ggml_log_level, const char*, void*) {}
int main(int, char** argv) {
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string inp = ss.str(), sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) { texts.push_back(inp.substr(pos)); break; }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    for (const std::string& t : texts) {
        std::vector<llama_token> ids(t.size() * 4 + 16);
        const int n = llama_tokenize(vocab, t.data(), int(t.size()), ids.data(), int(ids.size()), false, false);
        if (n < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
        for (int i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    }
    llama_model_free(model);
    return 0;
}
CPP
libdir=$(readlink -f "$home/lib/libllama.so" | xargs dirname)
g++ -O2 -std=c++17 "$work/tokenize_cases.cpp" -I"$home/src/include" -I"$home/src/ggml/include" -L"$home/lib" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$libdir" -o "$work/tokenize_cases"
"$work/tokenize_cases" "$1" "$2"
