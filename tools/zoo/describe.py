#!/usr/bin/env python3
"""Fills the tables of assets/zoo/README.md from the models themselves: each model's training
record (assets/zoo/training/MODEL.json, written by train.py), greedy samples and the residual-stream
report from `vkllm run` (so from vkllm, not from PyTorch), and the files' sizes and SHA-256 sums
(which tests/zoo/check_checksums.cmake checks). The README's text outside the marked sections
(<!-- begin:NAME --> ... <!-- end:NAME -->) is left as it is.

    describe.py [--vkllm build/bin/vkllm]
"""
import argparse
import hashlib
import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "assets", "zoo")
MODELS = ["zoo-dense", "zoo-swa", "zoo-moe", "zoo-mla", "zoo-deep", "zoo-hybrid", "zoo-wide", "zoo-facts"]
CHAT_MODELS = ["zoo-chat"]  # trained on conversations: sampled through `vkllm chat` (CHAT_TURNS)
ENCODERS = ["zoo-bert"]  # described by hand in the README (train_mlm.py --describe); checksummed here
# Conversations typed into `vkllm chat`, a user turn per line (the chat keeps the earlier turns;
# each conversation is a chat of its own: zoo-chat's context is its 256-token training window).
CHAT_CONVERSATIONS = [["Hi!", "Tell me a story about Lily.", "What was the name of the dog?", "Who did Lily meet?"],
                      ["Name three animals.", "Count to five.", "What comes after seven?", "Thank you!"]]
# The prompts of the golden tests (tests/golden/zoo/prompts.txt), so the samples are the texts they check.
SAMPLE_PROMPTS = [line for line in open(os.path.join(ROOT, "tests", "golden", "zoo", "prompts.txt")).read().splitlines()
                  if line]
# A held-out-style story opening: long enough for the residual stream to show structure.
ACTIVATION_PROMPT = ('Once upon a time, there was a little girl named Lily. Lily had a red ball. One day, Lily met '
                     'a boy named Tom at the park. "Hello, Tom!" said Lily. "Can I play with your kite?" '
                     'Tom said, "Yes! Let us play together." They counted to five: 1, 2, 3, 4, 5.')
ROW = re.compile(r'^\s*(\S+)\s+([0-9.]+)\s+([0-9]+)\s+(".*")\s+([0-9]+)\s+([0-9.]+)\s+([0-9.]+)x(\s+MASSIVE)?$')


def vkllm_run(vkllm, model, prompt, n, extra=()):
    r = subprocess.run([vkllm, "run", "-m", os.path.join(ZOO, model + ".gguf"), "-p", prompt, "-n", str(n),
                        "--temp", "0", *extra], capture_output=True, text=True, check=True)
    return r.stdout, r.stderr


def model_table():
    rows = ["| model | command | parameters | layers x width | steps (tokens seen) | training time | train loss | held-out loss |",
            "|-------|---------|-----------:|----------------|---------------------|--------------:|-----------:|--------------:|"]
    for m in MODELS + CHAT_MODELS:
        rec = json.load(open(os.path.join(ZOO, "training", m + ".json")))
        rows.append(f"| `{m}` | `{rec['command']}` | {rec['parameters'] / 1e6:.2f} M | {rec['layers']} x {rec['width']} | "
                    f"{rec['steps']} ({rec['tokens_seen'] / 1e6:.1f} M) | {rec['minutes']} min | "
                    f"{rec['train_loss']:.3f} | {rec['heldout_loss']:.3f} |")
    return "\n".join(rows)


def samples(vkllm):
    out = []
    for m in MODELS:
        out.append(f"**{m}**\n")
        for p in SAMPLE_PROMPTS:
            text, _ = vkllm_run(vkllm, m, p, 60)
            out.append("> " + text.strip().replace("\n", "\n> ") + "\n")
    for m in CHAT_MODELS:
        out.append(f"**{m}** (`vkllm chat -m assets/zoo/{m}.gguf --temp 0`, one turn a line; two conversations)\n")
        for turns in CHAT_CONVERSATIONS:
            r = subprocess.run([vkllm, "chat", "-m", os.path.join(ZOO, m + ".gguf"), "--temp", "0"],
                               input="".join(t + "\n" for t in turns), capture_output=True, text=True, check=True)
            out.append("```\n" + transcript(turns, r.stdout) + "```\n")
    return "\n".join(out)


def transcript(turns, stdout):
    """The user's turns and the chat's answers, interleaved. `vkllm chat` prints each answer and a
    newline; an answer's own newlines (a numbered list) are told apart by the answer count."""
    lines = stdout.split("\n")[:-1]
    extra = len(lines) - len(turns)  # lines inside answers
    out, i = [], 0
    for t in turns:
        out.append(f"user: {t}\n")
        answer = [lines[i]]
        i += 1
        # a line that starts a numbered item belongs to the answer before it
        while extra > 0 and i < len(lines) and re.match(r"\d+\. ", lines[i]):
            answer.append(lines[i])
            i += 1
            extra -= 1
        out.append("assistant: " + "\n".join(answer) + "\n")
    return "".join(out)


def activations(vkllm):
    rows = ["| model | largest \\|x\\| (layer, position, token, channel) | its median \\|x\\| | ratio | massive? |",
            "|-------|---------------------------------------------|-----------------:|------:|----------|"]
    for m in MODELS:
        _, err = vkllm_run(vkllm, m, ACTIVATION_PROMPT, 1, ["--activations"])
        stats = [ROW.match(line) for line in err.splitlines()]
        stats = [s for s in stats if s]
        if not stats:
            raise RuntimeError(f"{m}: no residual report in vkllm's output:\n{err}")
        top = max(stats, key=lambda s: float(s[2]))
        massive = [s for s in stats if s[8]]
        verdict = "yes: layers " + ", ".join(s[1] for s in massive) if massive else "no"
        rows.append(f"| `{m}` | {float(top[2]):.1f} (layer {top[1]}, position {top[3]}, {top[4]}, channel {top[5]}) | "
                    f"{float(top[6]):.3f} | {float(top[7]):.0f}x | {verdict} |")
    return "\n".join(rows)


def checksums():
    rows = ["| file | bytes | SHA-256 |", "|------|------:|---------|"]
    for m in MODELS + CHAT_MODELS + ENCODERS:
        path = os.path.join(ZOO, m + ".gguf")
        data = open(path, "rb").read()
        rows.append(f"| `{m}.gguf` | {len(data)} | `{hashlib.sha256(data).hexdigest()}` |")
    return "\n".join(rows)


def replace_section(text, name, body):
    pattern = re.compile(rf"(<!-- begin:{name} -->\n).*?(<!-- end:{name} -->)", re.S)
    if not pattern.search(text):
        raise RuntimeError(f"assets/zoo/README.md has no section '{name}'")
    return pattern.sub(lambda mo: mo[1] + body + "\n" + mo[2], text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vkllm", default=os.path.join(ROOT, "build", "bin", "vkllm"))
    args = ap.parse_args()
    readme = os.path.join(ZOO, "README.md")
    text = open(readme).read()
    text = replace_section(text, "models", model_table())
    text = replace_section(text, "samples", samples(args.vkllm))
    text = replace_section(text, "activations", activations(args.vkllm))
    text = replace_section(text, "checksums", checksums())
    open(readme, "w").write(text)


if __name__ == "__main__":
    main()
