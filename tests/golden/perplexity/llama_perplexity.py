#!/usr/bin/python3
"""llama-perplexity's number from llama.cpp's own logits (../shared/tools/llama-oracle).

usage: llama_perplexity.py MODEL.gguf TEXT N_CTX OUT.json   (with $ORACLE_HOME/env.sh sourced)

The text is read as llama.cpp's `-f` reads it (common/arg.cpp: the file's bytes as they are, then
one final newline removed). llama.cpp tokenizes the text (llama-logits on the whole text, BOS as the vocabulary says, 0
generated tokens: its PREFIX.tokens.txt), then, as tools/perplexity does: chunks of N_CTX tokens
(floor(n / N_CTX) of them), each run alone (ids:..., no BOS added by the driver) with its first
token replaced by BOS when the vocabulary adds BOS; the logits at positions N_CTX/2 .. N_CTX-2
score the next token; perplexity = exp(mean negative log-likelihood). Needs /usr/bin/python3
with numpy, and gguf-py on PYTHONPATH (env.sh sets it) to read add_bos_token.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader


def field(reader, key):
    f = reader.fields.get(key)
    return None if f is None else f.parts[f.data[0]][0]


def main():
    model, text_path, n_ctx, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    home = os.environ["ORACLE_HOME"]
    logits_bin = os.path.join(home, "llama-logits")
    reader = GGUFReader(model)
    add_bos = bool(field(reader, "tokenizer.ggml.add_bos_token")) if field(reader, "tokenizer.ggml.add_bos_token") is not None else True
    bos = int(field(reader, "tokenizer.ggml.bos_token_id"))
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    text = open(text_path, encoding="utf-8", newline="").read()  # no newline translation
    if text.endswith("\n"):
        text = text[:-1]
    env = dict(os.environ, NO_FA="1", KV_F32="1")
    with tempfile.TemporaryDirectory() as tmp:
        env["N_CTX"] = str(max(512, 4 * len(text)))
        subprocess.run([logits_bin, model, "none", text, "0", f"{tmp}/all", "2"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tokens = [int(t) for t in open(f"{tmp}/all.tokens.txt").read().split()]
        n_chunk = len(tokens) // n_ctx
        assert len(tokens) >= 2 * n_ctx, f"{len(tokens)} tokens: too few for n_ctx {n_ctx}"
        first = n_ctx // 2
        nll, count, running = 0.0, 0, []
        env["N_CTX"] = str(n_ctx)
        for c in range(n_chunk):
            chunk = tokens[c * n_ctx:(c + 1) * n_ctx]
            if add_bos:
                chunk[0] = bos
            ids = "ids:" + ",".join(map(str, chunk))
            subprocess.run([logits_bin, model, "none", ids, "0", f"{tmp}/c", "2"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            logits = np.fromfile(f"{tmp}/c.logits.f32", dtype=np.float32).reshape(n_ctx, n_vocab).astype(np.float64)
            for i in range(first, n_ctx - 1):
                row = logits[i]
                m = row.max()
                lp = row[chunk[i + 1]] - m - np.log(np.exp(row - m).sum())
                nll -= lp
                count += 1
            running.append(float(np.exp(nll / count)))
    result = {"model": os.path.basename(model), "text": os.path.basename(text_path), "n_ctx": n_ctx,
              "tokens": len(tokens), "chunks": n_chunk, "scored_tokens": count,
              "perplexity": float(np.exp(nll / count)), "chunk_perplexity": running,
              "oracle": "llama.cpp (node-llama-cpp 3.22.1) CPU, NO_FA=1 KV_F32=1"}
    json.dump(result, open(out, "w"), indent=2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
