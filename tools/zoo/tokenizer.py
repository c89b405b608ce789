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

With --chatml (zoo-chat, corpus_chat.py's conversations) the vocabulary adds the control tokens
<|im_start|> and <|im_end|> (ids 3 and 4; <|im_end|> is EOS and end of turn), carries
corpus_chat.py's ChatML template (tokenizer.chat_template) and puts no space in front of the
text (add_space_prefix false: each piece of text between control tokens is encoded on its own,
as llama.cpp does when it parses special tokens). Encoding then also writes a loss mask, 1 on
the tokens the assistant writes (its turns' text and their closing <|im_end|>).

    tokenizer.py train CORPUS_DIR OUT_VOCAB.gguf [--vocab-size 1024] [--chatml]
    tokenizer.py encode VOCAB.gguf CORPUS_DIR     (writes train.ids / heldout.ids: uint16, <s> story </s> ...;
                                                   for a ChatML vocabulary also train.mask / heldout.mask: uint8)
    tokenizer.py chat VOCAB.gguf MESSAGES.json    (a ChatML vocabulary: for each conversation of the JSON list,
                                                   BOS and the ids of its rendering with the assistant's header,
                                                   comma-separated, one line each: scripts/make-golden-zoo.sh)
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
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
CHATML_SPECIALS = [IM_START, IM_END]  # ids 3 and 4 in a --chatml vocabulary
CONTROL_SPLIT = re.compile("(" + "|".join(re.escape(t) for t in CHATML_SPECIALS) + ")")
# llama.cpp token types
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
PRETOKEN = re.compile(SPACE + "?[A-Za-z]+|" + SPACE + "?[^A-Za-z" + SPACE + "]|" + SPACE)


def normalize(text, space_prefix=True):
    return (SPACE if space_prefix else "") + text.replace(" ", SPACE)


def stories(path):
    with open(path, encoding="ascii") as f:
        return [s for s in f.read().split("\n\n") if s]


def train(corpus_dir, vocab_size, chatml=False):
    counts = collections.Counter()
    for story in stories(os.path.join(corpus_dir, "train.txt")):
        if chatml:  # the text between the control tokens, each piece without a space prefix
            for piece in CONTROL_SPLIT.split(story):
                if piece not in CHATML_SPECIALS:
                    counts.update(PRETOKEN.findall(normalize(piece, False)))
        else:
            counts.update(PRETOKEN.findall(normalize(story)))
    alphabet = sorted({c for word in counts for c in word if c != "\n"})
    specials = SPECIALS + (CHATML_SPECIALS if chatml else [])
    n_merges = vocab_size - len(specials) - 256 - len(alphabet)
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
    tokens = specials + [f"<0x{i:02X}>" for i in range(256)] + alphabet + merges
    scores = [0.0] * (len(tokens) - len(merges)) + [-float(r) for r in range(len(merges))]
    types = [UNKNOWN] + [CONTROL] * (len(specials) - 1) + [BYTE] * 256 + [NORMAL] * (len(alphabet) + len(merges))
    return tokens, scores, types


def vocab_metadata(tokens, scores, types, chatml=False):
    if chatml:
        from corpus_chat import CHAT_TEMPLATE
        end = tokens.index(IM_END)
        return {**vocab_metadata(tokens, scores, types),
                "tokenizer.ggml.eos_token_id": gguf_file.u32(end),
                "tokenizer.ggml.eot_token_id": gguf_file.u32(end),
                "tokenizer.ggml.add_space_prefix": gguf_file.boolean(False),
                "tokenizer.chat_template": gguf_file.string(CHAT_TEMPLATE)}
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

    def __init__(self, tokens, scores, space_prefix=True):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.scores = scores
        self.space_prefix = space_prefix
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
        for word in PRETOKEN.findall(normalize(text, self.space_prefix)):
            ids = self.cache.get(word)
            if ids is None:
                ids = self.cache[word] = self.encode_pretoken(word)
            out += ids
        return out


def encode_chat(encoder, text):
    """A rendered ChatML conversation: its ids (control tokens as themselves, the text between
    them encoded piece by piece) and the loss mask (1 on the assistant's text and on the
    <|im_end|> that closes its turn)."""
    ids, mask, role = [], [], None
    for piece in CONTROL_SPLIT.split(text):
        if piece in CHATML_SPECIALS:
            ids.append(encoder.ids[piece])
            mask.append(1 if piece == IM_END and role == "assistant" else 0)
            role = None
            continue
        if not piece:
            continue
        if ids and ids[-1] == encoder.ids[IM_START]:  # "ROLE\nTEXT": the role is not the assistant's to write
            role, _, content = piece.partition("\n")
            head = encoder.encode(role + "\n")
            body = encoder.encode(content)
            if head + body != encoder.encode(piece):
                raise ValueError(f"the role header and the text do not split at a token boundary: {piece!r}")
            ids += head + body
            mask += [0] * len(head) + [1 if role == "assistant" else 0] * len(body)
        else:
            body = encoder.encode(piece)
            ids += body
            mask += [0] * len(body)
    return ids, mask


def encode_corpus(vocab_path, corpus_dir):
    metadata, _ = gguf_file.read(vocab_path)
    tokens = metadata["tokenizer.ggml.tokens"].value
    chatml = IM_START in tokens
    encoder = Encoder(tokens, metadata["tokenizer.ggml.scores"].value,
                      metadata["tokenizer.ggml.add_space_prefix"].value)
    for split in ("train", "heldout"):
        ids, mask = [], []
        for story in stories(os.path.join(corpus_dir, split + ".txt")):
            if chatml:
                conv_ids, conv_mask = encode_chat(encoder, story)
                ids += [BOS] + conv_ids + [EOS]
                mask += [0] + conv_mask + [0]
            else:
                ids += [BOS] + encoder.encode(story) + [EOS]
        np.asarray(ids, np.uint16).tofile(os.path.join(corpus_dir, split + ".ids"))
        if chatml:
            np.asarray(mask, np.uint8).tofile(os.path.join(corpus_dir, split + ".mask"))
        print(f"{split}: {len(ids)} tokens" + (f", {sum(mask)} of them the assistant's" if chatml else ""))


def chat_prompt_ids(vocab_path, messages_path):
    import json

    from corpus_chat import render
    metadata, _ = gguf_file.read(vocab_path)
    tokens = metadata["tokenizer.ggml.tokens"].value
    if IM_START not in tokens:
        raise SystemExit(f"{vocab_path}: not a ChatML vocabulary (no {IM_START})")
    encoder = Encoder(tokens, metadata["tokenizer.ggml.scores"].value, metadata["tokenizer.ggml.add_space_prefix"].value)
    with open(messages_path, encoding="utf-8") as f:
        conversations = json.load(f)
    return [[BOS] + encode_chat(encoder, render(c, add_generation_prompt=True))[0] for c in conversations]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus_dir")
    t.add_argument("out")
    t.add_argument("--vocab-size", type=int, default=1024)
    t.add_argument("--chatml", action="store_true", help="ChatML control tokens and template (see above)")
    e = sub.add_parser("encode")
    e.add_argument("vocab")
    e.add_argument("corpus_dir")
    c = sub.add_parser("chat")
    c.add_argument("vocab")
    c.add_argument("messages")
    args = ap.parse_args()
    if args.command == "train":
        tokens, scores, types = train(args.corpus_dir, args.vocab_size, args.chatml)
        gguf_file.write(args.out, {"general.architecture": gguf_file.string("llama"),
                                   "general.name": gguf_file.string("zoo-chat-vocab" if args.chatml else "zoo-vocab"),
                                   **vocab_metadata(tokens, scores, types, args.chatml)}, {})
        print(f"{len(tokens)} tokens; last merges: {tokens[-5:]}")
    elif args.command == "chat":
        for ids in chat_prompt_ids(args.vocab, args.messages):
            print(",".join(map(str, ids)))
    else:
        encode_corpus(args.vocab, args.corpus_dir)


if __name__ == "__main__":
    main()
