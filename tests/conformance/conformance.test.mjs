import { runConformanceTests } from "@durable-streams/server-conformance-tests"
runConformanceTests({ baseUrl: process.env.CONFORMANCE_BASE_URL, longPollTimeoutMs: Number(process.env.CONFORMANCE_LONG_POLL_MS ?? 2000) })
