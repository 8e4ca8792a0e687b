"""Where BIPIA inserts a "middle" attack: at the start of a sentence of
NLTK's untrained PunktSentenceTokenizer, the one random.Random(seed)
samples (a fresh generator per context, as BIPIA's builders do).

Reads {"contexts": [...], "seeds": [...]} on stdin; writes {"starts":
[[code-point offsets] per context], "picked": {seed: [offset per context]}}.
"""
import json
import random
import sys

from nltk.tokenize.punkt import PunktSentenceTokenizer

job = json.load(sys.stdin)
splitter = PunktSentenceTokenizer()
starts = [[a for a, _ in splitter.span_tokenize(c)] for c in job["contexts"]]
picked = {}
for seed in job["seeds"]:
    picked[str(seed)] = [
        random.Random(seed).sample(list(splitter.span_tokenize(c)), k=1)[0][0] if s else None
        for c, s in zip(job["contexts"], starts)
    ]
json.dump({"starts": starts, "picked": picked}, sys.stdout)
