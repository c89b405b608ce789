#!/usr/bin/env python3
"""The zoo's Python tools (tools/zoo) without training: the corpus generators are deterministic and
well-formed, the tokenizer's Python encoder (which encoded the training data) agrees with vkllm's
tokenizer on the committed models' vocabularies (zoo-chat's with its control tokens, and its
conversations rendered as vkllm renders the file's template), and the GGUF reader/writer
reproduces files byte for byte. Run by CTest with Debian's python3 and python3-numpy (scripts/install-deps.sh);
PyTorch is not needed."""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.environ.get("VKLLM_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "zoo"))
import corpus  # noqa: E402
import corpus_chat  # noqa: E402
import gguf_file  # noqa: E402
import tokenizer  # noqa: E402
import wordpiece  # noqa: E402

VKLLM = os.environ.get("VKLLM_BIN", os.path.join(ROOT, "build", "bin", "vkllm"))
SHARED = os.environ.get("VKLLM_SHARED_DIR", os.path.join(ROOT, "..", "shared"))


def generated(seed, megabytes=0.05):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "split.txt")
        corpus.write_split(path, seed, megabytes)
        return open(path, "rb").read()


class Corpus(unittest.TestCase):
    def test_same_seed_same_bytes_other_seed_other_text(self):
        a, b, c = generated(7), generated(7), generated(8)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertGreater(len(a), 50_000)

    def test_stories_are_paragraphs_with_balanced_brackets_and_quotes(self):
        stories = [s for s in generated(3, 0.2).decode("ascii").split("\n\n") if s]
        self.assertGreater(len(stories), 100)
        pairs = {")": "(", "]": "[", "}": "{"}
        games = 0
        for s in stories:
            self.assertEqual(s.count('"') % 2, 0, s)
            stack = []
            for ch in s:
                if ch in "([{":
                    stack.append(ch)
                elif ch in pairs:
                    self.assertTrue(stack and stack.pop() == pairs[ch], s)
            self.assertEqual(stack, [], s)
            games += "played the bracket game" in s
        self.assertGreater(games, 10)


class Tokenizer(unittest.TestCase):
    def test_python_encoder_matches_vkllm_on_the_zoo_vocabulary(self):
        model = os.path.join(ROOT, "assets", "zoo", "zoo-dense.gguf")
        meta, _ = gguf_file.read(model)
        self.assertEqual(meta["tokenizer.ggml.model"].value, "llama")
        encoder = tokenizer.Encoder(meta["tokenizer.ggml.tokens"].value, meta["tokenizer.ggml.scores"].value)
        stories = [s for s in generated(11, 0.02).decode("ascii").split("\n\n") if s][:12]
        stories.append("Unseen words: zebra quokka, and symbols # % & ~ \u00e9!")  # byte fallback
        for s in stories:
            out = subprocess.run([VKLLM, "tokenize", "-m", model, "-p", s], capture_output=True, text=True, check=True)
            self.assertEqual([int(t) for t in out.stdout.split()], encoder.encode(s), s)

    def test_training_gives_merges_in_frequency_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "train.txt"), "w") as f:
                f.write("ab ab ab abc\n\nab abc\n\n")
            # pairs: (▁,a) 6, (a,b) 6, (b,c) 2; the tie goes to the larger pair text, "▁" > "a"
            tokens, scores, types = tokenizer.train(tmp, 3 + 256 + 4 + 3)
            self.assertEqual(tokens[3 + 256:3 + 256 + 4], ["a", "b", "c", tokenizer.SPACE])
            self.assertEqual(tokens[-3:], [tokenizer.SPACE + "a", tokenizer.SPACE + "ab", tokenizer.SPACE + "abc"])
            self.assertEqual(scores[-3:], [0.0, -1.0, -2.0])
            self.assertEqual(types[:4], [tokenizer.UNKNOWN, tokenizer.CONTROL, tokenizer.CONTROL, tokenizer.BYTE])
            self.assertEqual(len(tokens), 266)


def conversations(seed, megabytes=0.02):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "split.txt")
        corpus_chat.write_split(path, seed, megabytes)
        return [c for c in open(path, encoding="ascii").read().split("\n\n") if c]


