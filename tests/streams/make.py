"""Builds the golden streams in this folder with the `openai` package's own
types, so their shapes are the SDK's, not a guess.

    pip install openai==3.57.0   # the version they were built with
    python3 tests/streams/make.py

Each `NAME.sse` is the body of a `text/event-stream` response, one event per
`data:` line and a blank line after each; `json.json` is a plain JSON
answer to a stream request. `metronome serve --sse --shape NAME` replays a
stream event by event (the first event with the head, event k at
TTFT + (k - 1) * ITL); tests/e2e/shapes.rs and core/tests/golden/shapes.rs read
them. The shapes follow what each server sends:

- openai: role-only first chunk (`content: ""`), one token per chunk,
  `usage: null` on every chunk (stream_options.include_usage), a finish
  chunk with an empty delta, a usage chunk with empty `choices`, [DONE].
- vllm: several tokens per chunk (--stream-interval), `logprobs`,
  `stop_reason`, usage last with empty `choices`, [DONE].
- continuous: vLLM with `continuous_usage_stats`: usage on every chunk,
  cumulative; one chunk is `content: ""` whose token the detokenizer held
  back (usage still grew).
- llamacpp: llama.cpp's server: no usage, a `timings` object on the
  finish chunk, [DONE].
- reasoning: `reasoning_content` deltas (vLLM's reasoning parser; newer
  servers say `reasoning`) before the `content` answer.
- tools: tool-call deltas only (`content: null`), finish_reason
  `tool_calls`, usage.
- empty_content: `content: ""` chunks between the tokens (held-back
  tokens); usage counts every token.
- no_done: the openai shape without `data: [DONE]` after the finish: the
  body ends cleanly (accepted by the SDK, vLLM's bench and guidellm).
- error: two tokens, then an error object, no [DONE].
- completions: the legacy /v1/completions stream (`choices[].text`).
"""

import json
import pathlib

