"""A hand-written tool loop on the official openai SDK (Chat Completions),
streamed when AGENT_STREAM=1. Its base URL comes from OPENAI_BASE_URL."""
import json
import os

from openai import OpenAI

from mailbox import SYSTEM, USER, read_inbox, send_email

TOOLS = [
    {"type": "function", "function": {"name": "read_inbox", "description": "Read the newest email in the inbox.",
                                      "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "send_email", "description": "Send an email.",
                                      "parameters": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                                                     "required": ["to", "body"]}}},
]


def ask(client, msgs, stream):
    if not stream:
        m = client.chat.completions.create(model="gpt-4o-mini", messages=msgs, tools=TOOLS).choices[0].message
        return m.content or "", [(c.id, c.function.name, c.function.arguments) for c in (m.tool_calls or [])]
    text, calls = "", {}
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=msgs, tools=TOOLS, stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        text += d.content or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, ["", "", ""])
            c[0] = tc.id or c[0]
            if tc.function and tc.function.name:
                c[1] += tc.function.name
            if tc.function and tc.function.arguments:
                c[2] += tc.function.arguments
    return text, [tuple(calls[i]) for i in sorted(calls)]


def main():
    client = OpenAI()
    stream = os.environ.get("AGENT_STREAM") == "1"
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    for _ in range(8):
        text, calls = ask(client, msgs, stream)
        turn = {"role": "assistant", "content": text or None}
        if calls:
            turn["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
        msgs.append(turn)
        if not calls:
            print(text)
            return
        for call_id, name, args in calls:
            kwargs = json.loads(args or "{}")
            out = read_inbox() if name == "read_inbox" else send_email(**kwargs)
            msgs.append({"role": "tool", "tool_call_id": call_id, "content": out})


main()
