"""The HTTP API (Litestar): routes, SSE, auth, problem+json errors.

Rules:
- this `__init__` imports none of the package's modules: importing one of them (`cors`,
  `problems`, …) never builds the app, so modules the app is built from may import them;
  `entrypoints.http.app` builds it (`create_app`, `create_asgi_app`).
"""
