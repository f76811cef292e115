"""Writes tests/data/openai_request_fields.json: the fields of OpenAI's
CreateChatCompletionRequest and CreateCompletionRequest (streaming), each
with the JSON types its annotation admits, read from the `openai` package's
own TypedDicts.

    python3 -m venv /tmp/oai && /tmp/oai/bin/pip install openai
    /tmp/oai/bin/python tests/data/openai_request_fields.py > tests/data/openai_request_fields.json

tests/e2e/openai_schema.rs checks every body metronome builds against it.
"""
import collections.abc
import json
import sys
import typing

import openai
import typing_extensions as te
from openai.types import chat as chat_types
from openai.types import completion_create_params as comp
from openai.types.chat import ChatCompletionStreamOptionsParam
from openai.types.chat import completion_create_params as chat

SCALARS = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def json_types(t):
    """The JSON types a Python annotation admits."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (te.Required, te.NotRequired, typing.Required, typing.NotRequired):
        return json_types(args[0])
    if origin in (te.Annotated, typing.Annotated):
        return json_types(args[0])
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return set().union(*(json_types(a) for a in args))
    if origin in (te.Literal, typing.Literal):
        return {SCALARS[type(a)] for a in args}
    if t in SCALARS:
        return {SCALARS[t]}
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, typing.List):
        return {"array"}
    if origin in (dict, typing.Dict) or t is object or te.is_typeddict(t):
        return {"object"}
    if hasattr(t, "__value__"):  # a `type X = ...` alias
        return json_types(t.__value__)
    raise SystemExit(f"unhandled annotation {t!r}")


def fields(typed_dict):
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    return {k: sorted(json_types(v)) for k, v in sorted(hints.items())}


messages = {}
for name in [
    "ChatCompletionSystemMessageParam",
    "ChatCompletionDeveloperMessageParam",
    "ChatCompletionUserMessageParam",
    "ChatCompletionAssistantMessageParam",
    "ChatCompletionToolMessageParam",
]:
    for k, v in fields(getattr(chat_types, name)).items():
        messages[k] = sorted(set(messages.get(k, [])) | set(v))

out = {
    "source": f"openai-python {openai.__version__}: "
    "openai.types.chat.completion_create_params.CompletionCreateParamsStreaming and "
    "openai.types.completion_create_params.CompletionCreateParamsStreaming "
    "(typing.get_type_hints, each annotation reduced to the JSON types it admits)",
    "generated_by": "tests/data/openai_request_fields.py",
    "chat_completions": fields(chat.CompletionCreateParamsStreaming),
    "completions": fields(comp.CompletionCreateParamsStreaming),
    "chat_completions.stream_options": fields(ChatCompletionStreamOptionsParam),
    "completions.stream_options": fields(ChatCompletionStreamOptionsParam),
    "chat_completions.messages[]": dict(sorted(messages.items())),
}
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
