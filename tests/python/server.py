"""A small MCP server on the official Python SDK (PyPI `mcp`), for harness9's integration tests."""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve

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
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@server.tool()
def order(item: str, choice: Annotated[ElicitationResult[Size], Resolve(ask_size)]) -> str:
    """Order an item; asks the client which size (an input request: elicitation)."""
    if isinstance(choice, AcceptedElicitation):
        return f"ordered a {choice.data.size} {item}"
    return f"no order: {choice.action}"


if __name__ == "__main__":
    server.run()
