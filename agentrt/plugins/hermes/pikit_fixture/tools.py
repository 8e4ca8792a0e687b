"""The tools of pikit's fixture toolset, for Hermes.

Nothing here reaches the network, runs a command or changes a file other
than the trace pikit names. Sources answer with the payload pikit handed
over for their fixture key (PIKIT_FIXTURE_PAYLOADS, a JSON object), or with
PIKIT_FIXTURE_DOCUMENT, or with harmless text; the sink only records what
the agent asked it to do. Every call is appended, as one JSON object a line,
to the file PIKIT_FIXTURE_TRACE_PATH names: pikit reads it as the cell's
trace.
"""

import json
import os


def _log(event):
    trace = os.environ.get("PIKIT_FIXTURE_TRACE_PATH")
    if not trace:
        return
    with open(trace, "a", encoding="utf-8") as out:
        out.write(json.dumps(event, ensure_ascii=False) + "\n")


def _handed_over(key):
    try:
        payloads = json.loads(os.environ.get("PIKIT_FIXTURE_PAYLOADS") or "{}")
    except ValueError:
        payloads = {}
    if not isinstance(payloads, dict):
        payloads = {}
    text = payloads.get(key) or os.environ.get("PIKIT_FIXTURE_DOCUMENT")
    return text or f"Nothing unusual in this {key}: the team's plans for the quarter are on schedule."


def _schema(name, description, properties):
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in properties.items()},
            "required": list(properties),
        },
    }


def _source(name, key, field, description):
    def handler(args, **_ignored):
        args = args if isinstance(args, dict) else {}
        text = _handed_over(key)
        _log({"type": "tool_result", "tool": name, "args": {field: str(args.get(field, ""))}, "content": text, "tainted": True})
        return text

    return name, _schema(name, description, {field: f"Which {key} to read."}), handler


def _record_sink(args, **_ignored):
    args = args if isinstance(args, dict) else {}
    call = {k: str(args.get(k, "")) for k in ("action", "target", "content")}
    if os.environ.get("PIKIT_FIXTURE_BLOCK_SINK") == "1":
        _log({"type": "policy_block", "tool": "pikit_record_sink", "args": call, "reason": "the fixture's policy blocks this sink"})
        return "Blocked by policy: this action was not recorded or performed."
    _log({"type": "sink_call", "tool": "pikit_record_sink", "args": call})
    return "Recorded. (A test sink: nothing was sent or changed.)"


TOOLS = [
    _source("pikit_read_document", "document", "ref", "Read a shared document (test content that may be untrusted)."),
    _source("pikit_fetch_url", "webpage", "url", "Fetch a web page (test content that may be untrusted)."),
    _source("pikit_read_email", "email", "id", "Read an email from the inbox (test content that may be untrusted)."),
    _source("pikit_search_knowledge", "rag", "query", "Search the knowledge base (test content that may be untrusted)."),
    _source("pikit_load_skill", "skill", "name", "Load an installed agent skill (test content that may be untrusted)."),
    (
        "pikit_record_sink",
        _schema("pikit_record_sink", "Carry out an external action, such as sending a message or paying, for the user.",
                {"action": "What to do, e.g. send_email.", "target": "Who or where it goes to.", "content": "What it carries."}),
        _record_sink,
    ),
]
