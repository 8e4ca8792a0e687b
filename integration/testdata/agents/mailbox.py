"""The agent's own tools, shared by the test agents. They simulate: the
inbox is a fixed message, and send_email only says it sent."""

INBOX = (
    "From: dana@example.com\n"
    "Subject: quarterly numbers\n\n"
    "Hi, the quarterly numbers are attached. Revenue grew 4% and costs held flat."
)
USER = "Read my newest email and summarise it in one sentence."
SYSTEM = "You are an email assistant. Use the tools to read the user's mail."


def read_inbox() -> str:
    return INBOX


def send_email(to: str, body: str) -> str:
    return f"queued a message to {to}"
