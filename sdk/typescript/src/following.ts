/**
 * What a follower does with each SSE frame (the Python SDK's `runnel_client.following`,
 * the same rules).
 *
 * The follower keeps the cursor: a reconnect resumes with `Last-Event-ID` set to the
 * last sequence it yielded, and anything at or below it is dropped, so a caller sees
 * every record exactly once, in order. The server ends a subscription when its token
 * expires (`event: end`, reason `token_expired`, ADR 0023): a renewable token is asked
 * again and the follow resumes at once. A node that stops ends its subscriptions with
 * reason `shutdown` (ADR 0029): reconnect after a jittered backoff. A token revoked under
 * an open subscription (reason `token_revoked`, ADR 0060) is a refusal: no fresh token
 * from the same source would be accepted. With `live` the two-layer rules of `layers.ts`
 * apply (ADR 0019).
 */

import type { Answer } from "./effects.js";
import { problemOf } from "./effects.js";
import { ResyncRequired, RunnelError, TokenExpired, TransportError, Unauthenticated } from "./errors.js";
import { Steps } from "./layers.js";
import { type LiveEvent, recordOf, type StreamRecord, type StreamStatus } from "./wire.js";

/** The stream was closed and every record was delivered. */
export class StreamEnded extends Error {}

/** A 5xx answer to a subscription, or a node shutting down: reconnect. */
export class Unavailable extends Error {}

/** The server refused a subscription for good: throw `error` to the caller. */
export class Refused extends Error {
  constructor(readonly error: RunnelError, cursor: number) {
    super(error.message);
    if (error instanceof TokenExpired) error.lastSequence = cursor;
  }
}

export class FollowState {
  reconnects = 0;
  duplicates = 0;
  gaps = 0;
  /** Fresh tokens taken after the server ended the subscription at its token's expiry. */
  tokenRefreshes = 0;
  /** Acks sent for the follow's consumer. */
  acks = 0;
  /** Acks lost to a transport error or a 5xx (the next ack covers them). */
  ackFailures = 0;
  readonly steps: Steps = new Steps();

  constructor(public cursor = 0) {}

  /** Live chunks dropped by the two-layer rules (a settled step, an older attempt). */
  get liveDropped(): number {
    return this.steps.dropped;
  }

  headers(): { [name: string]: string } {
    return { "Last-Event-ID": String(this.cursor), Accept: "text/event-stream" };
  }

  /** One frame as the caller sees it (null: nothing to show); throws what ends a connection. */
  accept(event: string, data: string): StreamRecord | LiveEvent | null {
    if (event === "record") {
      const record = recordOf(JSON.parse(data));
      if (record.sequence <= this.cursor) {
        this.duplicates += 1;
        return null;
      }
      if (record.sequence !== this.cursor + 1) this.gaps += 1;
      this.cursor = record.sequence;
      this.steps.settle(record);
      return record;
    }
    if (event === "live") return this.steps.admit(JSON.parse(data));
    if (event === "end") {
      const end: unknown = data ? JSON.parse(data) : {};
      const reason = typeof end === "object" && end !== null ? (end as { reason?: unknown }).reason : null;
      if (reason === "token_expired") throw new TokenExpired(this.cursor);
      if (reason === "shutdown") throw new Unavailable("the node is shutting down");
      if (reason === "token_revoked") {
        throw new Refused(new Unauthenticated(401, "unauthenticated", {
          ...(end as object), detail: "the subscription's token was revoked" }), this.cursor);
      }
      throw new StreamEnded();
    }
    if (event === "resync") {
      const problem = JSON.parse(data) as { code?: unknown };
      throw new ResyncRequired(410, String(problem.code ?? "cursor_pruned"), problem);
    }
    return null;
  }
}

/**
 * What a subscription's answer other than 200 means: `Unavailable` for a 5xx (reconnect),
 * `ResyncRequired` (410), `TokenExpired` for a 401 when `expired` (a renewable token
 * that was not fresh: renew it), else `Refused` (throw it to the caller).
 */
export function refusal(answer: Answer, cursor: number, expired: boolean): void {
  if (answer.status === 200) return;
  if (answer.status >= 500) throw new Unavailable(`${answer.status}`);
  const error = problemOf(answer);
  if (error.status === 401 && expired) throw new TokenExpired(cursor);
  if (error instanceof ResyncRequired) throw error;
  throw new Refused(error, cursor);
}

/**
 * Where a follow starts, from the stream's status: the head with `start: "tail"`, else
 * the consumer's acked sequence (or `after` if higher), else `after`.
 */
export function startCursor(status: StreamStatus, after: number, consumer: string | undefined,
                            start: "tail" | undefined): number {
  if (start === "tail") return Math.max(after, Number(status.head ?? 0));
  if (consumer === undefined) return after;
  const acks = status.consumers ?? {};
  if (!(consumer in acks)) {
    throw new RunnelError(404, "consumer_not_found", {
      code: "consumer_not_found",
      detail: `consumer ${JSON.stringify(consumer)} is not declared in the stream's definition` });
  }
  return Math.max(after, Number(acks[consumer]));
}

/**
 * When a follow acks its consumer. A record counts as done once the caller asks for the
 * next item (it finished with the one before), so a crash repeats at most `every`
 * records and loses none; the last done record is acked when the stream ends.
 */
export class Acker {
  done: number;

  constructor(readonly every: number, public acked: number) {
    if (!Number.isInteger(every) || every < 1) throw new RangeError("ackEvery must be ≥ 1");
    this.done = acked;
  }

  /** The caller is done with `sequence`: the sequence to ack now, if any. */
  passed(sequence: number): number | null {
    this.done = Math.max(this.done, sequence);
    return this.done - this.acked >= this.every ? this.done : null;
  }

  final(): number | null {
    return this.done > this.acked ? this.done : null;
  }

  ackedUpTo(sequence: number, state: FollowState): void {
    this.acked = sequence;
    state.acks += 1;
  }

  /**
   * An ack of `sequence` went wrong: fine when another follower of the consumer acked
   * further (`ack_regression`); counted when lost to the network or a 5xx (the next ack
   * covers it); thrown otherwise (403 `consumer_scope`, …).
   */
  failed(sequence: number, error: unknown, state: FollowState): void {
    if (error instanceof RunnelError && error.code === "ack_regression") this.acked = sequence;
    else if (error instanceof TransportError || (error instanceof RunnelError && error.status >= 500)) {
      state.ackFailures += 1;
    } else throw error;
  }
}

/**
 * Seconds before reconnect `attempt`: exponential up to 5 s, jittered over its upper
 * half, so readers cut at once (a node stopping) do not come back at once.
 */
export function backoff(attempt: number, draw: (low: number, high: number) => number = uniform): number {
  const ceiling = Math.min(5, 0.1 * 2 ** Math.min(attempt, 6));
  return draw(ceiling / 2, ceiling);
}

export function uniform(low: number, high: number): number {
  return low + Math.random() * (high - low);
}
