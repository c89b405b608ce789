#!/usr/bin/env python3
"""zoo-bert's WordPiece vocabulary: trained on the zoo corpus, stored as llama.cpp stores a BERT
vocabulary, and a Python encoder that splits text exactly as vkllm's and llama.cpp's WordPiece
tokenizers do (engine/tokenizer/wordpiece.cpp).

    wordpiece.py train CORPUS_DIR VOCAB.gguf [--size 1024]
    wordpiece.py encode VOCAB.gguf CORPUS_DIR        (writes CORPUS_DIR/{train,heldout}.wp.ids)

Words: the text lower-cased, split at white space, every punctuation mark or ASCII symbol a word
of its own (BERT's basic tokenizer; the corpus is ASCII, so no accents or CJK). Pieces: as
llama.cpp's converter writes them, a word-initial piece is "\u2581piece" and a continuation
("##piece" in Hugging Face's vocab.txt) is plain "piece"; a word is encoded greedily, longest
vocabulary piece first, and becomes [UNK] if some position matches nothing.

Training: the five special tokens, every character of the corpus as a word start and as a
continuation, then merges of the most frequent adjacent pair of pieces inside words (counted
over the word frequencies; ties to the smaller pair text) until the vocabulary has `size`
entries. The merged pieces are the vocabulary; greedy longest match, not the merge order, encodes.
"""
import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_file  # noqa: E402

WORD_START = "\u2581"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
NORMAL, CONTROL = 1, 3  # llama.cpp's token types


def words(text):
    """BERT's basic tokenization of ASCII text (lower case; punctuation and symbols alone)."""
    out, word = [], []
    for ch in text.lower():
        if ch.isspace():
            if word:
                out.append("".join(word))
                word = []
        elif ch.isascii() and not ch.isalnum():
            if word:
                out.append("".join(word))
                word = []
            out.append(ch)
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


def train(text, size):
    """The vocabulary (a list of piece strings, the specials first) for `text`."""
    counts = collections.Counter(words(text))
    # Each word as a tuple of pieces: its first character carries the word-start mark.
    split = {w: [WORD_START + w[0]] + list(w[1:]) for w in counts}
    vocab = list(SPECIALS)
    chars = sorted({c for w in counts for c in w})
    vocab += [WORD_START + c for c in chars] + chars
    known = set(vocab)
    pairs = collections.Counter()              # adjacent pair -> its count over the corpus
    where = collections.defaultdict(set)       # adjacent pair -> the words that have it
    for w, pieces in split.items():
        for pair in zip(pieces, pieces[1:]):
            pairs[pair] += counts[w]
            where[pair].add(w)
    while len(vocab) < size and pairs:
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0][0] + kv[0][1]))
        merged = a + b
        for w in list(where[a, b]):
            pieces = split[w]
            for pair in zip(pieces, pieces[1:]):  # take the word's old pairs out ...
                pairs[pair] -= counts[w]
                if pairs[pair] <= 0:
                    del pairs[pair]
                where[pair].discard(w)
            i, out = 0, []
            while i < len(pieces):
                if i + 1 < len(pieces) and pieces[i] == a and pieces[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(pieces[i])
                    i += 1
            split[w] = out
            for pair in zip(out, out[1:]):  # ... and its new ones in
                pairs[pair] += counts[w]
                where[pair].add(w)
        if merged not in known:
            known.add(merged)
            vocab.append(merged)
    return vocab


class Encoder:
    def __init__(self, tokens):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.longest = max(len(t) for t in tokens)

    def encode_word(self, word):
        text, out, i = WORD_START + word, [], 0
        while i < len(text):
            for j in range(min(len(text), i + self.longest), i, -1):
                if text[i:j] in self.ids:
                    out.append(self.ids[text[i:j]])
                    i = j
                    break
            else:
                return [UNK]
        return out

    def encode(self, text, specials=True):
        """Ids of `text`, with [CLS] in front and [SEP] behind when `specials` (as vkllm adds them)."""
        out = [CLS] if specials else []
        cache = {}
        for w in words(text):
            if w not in cache:
                cache[w] = self.encode_word(w)
            out += cache[w]
        return out + [SEP] if specials else out


def vocab_metadata(tokens):
    """The tokenizer.* metadata of a BERT vocabulary, as llama.cpp's converter writes it (the
    [CLS] id also as the BOS id, which is what llama.cpp and vkllm add in front)."""
    types = [CONTROL if t in SPECIALS else NORMAL for t in tokens]
    return {
        "tokenizer.ggml.model": gguf_file.string("bert"),
        "tokenizer.ggml.tokens": gguf_file.array(gguf_file.STRING, tokens),
        "tokenizer.ggml.token_type": gguf_file.array(gguf_file.INT32, types),
        "tokenizer.ggml.token_type_count": gguf_file.u32(2),
        "tokenizer.ggml.bos_token_id": gguf_file.u32(CLS),
        "tokenizer.ggml.cls_token_id": gguf_file.u32(CLS),
        "tokenizer.ggml.unknown_token_id": gguf_file.u32(UNK),
        "tokenizer.ggml.seperator_token_id": gguf_file.u32(SEP),  # llama.cpp's spelling
        "tokenizer.ggml.padding_token_id": gguf_file.u32(PAD),
        "tokenizer.ggml.mask_token_id": gguf_file.u32(MASK),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus")
    t.add_argument("vocab")
    t.add_argument("--size", type=int, default=1024)
    e = sub.add_parser("encode")
    e.add_argument("vocab")
    e.add_argument("corpus")
    args = ap.parse_args()
    if args.command == "train":
        with open(os.path.join(args.corpus, "train.txt"), encoding="ascii") as f:
            tokens = train(f.read(), args.size)
        meta = {"general.architecture": gguf_file.string("bert"), "general.name": gguf_file.string("zoo-wordpiece")}
        meta.update(vocab_metadata(tokens))
        gguf_file.write(args.vocab, meta, {})
        print(f"wordpiece: {len(tokens)} tokens -> {args.vocab}")
    else:
        meta, _ = gguf_file.read(args.vocab)
        enc = Encoder(meta["tokenizer.ggml.tokens"].value)
        for split in ("train", "heldout"):
            with open(os.path.join(args.corpus, split + ".txt"), encoding="ascii") as f:
                ids = enc.encode(f.read(), specials=False)
            np.asarray(ids, np.uint16).tofile(os.path.join(args.corpus, split + ".wp.ids"))
            print(f"wordpiece: {split}: {len(ids)} tokens")


if __name__ == "__main__":
    main()
