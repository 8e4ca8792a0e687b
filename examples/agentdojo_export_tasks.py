"""Export one AgentDojo suite's tasks and tools as tasks.yaml, which
pikit import agentdojo reads beside environment.yaml and
injection_vectors.yaml (AgentDojo's tasks and tools are Python, not data). Each call of a user
task's ground truth carries the output AgentDojo's tool gave it, with the
injection vectors as {vector_id} placeholders, so the model sees in pikit
what it would see in AgentDojo.

    pip install agentdojo==0.1.35
    python3 agentdojo_export_tasks.py v1.2.2 workspace > suites/workspace/tasks.yaml

Written against agentdojo 0.1.35 (benchmark version v1.2.2, which
agentdojo_score.py scores by default); the benchmark suite's AgentDojo test
runs it.
"""
import json
import sys

import yaml
from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite

version, name = sys.argv[1:3]
suite = get_suite(version, name)


def plain(x):
    return json.loads(json.dumps(x, default=str))


def calls(cs):
    out = []
    for c in cs:
        if isinstance(c, dict):
            out.append(plain({"function": c["function"], "args": dict(c["args"])}))
        else:
            out.append(plain({"function": c.function, "args": dict(c.args)}))
    return out


def ground_truth_run(task):
    """The user task's ground truth, run by AgentDojo with every injection
    vector set to its placeholder ({vector_id}): its calls, each with the
    output AgentDojo's tool gave, and the vectors those outputs show (the
    task's injection candidates, as AgentDojo's attacks find them)."""
    placeholders = {v: "{" + v + "}" for v in suite.get_injection_vector_defaults()}
    env = suite.load_and_inject_default_environment(placeholders)
    _, _, _, msgs, _ = GroundTruthPipeline(task).query(task.PROMPT, FunctionsRuntime(suite.tools), env)
    outputs = []
    for m in msgs:
        if m.get("role") != "tool":
            continue
        text = m.get("error") or "\n".join(b.get("content") or "" for b in (m.get("content") or []))
        outputs.append(text)
    seen = "\n".join(outputs)
    return outputs, [v for v, ph in placeholders.items() if ph in seen]


def user_task(t, env):
    truth = calls(t.ground_truth(env))
    outputs, candidates = ground_truth_run(t)
    if len(outputs) == len(truth):
        for c, out in zip(truth, outputs):
            c["output"] = out
    return {
        "id": t.ID,
        "prompt": t.PROMPT,
        "ground_truth_output": t.GROUND_TRUTH_OUTPUT,
        "ground_truth": truth,
        "injection_candidates": candidates,
    }


env = suite.load_and_inject_default_environment({})
yaml.safe_dump(
    {
        "suite": name,
        "version": version,
        "tools": [
            {
                "name": f.name,
                "description": f.description,
                "parameters": f.parameters.model_json_schema(),
                "dependencies": sorted(
                    d.env_dependency for d in f.dependencies.values() if isinstance(d.env_dependency, str)
                ),
            }
            for f in suite.tools
        ],
        "user_tasks": [user_task(t, env) for t in suite.user_tasks.values()],
        "injection_tasks": [
            {"id": t.ID, "goal": t.GOAL, "ground_truth": calls(t.ground_truth(env))}
            for t in suite.injection_tasks.values()
        ],
    },
    sys.stdout,
    sort_keys=False,
    allow_unicode=True,
)
