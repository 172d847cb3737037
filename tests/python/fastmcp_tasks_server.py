"""A real FastMCP server with the PyPI `fastmcp-tasks` extension (SEP-2663), over stdio.

Its one tool, `slow_sum`, is marked `task=TaskConfig(mode="required")`: it runs only as a
background task, and a client that does not declare `io.modelcontextprotocol/tasks` on the
call gets -32021. The task sleeps --seconds (default 1.5) and returns "sum is A+B".
"""

import argparse
import asyncio

from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=1.5)
ARGS = parser.parse_args()

mcp = FastMCP("fastmcp-tasks-fixture")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TaskConfig(mode="required"))
async def slow_sum(a: int, b: int) -> str:
    """Adds two numbers, slowly, as a background task."""
    await asyncio.sleep(ARGS.seconds)
    return f"sum is {a + b}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
