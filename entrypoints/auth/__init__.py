"""Who is calling: bearer tokens and their keys, subscribe tokens, trusted proxies."""
