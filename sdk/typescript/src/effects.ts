/**
 * The sans-IO core's vocabulary: what a plan asks its driver to do (the Python SDK's
 * `runnel_client.effects`, docs/adr/0068).
 *
 * Every operation (an append with its backpressure retries, an upload's three calls, a
 * follow with its resume rules) is written once, as a plan: a generator that yields
 * effects and is sent back what each one gave. It does no I/O itself; `drive.ts` performs
 * the effects with `fetch`, and the unit tests perform them from a script. A
 * `TransportError` of an effect is thrown into the plan at its `yield`, so a plan decides
 * itself which ones it survives; any other error of the driver ends the plan.
 */

import type { TokenSource } from "./auth.js";
import { errorFromProblem, type Problem, type RunnelError } from "./errors.js";
import type { SseEvent } from "./sse.js";

/** An answer as a plan sees it: the whole body read (a subscription's only when not 200). */
export interface Answer {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

export type Query = { [name: string]: string | number | boolean };

/**
 * Send a request with the client's token; the answer is an `Answer`. `waits`: seconds the
 * server may hold the answer on purpose (a long-polled read), added to the driver's timeout.
 */
export interface SendEffect {
  kind: "send";
  method: string;
  path: string;
  query?: Query;
  json?: unknown;
  body?: Uint8Array;
  headers?: { [name: string]: string };
  waits?: number;
}

/**
 * Open a subscription (closing any the plan had open); the answer is an `Answer`.
 * `token` undefined is the client's own. `idleSeconds`: a connection that brings no
 * byte (no frame, no keepalive) for that long is broken off as a `TransportError`.
 */
export interface OpenEffect {
  kind: "open";
  path: string;
  query?: Query;
  headers: { [name: string]: string };
  token?: TokenSource;
  idleSeconds: number | null;
}

export type FollowStatus = "connecting" | "following" | "reconnecting";

export type Effect =
  | SendEffect
  | OpenEffect
  | { kind: "sleep"; seconds: number }
  | { kind: "token"; source: TokenSource }
  | { kind: "digest"; data: Uint8Array }
  | { kind: "next" }
  | { kind: "hangup" }
  | { kind: "emit"; item: unknown }
  | { kind: "status"; status: FollowStatus };

/** A plan returning `T`. */
export type Plan<T> = Generator<Effect, T, unknown>;

export function* send(request: Omit<SendEffect, "kind">): Plan<Answer> {
  return (yield { kind: "send", ...request }) as Answer;
}

export function* open(request: Omit<OpenEffect, "kind">): Plan<Answer> {
  return (yield { kind: "open", ...request }) as Answer;
}

/** The open subscription's next event; null when it ended. */
export function* next(): Plan<SseEvent | null> {
  return (yield { kind: "next" }) as SseEvent | null;
}

export function* hangup(): Plan<void> {
  yield { kind: "hangup" };
}

export function* sleep(seconds: number): Plan<void> {
  yield { kind: "sleep", seconds };
}

export function* freshToken(source: TokenSource): Plan<string> {
  return (yield { kind: "token", source }) as string;
}

/** The SHA-256 of `data`, in lower-case hex. */
export function* digest(data: Uint8Array): Plan<string> {
  return (yield { kind: "digest", data }) as string;
}

/** Hand `item` to the caller of an iterating operation; the plan goes on when it asks again. */
export function* emit(item: unknown): Plan<void> {
  yield { kind: "emit", item };
}

export function* report(status: FollowStatus): Plan<void> {
  yield { kind: "status", status };
}

const decoder = new TextDecoder();

export function textOf(answer: Answer): string {
  return decoder.decode(answer.body);
}

/** `Retry-After` in seconds (delta-seconds only), or null without a usable one. */
export function retryAfterOf(headers: Headers): number | null {
  const value = headers.get("Retry-After");
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

/** The error of an answer that is not a success. */
export function problemOf(answer: Answer): RunnelError {
  let problem: Problem;
  try {
    const parsed: unknown = JSON.parse(textOf(answer));
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new TypeError();
    problem = parsed as Problem;
  } catch {
    problem = { code: "http_error", detail: textOf(answer).slice(0, 200) };
  }
  return errorFromProblem(answer.status, problem, retryAfterOf(answer.headers));
}

/** The JSON of a 2xx answer; the `RunnelError` of its problem otherwise. */
export function checked<T>(answer: Answer): T {
  if (answer.status < 200 || answer.status >= 300) throw problemOf(answer);
  return (answer.body.length > 0 ? JSON.parse(textOf(answer)) : {}) as T;
}