class ChatCorpus(unittest.TestCase):
    def test_same_seed_same_conversations_in_chatml(self):
        a, b, c = conversations(5), conversations(5), conversations(6)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertGreater(len(a), 20)
        for conv in a:
            turns = conv.split(corpus_chat.IM_END + "\n")
            self.assertTrue(turns[0].startswith(corpus_chat.IM_START + "system\n"), conv)
            roles = [t.split("\n", 1)[0] for t in turns[1:] if t]
            self.assertEqual(roles, ["<|im_start|>user", "<|im_start|>assistant"] * (len(roles) // 2), conv)

    def test_template_of_the_file_renders_as_the_corpus_does(self):
        model = os.path.join(ROOT, "assets", "zoo", "zoo-chat.gguf")
        writer = corpus_chat.ChatWriter(__import__("random").Random(9))
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(6):
                messages = writer.conversation()
                path = os.path.join(tmp, "messages.json")
                with open(path, "w") as f:
                    __import__("json").dump(messages, f)
                out = subprocess.run([VKLLM, "template", "-m", model, "--messages", path, "--add-generation-prompt"],
                                     capture_output=True, text=True, check=True)
                self.assertEqual(out.stdout, corpus_chat.render(messages, add_generation_prompt=True))

    def test_mask_marks_the_assistant_turns_and_the_encoder_matches_vkllm(self):
        model = os.path.join(ROOT, "assets", "zoo", "zoo-chat.gguf")
        meta, _ = gguf_file.read(model)
        tokens = meta["tokenizer.ggml.tokens"].value
        self.assertFalse(meta["tokenizer.ggml.add_space_prefix"].value)
        encoder = tokenizer.Encoder(tokens, meta["tokenizer.ggml.scores"].value, False)
        for conv in conversations(13)[:8]:
            ids, mask = tokenizer.encode_chat(encoder, conv)
            out = subprocess.run([VKLLM, "tokenize", "-m", model, "--parse-special", "-f", "-"], input=conv,
                                 capture_output=True, text=True, check=True)
            self.assertEqual([int(t) for t in out.stdout.split()], ids, conv)
            # the masked tokens spell the assistant's messages, each closed by <|im_end|>
            answers = [t.split("\n", 1)[1].removesuffix("\n") for t in conv.split(tokenizer.IM_START)
                       if t.startswith("assistant\n")]
            marked = [i for i, m in zip(ids, mask) if m]
            byte = lambda t: chr(int(t[3:5], 16)) if t.startswith("<0x") else t  # noqa: E731 (ASCII text)
            pieces = "".join(byte(tokens[i]) for i in marked)
            self.assertEqual(pieces.replace(tokenizer.SPACE, " "), "".join(answers), conv)


class WordPiece(unittest.TestCase):
    def test_python_encoder_matches_vkllm_on_zoo_bert(self):
        model = os.path.join(ROOT, "assets", "zoo", "zoo-bert.gguf")
        meta, _ = gguf_file.read(model)
        self.assertEqual(meta["tokenizer.ggml.model"].value, "bert")
        encoder = wordpiece.Encoder(meta["tokenizer.ggml.tokens"].value)
        stories = [s for s in generated(12, 0.02).decode("ascii").split("\n\n") if s][:12]
        stories.append("Unseen words: Zebra QUOKKA, and symbols # % & ~!")  # [UNK]-free pieces, case
        for s in stories:
            out = subprocess.run([VKLLM, "tokenize", "-m", model, "-p", s], capture_output=True, text=True, check=True)
            self.assertEqual([int(t) for t in out.stdout.split()], encoder.encode(s, specials=False), s)  # no [CLS]/[SEP]

    def test_training_merges_the_most_frequent_pair_first(self):
        # pairs inside words: (a, b) 3 times (in "ab" x2 and "abc"), (b, c) once: "ab" comes
        # first, as a word start ("\u2581a" + "b"); punctuation is a word of its own
        tokens = wordpiece.train("ab ab abc.", 5 + 2 * 4 + 1)
        self.assertEqual(tokens[:5], wordpiece.SPECIALS)
        self.assertEqual(tokens[-1], wordpiece.WORD_START + "ab")
        self.assertIn(wordpiece.WORD_START + ".", tokens)
        self.assertEqual(wordpiece.words("Tom's (red) BALL."), ["tom", "'", "s", "(", "red", ")", "ball", "."])
        enc = wordpiece.Encoder(tokens)
        self.assertEqual(enc.encode("abc", specials=False), [tokens.index(wordpiece.WORD_START + "ab"), tokens.index("c")])
        self.assertEqual(enc.encode("x"), [wordpiece.CLS, wordpiece.UNK, wordpiece.SEP])


class GgufFile(unittest.TestCase):
    def roundtrip(self, path):
        meta, tensors = gguf_file.read(path)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "copy.gguf")
            gguf_file.write(out, meta, tensors)
            self.assertEqual(open(out, "rb").read(), open(path, "rb").read(), path)

    def test_zoo_model_roundtrips_byte_for_byte(self):
        self.roundtrip(os.path.join(ROOT, "assets", "zoo", "zoo-dense.gguf"))

    def test_f16_zoo_model_roundtrips_byte_for_byte(self):
        path = os.path.join(ROOT, "assets", "zoo", "zoo-wide.gguf")  # matrices in F16, vectors in F32
        _, tensors = gguf_file.read(path)
        self.assertEqual(tensors["blk.0.ffn_down.weight"].dtype, np.float16)
        self.assertEqual(tensors["blk.0.attn_norm.weight"].dtype, np.float32)
        self.roundtrip(path)

    def test_llama_cpp_written_file_roundtrips_byte_for_byte(self):
        path = os.path.join(SHARED, "models", "stories260K", "stories260K-F32.gguf")
        if not os.path.exists(path):
            self.skipTest(f"{path} not found (../shared is absent)")
        self.roundtrip(path)

    def test_rejects_a_file_that_is_not_gguf(self):
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(b"GGML not really")
            f.flush()
            with self.assertRaises(ValueError):
                gguf_file.read(f.name)


if __name__ == "__main__":
    unittest.main()
