/**
 * The follow loop, written once as a plan (`effects.ts`; the Python SDK's
 * `runnel_client.follow_plan`, the same decisions). What each frame means is
 * `FollowState.accept`'s (`following.ts`); this is when to (re)subscribe, with which
 * token and cursor, and when to ack.
 *
 * Rules:
 * - every record above the cursor is emitted once, in order, across reconnects: each
 *   subscription resumes with `Last-Event-ID` = the cursor; it returns when the stream
 *   was closed and every record was emitted;
 * - with `consumer` it starts from that consumer's acked sequence (if above `after`) and
 *   acks as it goes (`Acker`); `start: "tail"` starts at the head; `waitForStream` asks
 *   again, after a backoff, for a stream that does not exist yet (404);
 * - a connection that ends without an `end` frame, a transport error, a 5xx or a node
 *   shutting down: reconnect after `backoff(attempt)` (reset by each open that succeeds);
 * - the token's expiry (an `end` frame, or a 401 to a renewable token that was not just
 *   taken): with a `tokenProvider` take a fresh token from it, with a function as the
 *   client's token ask it again, and resume at once; with a string token throw
 *   `TokenExpired` at the cursor;
 * - 410 (`resync` frame, or the answer to an open): `onResync(error)` gives the cursor to
 *   go on from; without it `ResyncRequired` is thrown;
 * - any other refusal (401 to a fresh token, 403, 404, a revoked token) is thrown.
 */

import { renewable, type TokenSource } from "./auth.js";
import * as calls from "./calls.js";
import { emit, freshToken, hangup, next, open, type Plan, report, sleep } from "./effects.js";
import { ResyncRequired, RunnelError, TokenExpired, TransportError } from "./errors.js";
import { Acker, backoff, FollowState, Refused, refusal, startCursor, StreamEnded, Unavailable } from "./following.js";
import { LiveEvent, type StreamInfo, streamPath } from "./wire.js";

/** The server's slow-reader cutoff (docs/api.md, Subscribe): a silent connection as long is taken as broken. */
export const DEFAULT_IDLE_SECONDS = 60;

export interface FollowOptions {
  runId: string;
  streamId: string;
  after?: number;
  live?: boolean;
  onResync?: (error: ResyncRequired) => number;
  state?: FollowState;
  tokenProvider?: TokenSource;
  consumer?: string;
  ackEvery?: number;
  waitForStream?: boolean;
  start?: "tail";
  idleSeconds?: number | null;
}

export function* follow(options: FollowOptions, clientToken: TokenSource): Plan<void> {
  let after = options.after ?? 0;
  let state = options.state;
  if (options.consumer !== undefined || options.start !== undefined || options.waitForStream) {
    const info = yield* streamInfo(options);
    after = startCursor(info.status, state ? state.cursor : after, options.consumer, options.start);
  }
  state ??= new FollowState(after);
  state.cursor = Math.max(state.cursor, after);
  const acker = options.consumer !== undefined ? new Acker(options.ackEvery ?? 1, state.cursor) : null;
  const path = streamPath(options.runId, options.streamId, "subscribe");
  const query = options.live ? { live: "true" } : undefined;
  const idleSeconds = options.idleSeconds === undefined ? DEFAULT_IDLE_SECONDS : options.idleSeconds;
  const provider = options.tokenProvider;
  const canRenew = provider !== undefined || renewable(clientToken);
  let token: TokenSource = provider !== undefined ? yield* freshToken(provider) : clientToken;
  let attempt = 0;
  let fresh = true;
  for (;;) {
    try {
      const response = yield* open({ path, query, headers: state.headers(), token, idleSeconds });
      refusal(response, state.cursor, canRenew && !fresh);
      attempt = 0;
      fresh = false;
      yield* report("following");
      for (let frame = yield* next(); frame !== null; frame = yield* next()) {
        const item = state.accept(frame.event, frame.data);
        if (item === null) continue;
        yield* emit(item); // the caller is done with it when the plan goes on
        if (acker !== null && !(item instanceof LiveEvent)) {
          yield* ackUpTo(options, acker, state, acker.passed(item.sequence));
        }
      }
    } catch (error) {
      if (error instanceof Refused) throw error.error;
      if (error instanceof StreamEnded) {
        yield* hangup();
        if (acker !== null) yield* ackUpTo(options, acker, state, acker.final());
        return;
      }
      if (error instanceof TokenExpired) {
        if (!canRenew) throw error;
        yield* hangup();
        if (provider !== undefined) token = yield* freshToken(provider);
        fresh = true;
        state.tokenRefreshes += 1;
        continue; // resume at once from the cursor, with a fresh token
      }
      if (error instanceof ResyncRequired) {
        if (options.onResync === undefined) throw error;
        state.cursor = options.onResync(error);
      } else if (!(error instanceof TransportError || error instanceof Unavailable)) {
        throw error;
      } // the server went away or is starting/stopping: reconnect
    }
    yield* hangup();
    yield* report("reconnecting");
    attempt += 1;
    state.reconnects += 1;
    yield* sleep(backoff(attempt));
  }
}

/** The definition and status; with `waitForStream` a 404 is asked again after a backoff. */
function* streamInfo(options: FollowOptions): Plan<StreamInfo> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return yield* calls.getStream(options.runId, options.streamId);
    } catch (error) {
      if (!(options.waitForStream && error instanceof RunnelError && error.status === 404)) throw error;
    }
    yield* sleep(backoff(attempt));
  }
}

function* ackUpTo(options: FollowOptions, acker: Acker, state: FollowState,
                  sequence: number | null): Plan<void> {
  if (sequence === null || options.consumer === undefined) return;
  try {
    yield* calls.ack(options.runId, options.streamId, options.consumer, sequence);
  } catch (error) {
    acker.failed(sequence, error, state);
    return;
  }
  acker.ackedUpTo(sequence, state);
}
