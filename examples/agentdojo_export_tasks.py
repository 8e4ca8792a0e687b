"""Export one AgentDojo suite's tasks and tools as tasks.yaml, which
pikit import agentdojo reads beside environment.yaml and
injection_vectors.yaml (AgentDojo's tasks and tools are Python, not data).

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


canaries = {v: f"<CANARY---{v}--->" for v in suite.get_injection_vector_defaults()}


def candidates(task):
    """The injection vectors the user task's ground truth shows the model."""
    env = suite.load_and_inject_default_environment(canaries)
    _, _, _, msgs, _ = GroundTruthPipeline(task).query(task.PROMPT, FunctionsRuntime(suite.tools), env)
    seen = "\n".join(str(m.get("content")) for m in msgs)
    return [v for v, c in canaries.items() if c in seen]


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
        "user_tasks": [
            {
                "id": t.ID,
                "prompt": t.PROMPT,
                "ground_truth_output": t.GROUND_TRUTH_OUTPUT,
                "ground_truth": calls(t.ground_truth(env)),
                "injection_candidates": candidates(t),
            }
            for t in suite.user_tasks.values()
        ],
        "injection_tasks": [
            {"id": t.ID, "goal": t.GOAL, "ground_truth": calls(t.ground_truth(env))}
            for t in suite.injection_tasks.values()
        ],
    },
    sys.stdout,
    sort_keys=False,
    allow_unicode=True,
)
