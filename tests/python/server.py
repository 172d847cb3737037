"""A small MCP server on the official Python SDK (PyPI `mcp`), for harness9's integration tests."""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve

server = MCPServer("py-fixture")


class Size(BaseModel):
    size: str = "medium"


def ask_size() -> Elicit[Size]:
    return Elicit("Which size?", Size)


@server.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"hello, {name}"


@server.tool()
def echo(text: str) -> str:
    """Return the text as it came (the benchmark's round trip)."""
    return text


@server.tool()
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@server.tool()
def order(item: str, choice: Annotated[ElicitationResult[Size], Resolve(ask_size)]) -> str:
    """Order an item; asks the client which size (an input request: elicitation)."""
    if isinstance(choice, AcceptedElicitation):
        return f"ordered a {choice.data.size} {item}"
    return f"no order: {choice.action}"


@server.tool()
async def learn(name: str, ctx: Context) -> str:
    """Add a tool called `name` (it answers "learned") and tell subscribers the list changed."""

    def learned() -> str:
        return "learned"

    server.add_tool(learned, name=name, description="A tool added at run time.")
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Log a message at debug and at error, then answer."""
    await ctx.log("debug", "chatty debug")
    await ctx.log("error", "chatty error")
    return "logged"


@server.tool()
async def touch(ctx: Context) -> str:
    """Tell subscribers that note://hello changed."""
    await ctx.notify_resource_updated("note://hello")
    return "touched"


@server.resource("note://hello", mime_type="text/plain", description="A short note.")
def hello_note() -> str:
    return "hello from a resource"


@server.prompt()
def review(code: str) -> str:
    """Ask for a review of `code`."""
    return f"Please review: {code}"


if __name__ == "__main__":
    server.run()
