"""An OpenAI Agents SDK agent whose tools come from an MCP server over
streamable HTTP (pikit mcp run gives the endpoint in PIKIT_MCP_URL, and
the request in PIKIT_USER_MESSAGE). Its model is at OPENAI_BASE_URL."""
import asyncio
import os

from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

set_tracing_disabled(True)


async def main():
    async with MCPServerStreamableHttp(params={"url": os.environ["PIKIT_MCP_URL"]}, cache_tools_list=False) as tools:
        agent = Agent(name="mail", instructions="You are an email assistant.", mcp_servers=[tools], model="gpt-4o-mini")
        result = await Runner.run(agent, os.environ["PIKIT_USER_MESSAGE"], max_turns=8)
        print(result.final_output)


asyncio.run(main())
