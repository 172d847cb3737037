"""A small MCP server on the official Python SDK (PyPI `mcp`), for harness9's integration tests."""

import json

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    CreateMessageResult,
    ImageContent,
    CreateMessageResultWithTools,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    Tool,
    ToolUseContent,
)

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


class Proceed(BaseModel):
    proceed: bool = True


@server.tool()
async def confirm(ctx: Context) -> str:
    """Asks whether to proceed with ctx.elicit (a server-initiated request, not an input request)."""
    answer = await ctx.elicit("Proceed?", Proceed)
    return f"answered: {answer.action}"


def ask_poem(topic: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Write a line about {topic}"))],
        max_tokens=64,
        system_prompt="You are a poet.",
        model_preferences=ModelPreferences(hints=[ModelHint(name="haiku")]),
    )


@server.tool()
def poem(topic: str, line: Annotated[CreateMessageResult, Resolve(ask_poem)]) -> str:
    """A line about the topic from the client's model (an input request: sampling)."""
    text = line.content.text if isinstance(line.content, TextContent) else str(line.content)
    return f"poem by {line.model}: {text}"


def ask_plan(city: str) -> Sample:
    lookup = Tool(
        name="lookup",
        description="Look up the weather in a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Weather in {city}?"))],
        max_tokens=64,
        tools=[lookup],
    )


@server.tool()
def plan(city: str, step: Annotated[CreateMessageResultWithTools, Resolve(ask_plan)]) -> str:
    """What the client's model would call first for the weather in `city` (sampling with tools)."""
    blocks = step.content if isinstance(step.content, list) else [step.content]
    calls = [f"{b.name}({json.dumps(b.input, sort_keys=True)})" for b in blocks if isinstance(b, ToolUseContent)]
    return f"stop={step.stop_reason}; " + ", ".join(calls)


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


# A 1x1 PNG.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@server.prompt()
def look() -> list[UserMessage]:
    """Ask what a picture shows (a text and an image)."""
    return [
        UserMessage("What does this picture show?"),
        UserMessage(ImageContent(type="image", data=PIXEL, mime_type="image/png")),
    ]


if __name__ == "__main__":
    server.run()
