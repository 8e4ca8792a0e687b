"""An agent on LangChain: ChatOpenAI with bound tools in the usual
tool-message loop. ChatOpenAI reads OPENAI_BASE_URL."""
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import mailbox


@tool
def read_inbox() -> str:
    """Read the newest email in the inbox."""
    return mailbox.read_inbox()


@tool
def send_email(to: str, body: str) -> str:
    """Send an email to an address."""
    return mailbox.send_email(to, body)


def main():
    tools = {t.name: t for t in (read_inbox, send_email)}
    llm = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools(list(tools.values()))
    msgs = [SystemMessage(mailbox.SYSTEM), HumanMessage(mailbox.USER)]
    for _ in range(8):
        ai = llm.invoke(msgs)
        msgs.append(ai)
        if not ai.tool_calls:
            print(ai.content)
            return
        for call in ai.tool_calls:
            msgs.append(ToolMessage(tools[call["name"]].invoke(call["args"]), tool_call_id=call["id"]))


main()
