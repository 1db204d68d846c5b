/**
 * What a run follower does with each SSE frame of `GET /runs/{run_id}/subscribe` (ADR
 * 0073; the Python SDK's `runnel_client.run_following`, the same rules).
 *
 * The follower keeps the compound cursor: each stream's last sequence it yielded. A
 * reconnect resumes with `Last-Event-ID` set to it (`stream_id=sequence` entries joined
 * by `,`, ascending, zeros left out), and a record at or below its stream's entry is
 * dropped, so a caller sees every record of every stream once, in its stream's order.
 * `end` ends one stream (kept in `ended`); `resync` throws `ResyncRequired` for its
 * stream; `run_end` ends the run follow: `erased` returns, `token_expired`,
 * `token_revoked` and `shutdown` mean what they mean for a single follow,
 * `too_many_streams` reconnects and is refused (400 `too_many_streams_to_follow`).
 */

import { ResyncRequired, TokenExpired, Unauthenticated } from "./errors.js";
import { Refused, Unavailable } from "./following.js";
import { Steps } from "./layers.js";
import { type LiveEvent, recordOf, type StreamRecord } from "./wire.js";

/** Every stream of the run is erased and every one followed has ended. */
export class RunEnded extends Error {}

export class RunFollowState {
  reconnects = 0;
  duplicates = 0;
  tokenRefreshes = 0;
  /** Streams closed and delivered whole, with their last sequence. */
  readonly ended = new Map<string, number>();
  readonly steps = new Map<string, Steps>();
  /** Each stream's last sequence yielded (a stream not named: none yet). */
  readonly cursor: Map<string, number>;

  constructor(cursor: Iterable<[string, number]> | { [streamId: string]: number } = {}) {
    this.cursor = new Map(Symbol.iterator in cursor
      ? cursor as Iterable<[string, number]> : Object.entries(cursor));
  }

  cursorText(): string {
    return [...this.cursor.entries()].filter(([, sequence]) => sequence > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([streamId, sequence]) => `${streamId}=${sequence}`).join(",");
  }

  headers(): { [name: string]: string } {
    const text = this.cursorText();
    return text ? { "Last-Event-ID": text, Accept: "text/event-stream" } : { Accept: "text/event-stream" };
  }

  /** One frame as the caller sees it (null: nothing to show); throws what ends a connection. */
  accept(event: string, data: string): StreamRecord | LiveEvent | null {
    const body = (data ? JSON.parse(data) : {}) as { [key: string]: unknown };
    const streamId = String(body.stream_id);
    if (event === "record") {
      const record = recordOf(body);
      if (record.sequence <= (this.cursor.get(streamId) ?? 0)) {
        this.duplicates += 1;
        return null;
      }
      this.cursor.set(streamId, record.sequence);
      this.stepsOf(streamId).settle(record);
      return record;
    }
    if (event === "live") return this.stepsOf(streamId).admit(body);
    if (event === "end") {
      this.ended.set(streamId, Number(body.last_sequence ?? 0));
      return null;
    }
    if (event === "resync") throw new ResyncRequired(410, String(body.code ?? "cursor_pruned"), body);
    if (event === "run_end") {
      const reason = body.reason;
      if (reason === "erased") throw new RunEnded();
      if (reason === "token_expired") throw new TokenExpired(0);
      if (reason === "token_revoked") {
        throw new Refused(new Unauthenticated(401, "unauthenticated", {
          ...body, detail: "the subscription's token was revoked" }), 0);
      }
      throw new Unavailable(`the run follow ended: ${String(reason)}`);
    }
    return null;
  }

  private stepsOf(streamId: string): Steps {
    let steps = this.steps.get(streamId);
    if (steps === undefined) {
      steps = new Steps();
      this.steps.set(streamId, steps);
    }
    return steps;
  }
}
