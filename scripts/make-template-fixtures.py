#!/usr/bin/env python3
"""Renders the chat-template fixtures of imurun-model with Python's jinja2, the way Hugging
Face's `apply_chat_template` renders chat templates, so imurun's minijinja rendering can be
compared against an independent reference byte for byte
(crates/imurun-model/tests/all/template_fixtures.rs).

Usage: scripts/make-template-fixtures.py [MODEL.gguf]

MODEL.gguf defaults to ~/.imurun/models/SmolLM2-135M-Instruct.Q4_1.gguf (where
scripts/fetch-model.sh puts it); its `tokenizer.chat_template` is read with the small GGUF reader below and
written to the fixtures folder. The Llama 3 and Qwen2.5 templates are the published
template strings checked in beside the fixtures (see SOURCES.md there).

Needs `jinja2` (pip install jinja2). Writes crates/imurun-model/tests/fixtures/templates/
expected.json (and smollm2-135m-instruct.jinja, chatml.jinja).
"""

import json
import struct
import sys
from datetime import datetime
from pathlib import Path

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("make-template-fixtures: needs jinja2: pip install jinja2")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "crates" / "imurun-model" / "tests" / "fixtures" / "templates"
DEFAULT_MODEL = Path.home() / ".imurun" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# imurun's fallback for files without a template; must equal CHATML_TEMPLATE in
# crates/imurun-model/src/template/mod.rs (a test checks).
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SYSTEM = "You are a terse assistant. Answer in one sentence."
TOOL_CALL = '```tool\n{"name": "list_dir", "args": {"path": "."}}\n```'

# (name, messages, add_generation_prompt)
CONVERSATIONS = [
    (
        "system_and_user",
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is 2+2?"}],
        True,
    ),
    ("user_only", [{"role": "user", "content": "Hello!"}], True),
    (
        "multi_turn",
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Name a colour."},
            {"role": "assistant", "content": "Blue."},
            {"role": "user", "content": "Another one?"},
        ],
        True,
    ),
    (
        "multi_turn_without_generation_prompt",
        [
            {"role": "user", "content": "Name a colour."},
            {"role": "assistant", "content": "Blue."},
        ],
        False,
    ),
    (
        "tool_result",
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Which files are here?"},
            {"role": "assistant", "content": TOOL_CALL},
            {"role": "user", "content": "[tool result: list_dir]\nREADME.md\nsrc/"},
        ],
        True,
    ),
    (
        "whitespace_and_unicode",
        [{"role": "user", "content": "  Grüße, 世界 😀 \n\n"}],
        True,
    ),
]

# (template file, bos_token, eos_token): the special tokens each model's tokenizer declares.
TEMPLATES = [
    ("smollm2-135m-instruct.jinja", "<|im_start|>", "<|im_end|>"),
    ("llama-3-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("qwen2.5-instruct.jinja", None, "<|im_end|>"),
    ("chatml.jinja", None, "<|im_end|>"),
]


def read_gguf_metadata(path):
    """The key-value metadata of a GGUF (v2/v3) file; arrays are skipped."""
    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    with open(path, "rb") as f:

        def read(fmt):
            size = struct.calcsize("<" + fmt)
            return struct.unpack("<" + fmt, f.read(size))[0]

        def read_string():
            return f.read(read("Q")).decode("utf-8")

        def read_value(kind):
            if kind in scalars:
                return read(scalars[kind])
            if kind == 8:
                return read_string()
            if kind == 9:
                element, count = read("I"), read("Q")
                return [read_value(element) for _ in range(count)]
            raise ValueError(f"unknown GGUF value type {kind}")

        if f.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version = read("I")
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version}")
        read("Q")  # tensor count
        metadata = {}
        for _ in range(read("Q")):
            key = read_string()
            metadata[key] = read_value(read("I"))
        return metadata


def hugging_face_environment():
    """jinja2 set up as transformers' `_compile_jinja_template` sets it up."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    if not model.is_file():
        sys.exit(f"make-template-fixtures: no model at {model}: run scripts/fetch-model.sh or pass a path")
    smollm2 = read_gguf_metadata(model)["tokenizer.chat_template"]
    (FIXTURES / "smollm2-135m-instruct.jinja").write_text(smollm2, encoding="utf-8")
    (FIXTURES / "chatml.jinja").write_text(CHATML, encoding="utf-8")

    env = hugging_face_environment()
    cases = []
    for template_file, bos_token, eos_token in TEMPLATES:
        source = (FIXTURES / template_file).read_text(encoding="utf-8")
        template = env.from_string(source)
        # As transformers does: the special tokens the tokenizer has, by name.
        special = {"eos_token": eos_token}
        if bos_token is not None:
            special["bos_token"] = bos_token
        for name, messages, add_generation_prompt in CONVERSATIONS:
            expected = template.render(
                messages=messages,
                tools=None,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **special,
            )
            cases.append(
                {
                    "template": template_file,
                    "conversation": name,
                    "bos_token": bos_token or "",
                    "eos_token": eos_token,
                    "add_generation_prompt": add_generation_prompt,
                    "messages": messages,
                    "expected": expected,
                }
            )
    out = FIXTURES / "expected.json"
    out.write_text(json.dumps({"cases": cases}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {out.relative_to(REPO)} (jinja2 {jinja2.__version__})")


if __name__ == "__main__":
    main()
