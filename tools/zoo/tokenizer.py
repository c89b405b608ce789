#!/usr/bin/env python3
"""The zoo's tokenizer: SentencePiece-style BPE trained on the corpus, stored in GGUF the way
llama.cpp reads a Llama vocabulary (tokenizer.ggml.model "llama").

How llama.cpp tokenizes such a vocabulary (and so how vkllm does, and how this script encodes
the training data): spaces become U+2581 "▁" and one is put in front of the text; the text is
split into characters; then, repeatedly, the adjacent pair whose concatenation is a token with the
highest score is merged (ties: the leftmost); a character that is no token is written as its
UTF-8 byte tokens <0xXX>.

Training is plain BPE over "pre-tokens": a run of letters, or one other character, each with the
"▁" before it attached. A merge never crosses a pre-token boundary, and whether two neighbouring
characters are in one pre-token depends only on those two characters, so no token can span a
boundary at inference either: encoding pre-token by pre-token (cached) gives exactly llama.cpp's
result. Merge number r becomes a token of score -r, so llama.cpp applies merges in training order.
Newlines are left to the byte tokens, as in Llama's own vocabulary.

    tokenizer.py train CORPUS_DIR OUT_VOCAB.gguf [--vocab-size 1024]
    tokenizer.py encode VOCAB.gguf CORPUS_DIR     (writes train.ids / heldout.ids: uint16, <s> story </s> ...)
"""
import argparse
import collections
import os
import re

import numpy as np

import gguf_file

SPACE = "\u2581"
SPECIALS = ["<unk>", "<s>", "</s>"]
UNK, BOS, EOS = 0, 1, 2
# llama.cpp token types
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
PRETOKEN = re.compile(SPACE + "?[A-Za-z]+|" + SPACE + "?[^A-Za-z" + SPACE + "]|" + SPACE)


def normalize(text):
    return SPACE + text.replace(" ", SPACE)


def stories(path):
    with open(path, encoding="ascii") as f:
        return [s for s in f.read().split("\n\n") if s]


def train(corpus_dir, vocab_size):
    counts = collections.Counter()
    for story in stories(os.path.join(corpus_dir, "train.txt")):
        counts.update(PRETOKEN.findall(normalize(story)))
    alphabet = sorted({c for word in counts for c in word if c != "\n"})
    n_merges = vocab_size - len(SPECIALS) - 256 - len(alphabet)
    words = [(list(w), n) for w, n in counts.items() if "\n" not in w]
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for symbols, n in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        # the most frequent pair; ties broken by the pair's text so the result is deterministic
        (a, b), _ = max(pairs.items(), key=lambda item: (item[1], item[0]))
        merges.append(a + b)
        for symbols, _ in words:
            i = 0
            while i < len(symbols) - 1:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                i += 1
    tokens = SPECIALS + [f"<0x{i:02X}>" for i in range(256)] + alphabet + merges
    scores = [0.0] * (len(tokens) - len(merges)) + [-float(r) for r in range(len(merges))]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256 + [NORMAL] * (len(alphabet) + len(merges))
    return tokens, scores, types


def vocab_metadata(tokens, scores, types):
    return {
        "tokenizer.ggml.model": gguf_file.string("llama"),
        "tokenizer.ggml.tokens": gguf_file.array(gguf_file.STRING, tokens),
        "tokenizer.ggml.scores": gguf_file.array(gguf_file.FLOAT32, scores),
        "tokenizer.ggml.token_type": gguf_file.array(gguf_file.INT32, types),
        "tokenizer.ggml.bos_token_id": gguf_file.u32(BOS),
        "tokenizer.ggml.eos_token_id": gguf_file.u32(EOS),
        "tokenizer.ggml.unknown_token_id": gguf_file.u32(UNK),
        "tokenizer.ggml.add_bos_token": gguf_file.boolean(True),
        "tokenizer.ggml.add_eos_token": gguf_file.boolean(False),
        "tokenizer.ggml.add_space_prefix": gguf_file.boolean(True),
    }


class Encoder:
    """llama.cpp's SentencePiece encoding for this vocabulary (see the module comment)."""

    def __init__(self, tokens, scores):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.scores = scores
        self.cache = {}

    def encode_pretoken(self, word):
        symbols = list(word)
        while True:
            best = None
            for i in range(len(symbols) - 1):
                t = self.ids.get(symbols[i] + symbols[i + 1])
                if t is not None and (best is None or self.scores[t] > self.scores[best[1]]):
                    best = (i, t)
            if best is None:
                break
            i = best[0]
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        out = []
        for s in symbols:
            if s in self.ids:
                out.append(self.ids[s])
            else:
                out += [self.ids[f"<0x{b:02X}>"] for b in s.encode("utf-8")]
        return out

    def encode(self, text):
        out = []
        for word in PRETOKEN.findall(normalize(text)):
            ids = self.cache.get(word)
            if ids is None:
                ids = self.cache[word] = self.encode_pretoken(word)
            out += ids
        return out


def encode_corpus(vocab_path, corpus_dir):
    metadata, _ = gguf_file.read(vocab_path)
    encoder = Encoder(metadata["tokenizer.ggml.tokens"].value, metadata["tokenizer.ggml.scores"].value)
    for split in ("train", "heldout"):
        ids = []
        for story in stories(os.path.join(corpus_dir, split + ".txt")):
            ids += [BOS] + encoder.encode(story) + [EOS]
        np.asarray(ids, np.uint16).tofile(os.path.join(corpus_dir, split + ".ids"))
        print(f"{split}: {len(ids)} tokens")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus_dir")
    t.add_argument("out")
    t.add_argument("--vocab-size", type=int, default=1024)
    e = sub.add_parser("encode")
    e.add_argument("vocab")
    e.add_argument("corpus_dir")
    args = ap.parse_args()
    if args.command == "train":
        tokens, scores, types = train(args.corpus_dir, args.vocab_size)
        gguf_file.write(args.out, {"general.architecture": gguf_file.string("llama"),
                                   "general.name": gguf_file.string("zoo-vocab"),
                                   **vocab_metadata(tokens, scores, types)}, {})
        print(f"{len(tokens)} tokens; last merges: {tokens[-5:]}")
    else:
        encode_corpus(args.vocab, args.corpus_dir)


if __name__ == "__main__":
    main()
