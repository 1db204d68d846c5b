/**
 * When a producer tries a batch again, and how long it waits first (the Python SDK's
 * `runnel_client.retrying`, the same rules).
 *
 * Rules:
 * - retried: 429 (waiting at least its `Retry-After`, as for any answer that has one),
 *   any 5xx (`store_unavailable`, `region_fenced`, a node draining, …) and transport
 *   errors: the batch carries idempotency keys, so a batch stored before its answer got
 *   lost is stored once;
 * - never retried: any other 4xx (the same request gets the same answer);
 * - waits grow exponentially from `baseSeconds` up to `maxSeconds`, each drawn over its
 *   upper half so producers cut at once do not come back at once;
 * - after `maxAttempts` tries the producer gives up (`AppendFailed`).
 */

import { RunnelError, TransportError } from "./errors.js";
import { uniform } from "./following.js";

export class RetryPolicy {
  readonly maxAttempts: number;
  readonly baseSeconds: number;
  readonly maxSeconds: number;

  constructor(options: { maxAttempts?: number; baseSeconds?: number; maxSeconds?: number } = {}) {
    this.maxAttempts = options.maxAttempts ?? 6;
    this.baseSeconds = options.baseSeconds ?? 0.2;
    this.maxSeconds = options.maxSeconds ?? 10;
    if (this.maxAttempts < 1 || this.baseSeconds < 0 || this.maxSeconds < 0) {
      throw new RangeError("maxAttempts must be ≥ 1 and waits ≥ 0");
    }
  }

  retryable(error: unknown): boolean {
    if (error instanceof RunnelError) return error.status === 429 || error.status >= 500;
    return error instanceof TransportError;
  }

  /** Seconds to wait after failed try number `attempt` (from 1). */
  delay(attempt: number, error: unknown, draw: (low: number, high: number) => number = uniform): number {
    const ceiling = Math.min(this.maxSeconds, this.baseSeconds * 2 ** Math.min(attempt - 1, 30));
    const wait = draw(ceiling / 2, ceiling);
    return error instanceof RunnelError && error.retryAfter !== null ? Math.max(wait, error.retryAfter) : wait;
  }
}
