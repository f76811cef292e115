"""Builds tests/data/tokenizer-bpe.json: a small byte-level BPE tokenizer
(GPT-2's pre-tokenizer and decoder, 600 tokens) trained with Hugging
Face's `tokenizers` on a fixed English text, so the --tokenizer tests have
a real tokenizer.json whose counts differ from the word proxy (rarer words
split into several tokens). Run: python3 tests/data/make_tokenizer.py
(needs `pip install tokenizers`); the output is deterministic for a
given tokenizers version."""

import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

TEXT = """The quick brown fox jumps over the lazy dog. A metronome keeps time:
it ticks at a steady rate whatever the musician does. An open-loop load
generator sends requests on a schedule of intended times, and measures
each latency from the intended send time, so a server stall shows up in
every request it delayed. Coordinated omission hides stalls: a closed loop
stops sending while it waits. The people of the world still find their
own way home, when the night is long and the city is quiet."""

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=600,
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
tok.train_from_iterator([TEXT] * 4, trainer=trainer)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer-bpe.json")
tok.save(out)
print(out, tok.get_vocab_size())