from openai.types import Completion, CompletionChoice, CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion import Choice as FullChoice
from openai.types.chat.chat_completion_chunk import (
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message import ChatCompletionMessage

HERE = pathlib.Path(__file__).parent
ID, MODEL, CREATED = "chatcmpl-7f3a", "metronome", 1764547200


def chunk(choices, usage=None, set_usage=False, **extra):
    kw = dict(id=ID, object="chat.completion.chunk", created=CREATED, model=MODEL, choices=choices)
    if set_usage:
        kw["usage"] = usage
    c = ChatCompletionChunk(**kw, **extra)
    return c.model_dump_json(exclude_unset=True)


def choice(delta, finish=None, **extra):
    return Choice(index=0, delta=delta, finish_reason=finish, **extra)


def usage(n, prompt=12):
    return CompletionUsage(prompt_tokens=prompt, completion_tokens=n, total_tokens=prompt + n)


def write(name, events, done=True):
    body = "".join(f"data: {e}\n\n" for e in events)
    if done:
        body += "data: [DONE]\n\n"
    (HERE / f"{name}.sse").write_bytes(body.encode())


WORDS = ["The", " quick", " brown", " fox", " jumps"]

# openai
ev = [chunk([choice(ChoiceDelta(role="assistant", content="", refusal=None))], None, True)]
ev += [chunk([choice(ChoiceDelta(content=w))], None, True) for w in WORDS]
ev += [chunk([choice(ChoiceDelta(), "stop")], None, True)]
ev += [chunk([], usage(5), True)]
write("openai", ev)
write("no_done", ev, done=False)

# vllm: 8 tokens in 4 chunks after the first (1 + 2 + 2 + 3)
vllm = lambda d, f=None: choice(d, f, logprobs=None, stop_reason=None)
ev = [chunk([vllm(ChoiceDelta(role="assistant", content=""))])]
ev += [chunk([vllm(ChoiceDelta(content=t))]) for t in ["The", " quick brown", " fox jumps", " over the dog"]]
ev += [chunk([vllm(ChoiceDelta(content=""), "stop")])]
ev += [chunk([], usage(8), True)]
write("vllm", ev)

# continuous usage: cumulative usage on every chunk; the third chunk is
# content "" whose token was held back (usage grew by 1)
ev = [chunk([vllm(ChoiceDelta(role="assistant", content=""))], usage(0), True)]
steps = [("The", 1), (" quick", 2), ("", 3), (" brown fox", 5), (" jumps", 6)]
ev += [chunk([vllm(ChoiceDelta(content=t))], usage(n), True) for t, n in steps]
ev += [chunk([vllm(ChoiceDelta(content=""), "stop")], usage(6), True)]
ev += [chunk([], usage(6), True)]
write("continuous", ev)

# llama.cpp: no usage, timings on the finish chunk
ev = [chunk([choice(ChoiceDelta(role="assistant", content=None))])]
ev += [chunk([choice(ChoiceDelta(content=w))]) for w in WORDS]
timings = {"prompt_n": 12, "prompt_ms": 8.1, "predicted_n": 5, "predicted_ms": 41.3,
           "predicted_per_token_ms": 8.26, "predicted_per_second": 121.07}
ev += [chunk([choice(ChoiceDelta(), "stop")], timings=timings)]
write("llamacpp", ev)

# reasoning: three reasoning deltas, then two answer tokens
ev = [chunk([choice(ChoiceDelta(role="assistant", content=""))])]
ev += [chunk([choice(ChoiceDelta(reasoning_content=t))]) for t in ["Let", " me", " think"]]
ev += [chunk([choice(ChoiceDelta(content=t))]) for t in ["Forty", "-two"]]
ev += [chunk([choice(ChoiceDelta(), "stop")])]
ev += [chunk([], usage(5), True)]
write("reasoning", ev)

# tools: tool-call deltas only
tc = lambda **kw: ChoiceDeltaToolCall(index=0, **kw)
ev = [chunk([choice(ChoiceDelta(role="assistant", content=None))])]
ev += [chunk([choice(ChoiceDelta(tool_calls=[tc(id="call_1", type="function",
        function=ChoiceDeltaToolCallFunction(name="get_weather", arguments=""))]))])]
ev += [chunk([choice(ChoiceDelta(tool_calls=[tc(function=ChoiceDeltaToolCallFunction(arguments=a))]))])
       for a in ['{"city":', ' "Paris"', "}"]]
ev += [chunk([choice(ChoiceDelta(), "tool_calls")])]
ev += [chunk([], usage(7), True)]
write("tools", ev)

# empty content: tokens held back as content "" between visible ones
ev = [chunk([choice(ChoiceDelta(role="assistant", content=""))])]
for t in ["The", "", " quick", "", " fox"]:
    ev += [chunk([choice(ChoiceDelta(content=t))])]
ev += [chunk([choice(ChoiceDelta(), "stop")])]
ev += [chunk([], usage(5), True)]
write("empty_content", ev)

# error: two tokens, then an error object, no [DONE]
ev = [chunk([choice(ChoiceDelta(role="assistant", content=""))])]
ev += [chunk([choice(ChoiceDelta(content=w))]) for w in WORDS[:2]]
ev += [json.dumps({"error": {"message": "The server had an error while processing your request.",
                            "type": "server_error", "param": None, "code": None}})]
write("error", ev, done=False)

# completions (legacy): choices[].text
# The SDK's CompletionChoice types finish_reason as non-null, but every
# streaming server sends null until the last chunk: built unvalidated.
comp = lambda text, finish=None: Completion.model_construct(
    id="cmpl-7f3a", object="text_completion", created=CREATED, model=MODEL,
    choices=[CompletionChoice.model_construct(index=0, text=text, logprobs=None, finish_reason=finish)]
).model_dump_json(exclude_unset=True)
ev = [comp(w) for w in WORDS] + [comp("", "length")]
ev += [Completion(id="cmpl-7f3a", object="text_completion", created=CREATED, model=MODEL,
                  choices=[], usage=usage(5)).model_dump_json(exclude_unset=True)]
write("completions", ev)

# a plain JSON answer to a stream request
full = ChatCompletion(
    id=ID, object="chat.completion", created=CREATED, model=MODEL,
    choices=[FullChoice(index=0, finish_reason="stop",
                        message=ChatCompletionMessage(role="assistant", content="The quick brown fox jumps"))],
    usage=usage(5))
(HERE / "json.json").write_bytes(full.model_dump_json(exclude_unset=True).encode())
