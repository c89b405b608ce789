#!/usr/bin/python3
"""Golden renderings of the chat templates in tests/golden/templates/ (tests/template/test_templates.cpp).

Renders every tests/golden/templates/*.jinja with every conversation of
tests/golden/templates/conversations.json, generation prompt off and on, the way Hugging Face's
transformers renders chat templates: Python jinja2's ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and the loopcontrols extension, a `{% generation %}` block tag that
renders its body, and the globals raise_exception and strftime_now, and the filter tojson
(json.dumps(x, ensure_ascii=False, ...)). The render arguments are those of
transformers' apply_chat_template: messages, tools (None when the conversation has none),
documents=None, add_generation_prompt, bos_token, eos_token and the conversation's extra keyword
arguments.

strftime_now uses a fixed clock, NOW below (the C++ tests pass the same through
ChatTemplateInputs::now), so the goldens do not depend on the day they were made.

Writes tests/golden/templates/expected/<template>.json:
  {"template": NAME, "renders": [{"conversation": C, "add_generation_prompt": B,
                                   "output": TEXT} or {..., "error": MESSAGE, "raised": B}]}
"raised" is true where the template itself called raise_exception (the C++ side must raise the
same message), false where jinja2 failed otherwise (the C++ side must fail too).

Needs Debian's python3-jinja2 (apt-get install python3-jinja2); only to make the goldens: CI
reads the committed files. Copy new templates from llama.cpp's models/templates/ first:
    cp ~/.cache/llama-oracle/src/models/templates/*.jinja tests/golden/templates/
Usage: scripts/make-golden-templates.py (runs /usr/bin/python3, where Debian installs python3-jinja2)
"""
import datetime
import json
import pathlib
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "tests" / "golden" / "templates"
NOW = datetime.datetime(2026, 1, 15, 0, 0, 0)
BOS, EOS = "<s>", "</s>"


class TemplateRaised(Exception):
    pass


class GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: renders its body unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise TemplateRaised(message)


def strftime_now(fmt):
    return NOW.strftime(fmt)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, conversation, add_generation_prompt):
    try:
        template = env.from_string(source)
        text = template.render(messages=conversation["messages"], tools=conversation.get("tools"),
                               documents=None, add_generation_prompt=add_generation_prompt,
                               bos_token=BOS, eos_token=EOS, **conversation.get("extra", {}))
        return {"output": text}
    except TemplateRaised as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # noqa: BLE001 - any jinja2 failure is a golden result
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


def main():
    conversations = json.loads((DIR / "conversations.json").read_text(encoding="utf-8"))
    env = environment()
    out_dir = DIR / "expected"
    out_dir.mkdir(exist_ok=True)
    paths = sorted(DIR.glob("*.jinja"))
    if not paths:
        sys.exit(f"no templates in {DIR}")
    for path in paths:
        source = path.read_text(encoding="utf-8")
        renders = []
        for conversation in conversations:
            for agp in (False, True):
                r = {"conversation": conversation["name"], "add_generation_prompt": agp}
                r.update(render(env, source, conversation, agp))
                renders.append(r)
        doc = {"template": path.name, "renders": renders}
        (out_dir / (path.stem + ".json")).write_text(
            json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        n_err = sum("error" in r for r in renders)
        print(f"{path.name}: {len(renders)} renderings, {n_err} errors")


if __name__ == "__main__":
    main()
