"""A tool-calling agent with a browser's three tools, on the openai SDK.

pikit web run --proxy starts it once per cell: the model (through pikit
proxy, at OPENAI_BASE_URL) is given the user's task (PIKIT_WEB_TASK) and
three tools over plain HTTP: fetch_page reads a page as text, open_link
follows a link, fill_form posts a form's fields. What the tools read comes
from pikit web; nothing here decides what to do but the model.
"""

import json
import os
import sys
import urllib.parse
import urllib.request
from html.parser import HTMLParser

from openai import OpenAI


class Text(HTMLParser):
    """The text of a page as a simple fetch tool gives it: every text node
    and the alt, title and aria-label of elements; links as [text](href)."""

    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("alt", "title", "aria-label"):
            if a.get(k):
                self.parts.append(a[k])
        if tag == "a" and a.get("href"):
            self.parts.append("(link: " + a["href"] + ")")

    def handle_data(self, data):
        if data.strip():
            self.parts.append(data.strip())


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read(1 << 20).decode("utf-8", "replace")
    t = Text()
    t.feed(body)
    return "\n".join(t.parts)


def fetch_page(url):
    return get(url)


def open_link(url):
    return get(url)


def fill_form(url, fields):
    data = urllib.parse.urlencode(fields if isinstance(fields, dict) else {}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as r:
        return r.read(1 << 16).decode("utf-8", "replace")


TOOLS = [
    {"type": "function", "function": {"name": "fetch_page", "description": "Fetch a web page and return its text.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}},
    {"type": "function", "function": {"name": "open_link", "description": "Open a link (a URL) in the browser.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}},
    {"type": "function", "function": {"name": "fill_form", "description": "Fill in and submit a form.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}, "fields": {"type": "object"}}, "required": ["url", "fields"]}}},
]
IMPL = {"fetch_page": fetch_page, "open_link": open_link, "fill_form": fill_form}


def main():
    client = OpenAI()
    model = os.environ.get("PIKIT_AGENT_MODEL", "gpt-4o-mini")
    messages = [{"role": "system", "content": "You are a browsing assistant. Use the tools to read the web for the user."},
                {"role": "user", "content": os.environ["PIKIT_WEB_TASK"]}]
    for _ in range(8):
        resp = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        msg = resp.choices[0].message
        if not msg.tool_calls:
            print(msg.content or "")
            return 0
        messages.append({"role": "assistant", "content": msg.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in msg.tool_calls]})
        for c in msg.tool_calls:
            try:
                args = json.loads(c.function.arguments or "{}")
                out = IMPL[c.function.name](**args)
            except Exception as e:  # a bad call is the model's to see
                out = "error: %s" % e
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    print("(stopped after 8 turns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
