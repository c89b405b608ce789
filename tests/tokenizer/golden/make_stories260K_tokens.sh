#!/usr/bin/env bash
# Regenerates stories260K_tokens.txt: llama.cpp's tokenization (add_special=true,
# parse_special=false, i.e. BOS added) of a few prompts with the stories260K vocabulary.
# Each output line is: PROMPT<TAB>ID ID ..., the prompt with \\, \t and \n escaped.
# Needs the llama-oracle (../shared/tools/llama-oracle/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${VKLLM_SHARED_DIR:-$here/../../../../shared}
home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
ORACLE="$home/llama-logits" MODEL="$shared/models/stories260K/stories260K-F32.gguf" \
OUT="$here/stories260K_tokens.txt" python3 - <<'PY'
import os, subprocess, tempfile
prompts = [
    "Once upon a time",
    "Hello world",
    " leading space",
    "<s>Tom and Lily",
    "Lily's mom said: \"Don't touch the 2 cats!\"",
    "  two  spaces, then a newline\nand more",
    "na\u00efve caf\u00e9, \u6771\u4eac and \U0001F999",
]
def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
lines = []
with tempfile.TemporaryDirectory() as tmp:
    for p in prompts:
        subprocess.run([os.environ["ORACLE"], os.environ["MODEL"], "none", p, "0", tmp + "/run", "1"],
                       check=True, capture_output=True)
        ids = open(tmp + "/run.tokens.txt").read().split()
        lines.append(escape(p) + "\t" + " ".join(ids) + "\n")
open(os.environ["OUT"], "w", encoding="utf-8").writelines(lines)
print("wrote", os.environ["OUT"])
PY
