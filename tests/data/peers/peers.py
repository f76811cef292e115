"""Writes peers.json: what aiperf and guidellm themselves read from the
dataset files beside this script, for tests/e2e/peer_datasets.rs to compare
metronome's reading against.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install aiperf==0.13.0 guidellm==0.8.1
    /tmp/peers/bin/python tests/data/peers/peers.py

aiperf: its own loaders (SingleTurnDatasetLoader, MultiTurnDatasetLoader)
read each file and convert it to conversations, as `aiperf profile
--custom-dataset-type single_turn|multi_turn --input-file FILE` does.
guidellm: its JSON file deserializer (Hugging Face `datasets`) and its
default column mapper (GenerativeColumnMapper), as `guidellm benchmark
--data FILE` does; output_tokens_count is what it sends as max_tokens.
"""

import json
from pathlib import Path

from aiperf.dataset.loader.multi_turn import MultiTurnDatasetLoader
from aiperf.dataset.loader.single_turn import SingleTurnDatasetLoader
from guidellm.data.deserializers.file import JSONFileDatasetDeserializer
from guidellm.data.preprocessors.mappers import GenerativeColumnMapper
from guidellm.schemas.data.deserializers import FileDataArgs

HERE = Path(__file__).parent


def aiperf(loader_class, name):
    loader = loader_class(filename=str(HERE / name))
    out = []
    for conv in loader.convert_to_conversations(loader.load_dataset()):
        turns = []
        for t in conv.turns:
            texts = [c for text in t.texts for c in text.contents]
            assert len(texts) == 1, texts
            turns.append({"text": texts[0], "max_tokens": t.max_tokens})
        out.append({"system": conv.system_message, "turns": turns})
    return out


def guidellm(name):
    ds = JSONFileDatasetDeserializer()(FileDataArgs(path=HERE / name), None, 0)
    if hasattr(ds, "keys"):
        ds = ds["train"]
    mapper = GenerativeColumnMapper.__new__(GenerativeColumnMapper)
    mapper.datasets_column_mappings = GenerativeColumnMapper.datasets_mappings([ds])
    out = []
    for row in ds:
        (turn,) = mapper([{"dataset": row}])
        (text,) = turn["text_column"]
        (output,) = turn.get("output_tokens_count_column", [None])
        out.append({"text": text, "max_tokens": output})
    return out


peers = {
    "aiperf_single_turn.jsonl": aiperf(SingleTurnDatasetLoader, "aiperf_single_turn.jsonl"),
    "aiperf_multi_turn.jsonl": aiperf(MultiTurnDatasetLoader, "aiperf_multi_turn.jsonl"),
    "guidellm.jsonl": guidellm("guidellm.jsonl"),
    "guidellm.json": guidellm("guidellm.json"),
}
(HERE / "peers.json").write_text(json.dumps(peers, indent=1) + "\n")
