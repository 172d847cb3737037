"""A small MCP server on the official Python SDK (PyPI `mcp`), for harness9's integration tests."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-fixture")


@server.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"hello, {name}"


@server.tool()
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


if __name__ == "__main__":
    server.run()
