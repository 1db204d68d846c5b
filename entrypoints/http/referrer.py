"""`Referrer-Policy: no-referrer` on every response the application sends (ADR 0023).

A page or a subscription URL may carry a credential (`?access_token=`); with this
header no browser passes the URL on to anyone as a `Referer`. It is a `before_send`
hook, so it reaches every response: routes, errors, the 404 of an unknown path and
event streams alike.
"""

from __future__ import annotations

from litestar.datastructures import MutableScopeHeaders
from litestar.types import Message, Scope

POLICY = "no-referrer"


async def no_referrer(message: Message, scope: Scope) -> None:
    if message["type"] == "http.response.start":
        MutableScopeHeaders.from_message(message)["Referrer-Policy"] = POLICY
