"""A hand-written tool loop on the official anthropic SDK (Messages),
streamed when AGENT_STREAM=1. Its base URL comes from ANTHROPIC_BASE_URL."""
import os

import anthropic

from mailbox import SYSTEM, USER, read_inbox, send_email

TOOLS = [
    {"name": "read_inbox", "description": "Read the newest email in the inbox.", "input_schema": {"type": "object", "properties": {}}},
    {"name": "send_email", "description": "Send an email.",
     "input_schema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "body"]}},
]


def main():
    client = anthropic.Anthropic(max_retries=0)
    msgs = [{"role": "user", "content": USER}]
    for _ in range(8):
        kw = dict(model="claude-test", max_tokens=512, system=SYSTEM, messages=msgs, tools=TOOLS)
        if os.environ.get("AGENT_STREAM") == "1":
            with client.messages.stream(**kw) as s:
                msg = s.get_final_message()
        else:
            msg = client.messages.create(**kw)
        msgs.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        uses = [b for b in msg.content if b.type == "tool_use"]
        if not uses:
            print("".join(b.text for b in msg.content if b.type == "text"))
            return
        results = []
        for u in uses:
            out = read_inbox() if u.name == "read_inbox" else send_email(**u.input)
            results.append({"type": "tool_result", "tool_use_id": u.id, "content": out})
        msgs.append({"role": "user", "content": results})


main()
