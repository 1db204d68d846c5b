"""Use cases of the Durable Streams facade (ADR 0041); its HTTP wing is
`entrypoints/http/durable_streams/`."""
