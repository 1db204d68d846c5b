"""Who may call: bearer tokens and their keys, subscribe tokens, trusted proxies, origins."""
