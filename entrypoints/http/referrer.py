"""`Referrer-Policy: no-referrer` on every response the application sends (ADR 0023).

A page or a subscription URL may carry a credential (`?access_token=`); with this
header no browser passes the URL on to anyone as a `Referer`. `RequestIds`, the
outermost layer (ADR 0049), adds it to every response start it passes: routes, errors,
the 404 of an unknown path and event streams alike.
"""

from __future__ import annotations

POLICY = "no-referrer"
HEADER = (b"referrer-policy", POLICY.encode())
