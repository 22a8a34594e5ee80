#!/usr/bin/env python3
"""Builds a model *shape* folder for `vllm serve --load-format dummy`: the real model's
config (random weights, the same kernels and bytes per token) plus a tokenizer this script
makes, so no weights and no hub token are needed.

The tokenizer is a word-level Hugging Face fast tokenizer with exactly the model's vocabulary
size. slotest's prompt words (read from slotest's source, `WORDS` in
src/load/workload/prompter.rs) come first, each its own id, so different prompts are different
token sequences and the prefix cache behaves as with the real tokenizer (were they all
`[UNK]`, every "cold" prompt would be one token sequence the cache serves). Then filler words,
and the special tokens at the ids the config names. Every id decodes to text.

usage: make-shape.py SHAPE_DIR OUT_DIR WORKLOAD_RS
  SHAPE_DIR holds config.json, generation_config.json and preprocessor_config.json (optional,
  copied as they are) and shape.json:
    {"special": {"<|end_of_text|>": 128001, ...}, "bos": "<|begin_of_text|>" or null,
     "eos": "<|end_of_text|>", "max_length": 8192, "chat_template": "..." (optional)}
"""
import json, os, re, shutil, sys

shape_dir, out, workload = sys.argv[1], sys.argv[2], sys.argv[3]
config = json.load(open(os.path.join(shape_dir, "config.json")))
shape = json.load(open(os.path.join(shape_dir, "shape.json")))
vocab_size = config["vocab_size"]
special = {k: int(v) for k, v in shape["special"].items()}
bos, eos = shape.get("bos"), shape["eos"]
os.makedirs(out, exist_ok=True)

src = open(workload).read()
m = re.search(r"pub const WORDS: &\[&str\] = &\[(.*?)\];", src, re.S)
if not m:
    sys.exit(f"{workload}: no `pub const WORDS` (slotest's prompt words) found")
words = re.findall(r'"([^"]+)"', m.group(1))
# Words slotest's probes and chat turns use besides WORDS, and punctuation.
extra = ("Hello The quick brown fox fn main println h llo w rld a b c d e f g x y z user assistant "
         "system 0 1 2 3 4 5 6 7 8 9 1234567 . , ; : ! ? ( ) { } [ ] \" ' - + * / = < > _ # % & @").split()

by_id = {i: t for t, i in special.items()}
vocab, seen = {}, set()
pool = iter(["[UNK]"] + words + extra)
filler = (f"w{i}" for i in range(vocab_size * 2))
for i in range(vocab_size):
    if i in by_id:
        token = by_id[i]
    else:
        token = next((w for w in pool if w not in seen and w not in special), None)
        if token is None:
            token = next(w for w in filler if w not in seen and w not in special)
    vocab[token] = i
    seen.add(token)
assert len(vocab) == vocab_size, (len(vocab), vocab_size)
missing = [w for w in words if w not in vocab]
assert not missing, f"prompt words without an id: {missing[:5]}"

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
if bos:
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, special[bos])])
# Word-level ids decode to words joined by spaces (WordPiece's decoder with a prefix no word has).
tok.decoder = decoders.WordPiece(prefix="\x00\x00", cleanup=False)
assert tok.get_vocab_size() == vocab_size, tok.get_vocab_size()
tok.save(os.path.join(out, "tokenizer.json"))

tokenizer_config = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "eos_token": eos,
    "unk_token": "[UNK]",
    "model_max_length": shape.get("max_length", 8192),
    "clean_up_tokenization_spaces": False,
    "add_bos_token": bool(bos),
    "model_input_names": ["input_ids", "attention_mask"],
    # The model's own where the shape gives it (a vision-language model's places its images),
    # else a plain one.
    "chat_template": shape.get("chat_template") or (
        "{% if bos_token %}{{ bos_token }}{% endif %}{% for m in messages %}"
        "{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"),
}
if bos:
    tokenizer_config["bos_token"] = bos
json.dump(tokenizer_config, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
json.dump({k: v for k, v in {"bos_token": bos, "eos_token": eos, "unk_token": "[UNK]"}.items() if v},
          open(os.path.join(out, "special_tokens_map.json"), "w"), indent=2)
# The model's own files: config.json, and where the shape has them generation_config.json and a
# vision-language model's preprocessor_config.json (its image processor: how pixels become tokens).
for f in sorted(os.listdir(shape_dir)):
    if f.endswith(".json") and f != "shape.json":
        shutil.copy(os.path.join(shape_dir, f), os.path.join(out, f))
print(f"{out}: {config.get('architectures', ['?'])[0]}, vocab {vocab_size}, {len(words)} slotest words")
