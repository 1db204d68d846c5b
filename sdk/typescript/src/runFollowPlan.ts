/**
 * The run follow loop behind `followRun`, written once as a plan (`effects.ts`; the
 * Python SDK's `runnel_client.run_follow_plan`, the same decisions): when to
 * (re)subscribe to the run, with which token and compound cursor. What each frame means
 * is `RunFollowState.accept`'s (`runFollowing.ts`).
 *
 * Rules: as `followPlan.ts`, without consumers; every record of every stream the caller
 * may read is emitted once, in its stream's order, across reconnects (each resumes with
 * `Last-Event-ID` = the compound cursor); it returns when the run is erased. A stream's
 * 410 asks `onResync(error)` for that stream's cursor (`error.problem.stream_id`).
 */

import { renewable, type TokenSource } from "./auth.js";
import { emit, freshToken, hangup, next, open, type Plan, report, sleep } from "./effects.js";
import { ResyncRequired, TokenExpired, TransportError } from "./errors.js";
import { DEFAULT_IDLE_SECONDS } from "./followPlan.js";
import { backoff, Refused, refusal, Unavailable } from "./following.js";
import { RunEnded, RunFollowState } from "./runFollowing.js";
import { runPath } from "./wire.js";

export interface RunFollowOptions {
  runId: string;
  /** Stream id to the last sequence seen; a stream not named starts at its first record. */
  after?: { [streamId: string]: number };
  live?: boolean;
  /** Only these streams (at most 64). */
  streams?: string[];
  /** Only the streams pinned to this content class. */
  contentClass?: string;
  onResync?: (error: ResyncRequired) => number;
  state?: RunFollowState;
  tokenProvider?: TokenSource;
  idleSeconds?: number | null;
}

export function* followRun(options: RunFollowOptions, clientToken: TokenSource): Plan<void> {
  const state = options.state ?? new RunFollowState();
  for (const [streamId, sequence] of Object.entries(options.after ?? {})) {
    state.cursor.set(streamId, Math.max(state.cursor.get(streamId) ?? 0, sequence));
  }
  const query: { [name: string]: string } = {};
  if (options.live) query.live = "true";
  if (options.streams !== undefined) query.streams = options.streams.join(",");
  if (options.contentClass !== undefined) query.content_class = options.contentClass;
  const path = runPath(options.runId, "subscribe");
  const idleSeconds = options.idleSeconds === undefined ? DEFAULT_IDLE_SECONDS : options.idleSeconds;
  const provider = options.tokenProvider;
  const canRenew = provider !== undefined || renewable(clientToken);
  let token: TokenSource = provider !== undefined ? yield* freshToken(provider) : clientToken;
  let attempt = 0;
  let fresh = true;
  for (;;) {
    try {
      const response = yield* open({ path, query, headers: state.headers(), token, idleSeconds });
      refusal(response, 0, canRenew && !fresh);
      attempt = 0;
      fresh = false;
      yield* report("following");
      for (let frame = yield* next(); frame !== null; frame = yield* next()) {
        const item = state.accept(frame.event, frame.data);
        if (item !== null) yield* emit(item); // the caller is done with it when the plan goes on
      }
    } catch (error) {
      if (error instanceof Refused) throw error.error;
      if (error instanceof RunEnded) {
        yield* hangup();
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
        state.cursor.set(String(error.problem.stream_id), options.onResync(error));
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
