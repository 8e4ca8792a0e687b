"""Judge replies with spikee's own judges (spikee.judge.call_judge).

Reads JSON lines {"judge_name", "judge_args", "content", "reply"} on stdin;
writes one JSON true or false a line: whether spikee counts the attack a
success.
"""
import json
import sys

from spikee.judge import call_judge

for line in sys.stdin:
    job = json.loads(line)
    entry = {"judge_name": job["judge_name"], "judge_args": job["judge_args"], "content": job["content"]}
    print(json.dumps(bool(call_judge(entry, job["reply"]))))
