/**
 * Errors the SDK throws; each carries the server's problem+json `code`.
 *
 * Rules (the Python SDK's `runnel_client.errors`, the same table):
 * - every refusal is a `RunnelError` (`status`, `code`, `problem`, `retryAfter`);
 * - 429 `backpressure` is a `BackpressureError`, 410 `cursor_pruned` a `ResyncRequired`;
 * - a 401 is `TokenExpired` when the server says the token expired (a `reason` field
 *   wins; else a detail ending in `token expired`), `Unauthenticated` otherwise: a fresh
 *   copy of a bad token will not help;
 * - no answer at all (the network, a timeout) is a `TransportError`, which a follow and a
 *   producer retry themselves;
 * - `AppendFailed` is the one error a `Producer` throws when it gives up.
 */

export type Problem = { [field: string]: unknown };

export class RunnelError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problem: Problem;
  /** The answer's `Retry-After` in seconds, when it had one. */
  retryAfter: number | null = null;

  constructor(status: number, code: string, problem: Problem) {
    const detail = typeof problem.detail === "string" ? problem.detail : "";
    super(`${status} ${code}: ${detail}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.problem = problem;
  }
}

/** Still backpressured (429) after the call's bounded retries. */
export class BackpressureError extends RunnelError {}

/** Retention removed records after the reader's cursor (410): the reader must resync. */
export class ResyncRequired extends RunnelError {
  /** The stream's oldest retained sequence: `earliest - 1` is a cursor that reads on. */
  get earliest(): number {
    return Number(this.problem.earliest ?? 0);
  }
}

/** 401 for a token that is missing, malformed, badly signed, revoked or another issuer's. */
export class Unauthenticated extends RunnelError {}

/**
 * The token expired: take a fresh one and go on. Thrown for a request answered 401
 * because its token expired, and when the server ended a subscription at its token's
 * expiry (`event: end`, reason `token_expired`); then `lastSequence` is the cursor to
 * follow on from. `code` is `token_expired` either way.
 */
export class TokenExpired extends RunnelError {
  lastSequence: number | null;

  constructor(lastSequence: number | null = null, problem: Problem = {}) {
    const detail = lastSequence !== null
      ? `the subscription's token expired after sequence ${lastSequence}`
      : "the token expired";
    const body: Problem = { detail, ...problem, code: "token_expired" };
    if (lastSequence !== null) body.last_sequence = lastSequence;
    super(401, "token_expired", body);
    this.lastSequence = lastSequence;
  }
}

/** No answer came: the server could not be reached, the connection broke, or it timed out. */
export class TransportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransportError";
  }
}

/**
 * A `Producer` gave up on a batch: after `attempts` tries of a retryable failure (429,
 * 5xx, a transport error), or at once for a refusal no retry changes (422, 409
 * `stream_closed`, 413, …). `status`/`code` are the last answer's (`0` /
 * `transport_error` when none came); `records` are those not known to be stored, with
 * their idempotency keys, so sending them again later stores each at most once.
 */
export class AppendFailed extends RunnelError {
  readonly attempts: number;
  readonly records: WireRecordInput[];

  constructor(cause: unknown, attempts: number, records: WireRecordInput[]) {
    let status = 0;
    let code = "transport_error";
    let problem: Problem;
    if (cause instanceof RunnelError) {
      ({ status, code } = cause);
      problem = { ...cause.problem };
    } else {
      problem = { code, detail: String(cause) };
    }
    problem.detail = `gave up after ${attempts} attempt(s): ${String(problem.detail ?? "")}`;
    super(status, code, problem);
    this.attempts = attempts;
    this.records = records;
    this.cause = cause;
  }
}

/** A record as it is sent: a JSON `payload` or base64 `data`, an optional key. */
export interface WireRecordInput {
  payload?: unknown;
  data?: string;
  content_type?: string;
  idempotency_key?: string;
}

function expired(problem: Problem): boolean {
  const reason = problem.reason;
  if (typeof reason === "string") return reason === "token_expired";
  const detail = problem.detail;
  return typeof detail === "string" && detail.endsWith("token expired");
}

/** The error an answer's status and problem body mean. */
export function errorFromProblem(status: number, problem: Problem,
                                 retryAfter: number | null): RunnelError {
  const code = typeof problem.code === "string" ? problem.code : "http_error";
  let error: RunnelError;
  if (status === 429 && code === "backpressure") error = new BackpressureError(status, code, problem);
  else if (status === 410 && code === "cursor_pruned") error = new ResyncRequired(status, code, problem);
  else if (status === 401) {
    error = expired(problem) ? new TokenExpired(null, problem)
      : new Unauthenticated(status, code, problem);
  } else error = new RunnelError(status, code, problem);
  error.retryAfter = retryAfter;
  return error;
}
