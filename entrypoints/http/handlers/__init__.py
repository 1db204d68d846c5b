"""Route handlers: parse → call a use case → shape the response. Nothing else.

They are plain async functions; `entrypoints.http.routes` binds them to paths,
methods, status codes and body limits.
"""
