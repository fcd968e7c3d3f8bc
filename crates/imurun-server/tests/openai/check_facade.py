"""Checks imurun's OpenAI-compatible facade with the real `openai` package.

Usage: python check_facade.py BASE_URL [EXPECTED_ANSWER]

BASE_URL is the facade's root with `/v1` (e.g. http://127.0.0.1:8080/v1). It lists the models,
asks for one answer whole and one streamed, and prints a JSON summary on one line. Any
mismatch exits non-zero with a sentence saying what was wrong. With EXPECTED_ANSWER, both
answers must equal it. `crates/imurun-server/tests/all/openai_facade.rs` runs it against a
server with a scripted model; run `scripts/setup` to get the package.
"""

import json
import sys


def fail(message):
    print(f"check_facade: {message}", file=sys.stderr)
    sys.exit(1)


try:
    import openai
except ImportError:
    fail("the `openai` package is not installed in this Python; run scripts/setup")


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: check_facade.py BASE_URL [EXPECTED_ANSWER]")
    base_url = sys.argv[1]
    expected = sys.argv[2] if len(sys.argv) == 3 else None
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30)

    models = [model.id for model in client.models.list()]
    if "imurun" not in models:
        fail(f"models.list() does not list `imurun`: {models}")

    whole = client.chat.completions.create(
        model="imurun",
        messages=[
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": "Say hello."},
        ],
        temperature=0.2,
        max_tokens=64,
    )
    if whole.object != "chat.completion" or not whole.id.startswith("chatcmpl-"):
        fail(f"not a chat completion: {whole}")
    choice = whole.choices[0]
    if choice.message.role != "assistant" or choice.finish_reason != "stop":
        fail(f"unexpected choice: {choice}")
    whole_text = choice.message.content
    if not whole_text:
        fail("the non-streamed answer is empty")
    if whole.usage is None or whole.usage.total_tokens != (
        whole.usage.prompt_tokens + whole.usage.completion_tokens
    ):
        fail(f"usage does not add up: {whole.usage}")

    stream = client.chat.completions.create(
        model="imurun",
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Say hello again."}]}
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, finish_reasons, usage, roles = [], [], None, []
    for chunk in stream:
        if chunk.object != "chat.completion.chunk":
            fail(f"not a chunk: {chunk}")
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.role:
                roles.append(choice.delta.role)
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish_reasons.append(choice.finish_reason)
    streamed_text = "".join(pieces)
    if roles != ["assistant"]:
        fail(f"the role should come once, in the first chunk: {roles}")
    if finish_reasons != ["stop"]:
        fail(f"expected one finish_reason `stop`: {finish_reasons}")
    if not streamed_text:
        fail("the streamed answer is empty")
    if usage is None or usage.completion_tokens <= 0:
        fail(f"the usage chunk is missing or empty: {usage}")
    if expected is not None and (whole_text, streamed_text) != (expected, expected):
        fail(f"expected {expected!r} twice, got {whole_text!r} and {streamed_text!r}")

    print(
        json.dumps(
            {
                "openai_version": openai.__version__,
                "models": models,
                "answer": whole_text,
                "streamed": streamed_text,
                "chunks": len(pieces),
                "usage": usage.model_dump(),
            }
        )
    )


if __name__ == "__main__":
    try:
        main()
    except openai.APIError as error:
        fail(f"the API answered with an error: {error!r}")
    except openai.OpenAIError as error:
        fail(f"the client failed: {error!r}")
