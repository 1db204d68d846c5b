"""The agent example's process: the DBOS workflow, and a small web app for the browser.

    python -m examples.agent.app --runnel-url URL --secret SECRET --dbos-url URL [--port 8090]

The browser never holds a Runnel token: the page talks to this app, which follows the
run's `answer` stream for it (forwarding `Last-Event-ID`, so a reload or a reconnect
resumes with nothing lost and nothing repeated) and appends each prompt to the run's input
stream `prompts`. Runnel delivers that record to the `conversation` workflow through its
DBOS wait service, and the workflow streams its answer back.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from dbos import DBOS, SetWorkflowID
from runnel_client import AsyncRunnelClient
from runnel_client.dbos_ids import workflow_id_for
from runnel_client.starlette import follow_response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from examples.agent.agent import ANSWER, PROMPTS, configure, conversation

TENANT, RUN = "demo", "agent-demo"
PAGE = Path(__file__).with_name("page.html")


def tokens(secret: str) -> Callable[[], str]:
    """A token provider: the SDK asks it for every request, so no token outlives an hour."""
    from entrypoints.auth.tokens import mint_token

    def token() -> str:
        return mint_token(secret, tenant=TENANT, sub="agent-example",
                          scopes=("streams:read", "streams:write"), ttl_seconds=3600)

    return token


async def ensure_streams(client: AsyncRunnelClient) -> None:
    """Create the run's two streams; a create with the same definition is answered 200."""
    for stream_id, direction in ((PROMPTS, "input"), (ANSWER, "output")):
        await client.create_stream(RUN, {"stream_id": stream_id, "direction": direction,
                                         "content_class": "output.text"})


def web_app(runnel_url: str, token: Callable[[], str]) -> Starlette:
    client = AsyncRunnelClient(runnel_url, token)

    async def page(_: Request) -> Response:
        return FileResponse(PAGE, media_type="text/html")

    async def prompt(request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        text = str(body.get("prompt", ""))[:2000]
        await client.append(RUN, PROMPTS, [{"payload": {"prompt": text}}])
        return JSONResponse({"accepted": True}, status_code=202)

    async def events(request: Request) -> Response:
        return await follow_response(client, request, RUN, ANSWER, live=True)

    return Starlette(routes=[Route("/", page), Route("/prompt", prompt, methods=["POST"]),
                             Route("/events", events)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runnel-url", required=True)
    parser.add_argument("--secret", required=True, help="the Runnel server's RUNNEL_JWT_SECRET")
    parser.add_argument("--dbos-url", required=True, help="the DBOS system database")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    token = tokens(args.secret)
    with httpx.Client(base_url=args.runnel_url) as probe:
        probe.get("/healthz").raise_for_status()
    configure(args.runnel_url, token)
    DBOS(config={"name": "runnel-agent-example", "system_database_url": args.dbos_url,
                  "application_version": "agent-example-1", "log_level": "WARNING"})
    DBOS.launch()

    async def start() -> None:
        async with AsyncRunnelClient(args.runnel_url, token) as client:
            await ensure_streams(client)

    asyncio.run(start())
    with SetWorkflowID(workflow_id_for(TENANT, RUN)):
        DBOS.start_workflow(conversation, RUN)
    print(f"agent example on http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(web_app(args.runnel_url, token), host="127.0.0.1", port=args.port,
                log_level="warning")


if __name__ == "__main__":
    main()
