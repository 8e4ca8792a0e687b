"""Run AgentDojo's own benchmark harness against an OpenAI-compatible server.

The AgentDojo equality test (agentdojo_equal_test.go) runs this beside
pikit, both against the same scripted server, and compares their verdicts
case by case. This is AgentDojo's pipeline as its benchmark script builds
it for an OpenAI model (system message, user query, model, tool loop),
with the "direct" attack, so nothing here decides a verdict: utility and
security come from agentdojo.benchmark.

    python3 agentdojo_run.py --base-url http://127.0.0.1:PORT/v1 \
        --version v1.2.2 --suite banking [--user-tasks user_task_0,...] > verdicts.jsonl

Each line: {"suite", "user_task", "injection_task" (null for a run
without injections), "utility", "security"}.
"""

import argparse
import json
import sys
import tempfile
import warnings


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--version", default="v1.2.2")
    p.add_argument("--suite", action="append", required=True)
    p.add_argument("--user-tasks", default="")
    p.add_argument("--logdir", default="", help="keep AgentDojo's per-run traces here")
    a = p.parse_args()

    import openai
    from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, load_system_message
    from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
    from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop, ToolsExecutor
    from agentdojo.attacks.attack_registry import load_attack
    from agentdojo.benchmark import benchmark_suite_with_injections, benchmark_suite_without_injections
    from agentdojo.logging import Logger, NullLogger
    from agentdojo.task_suite.load_suites import get_suite

    client = openai.OpenAI(base_url=a.base_url, api_key="unused", max_retries=0)
    llm = OpenAILLM(client, "scripted")
    pipeline = AgentPipeline(
        [SystemMessage(load_system_message(None)), InitQuery(), llm, ToolsExecutionLoop([ToolsExecutor(), llm])]
    )
    pipeline.name = "scripted"
    user_tasks = [t for t in a.user_tasks.split(",") if t] or None
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp, TraceDir(Logger, NullLogger, a.logdir or tmp)():
        run(a, pipeline, user_tasks, sys.stdout)


def TraceDir(logger, null, logdir):
    """A logger that logs nothing but gives AgentDojo's per-run trace
    logger a directory of its own (it writes each run's trace there)."""

    class Quiet(null):
        def __enter__(self):
            null.__enter__(self)
            self.logdir = logdir
            return logger.__enter__(self)

        def __exit__(self, *exc):
            return logger.__exit__(self, *exc)

    return Quiet


def run(a, pipeline, user_tasks, out):
    from agentdojo.attacks.attack_registry import load_attack
    from agentdojo.benchmark import benchmark_suite_with_injections, benchmark_suite_without_injections
    from agentdojo.task_suite.load_suites import get_suite

    for name in a.suite:
        suite = get_suite(a.version, name)
        attack = load_attack("direct", suite, pipeline)
        clean = benchmark_suite_without_injections(
            pipeline, suite, logdir=None, force_rerun=True, user_tasks=user_tasks, benchmark_version=a.version
        )
        for (user, _), utility in sorted(clean["utility_results"].items()):
            row = {"suite": name, "user_task": user, "injection_task": None, "utility": utility, "security": None}
            out.write(json.dumps(row) + "\n")
        attacked = benchmark_suite_with_injections(
            pipeline,
            suite,
            attack,
            logdir=None,
            force_rerun=True,
            user_tasks=user_tasks,
            verbose=False,
            benchmark_version=a.version,
        )
        for key, utility in sorted(attacked["utility_results"].items()):
            row = {
                "suite": name,
                "user_task": key[0],
                "injection_task": key[1],
                "utility": utility,
                "security": attacked["security_results"][key],
            }
            out.write(json.dumps(row) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
