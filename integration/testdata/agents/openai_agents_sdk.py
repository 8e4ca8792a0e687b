"""An agent on the OpenAI Agents SDK (Responses API, its default),
streamed when AGENT_STREAM=1. Tracing upload is off: nothing leaves the
machine but the requests to OPENAI_BASE_URL."""
import asyncio
import os

from agents import Agent, Runner, function_tool, set_tracing_disabled

import mailbox

set_tracing_disabled(True)


@function_tool
def read_inbox() -> str:
    """Read the newest email in the inbox."""
    return mailbox.read_inbox()


@function_tool
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: the recipient's address.
        body: the message.
    """
    return mailbox.send_email(to, body)


async def main():
    agent = Agent(name="mail", instructions=mailbox.SYSTEM, tools=[read_inbox, send_email], model="gpt-4o-mini")
    if os.environ.get("AGENT_STREAM") == "1":
        result = Runner.run_streamed(agent, mailbox.USER, max_turns=8)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, mailbox.USER, max_turns=8)
    print(result.final_output)


asyncio.run(main())
