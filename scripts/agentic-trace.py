#!/usr/bin/env python3
"""Writes suites/data/agentic-long.jsonl: a Mooncake-format trace (prefix-tree blocks, no text)
of long agentic contexts, for `suites/long-context.toml`.

32 agent sessions of up to 8 steps each. Every session starts from one shared 16K-token
system prompt and tool catalogue (32 blocks of 512 tokens), adds a task of its own (24-40K
tokens: the files the agent was given), and each step appends the model's answer and a tool
output (6-14K tokens), so a session's context grows from ~40K tokens until it fills a 128K
window (the session ends there). A step is sent
when the previous one is answered and its tool has run: 4-9 s later. Sessions start 1.5 s
apart. Seeded: the file is the same on every run of this script.

    python3 scripts/agentic-trace.py > suites/data/agentic-long.jsonl
"""
import json
import random

BLOCK = 512
rng = random.Random(40)
SHARED = list(range(1, 33))  # the system prompt and tool catalogue: 32 blocks, 16K tokens
next_id = 1000
lines = []
for session in range(32):
    start = session * 1500
    task = rng.randint(48, 80)  # 24-40K tokens of task and files
    ids = SHARED + list(range(next_id, next_id + task))
    next_id += task
    at = start
    for step in range(8):
        length = min(len(ids) * BLOCK, 131072)
        blocks = (length + BLOCK - 1) // BLOCK
        out = rng.choice([128, 256, 512])
        lines.append({"timestamp": at, "input_length": length, "output_length": out, "hash_ids": ids[:blocks]})
        if length == 131072:
            break  # the context window is full: the session ends
        grow = rng.randint(12, 28)  # the answer and the tool output: 6-14K tokens
        ids = ids + list(range(next_id, next_id + grow))
        next_id += grow
        at += rng.randint(4000, 9000)
lines.sort(key=lambda l: l["timestamp"])
for l in lines:
    print(json.dumps(l, separators=(", ", ": ")))
