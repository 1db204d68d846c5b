/**
 * What a reader of both layers does with them (ADR 0019; the Python SDK's
 * `runnel_client.layers`, the same rules).
 *
 * A follow with `live` carries durable records (the answer, every one, in order) and
 * best-effort live chunks (a preview, not ordered against the records). A producer ties
 * them together by step: live chunks of a step carry `source` = the step's name (and
 * `attempt` from 1 when the step can be retried); the record holding the step's stored
 * text carries `idempotency_key` = that same name.
 *
 * Rules, applied by `follow()` to what it yields:
 * 1. once the record of step S arrived, every later live chunk of S is dropped, even one
 *    of a higher attempt: the stored text is the answer;
 * 2. a live chunk of S with an attempt below the highest seen for S is dropped; the first
 *    chunk of a higher attempt comes with `supersedes`: drop the earlier attempt's text;
 * 3. chunks without `source` name no step and pass untouched; a chunk without `attempt`
 *    is not subject to rule 2.
 * What was already shown is the reader's to remove: a record whose `idempotency_key` is S
 * means "remove S's live text". `LiveText` does that bookkeeping.
 */

import { LiveEvent, type StreamRecord } from "./wire.js";

/** Steps a follower remembers; the least recently seen is forgotten first. */
export const MAX_TRACKED_STEPS = 4096;

function remember<V>(table: Map<string, V>, step: string, value: V, limit: number): void {
  table.delete(step);
  table.set(step, value);
  while (table.size > limit) table.delete(table.keys().next().value as string);
}

/** Rules 1–3 over the frames of one follow (kept across reconnects). */
export class Steps {
  private readonly settled = new Map<string, true>();
  private readonly attempts = new Map<string, number>();
  /** Live chunks dropped by the rules. */
  dropped = 0;

  constructor(private readonly limit = MAX_TRACKED_STEPS) {}

  /** `record` arrived: its step takes no more live chunks. */
  settle(record: StreamRecord): void {
    const step = record.idempotency_key;
    if (typeof step !== "string") return;
    this.attempts.delete(step);
    remember(this.settled, step, true, this.limit);
  }

  /** The chunk as the caller sees it, or null when a rule drops it. */
  admit(frame: unknown): LiveEvent | null {
    const event = new LiveEvent(frame);
    const { source, attempt } = event;
    if (source === null) return event;
    if (this.settled.has(source)) {
      this.dropped += 1;
      return null;
    }
    if (attempt === null) return event;
    const highest = this.attempts.get(source);
    if (highest !== undefined && attempt < highest) {
      this.dropped += 1;
      return null;
    }
    remember(this.attempts, source, attempt, this.limit);
    return highest !== undefined && attempt > highest ? new LiveEvent(frame, true) : event;
  }
}

/** A chunk as text: a string as is, `{text}` by its text, anything else as JSON. */
export function chunkText(chunk: unknown): string {
  if (typeof chunk === "string") return chunk;
  if (typeof chunk === "object" && chunk !== null && typeof (chunk as { text?: unknown }).text === "string") {
    return (chunk as { text: string }).text;
  }
  return JSON.stringify(chunk) ?? "";
}

/** The live text of one step not settled yet: its current attempt's chunks. */
export interface LiveStep {
  source: string;
  chunks: unknown[];
  text: string;
}

/**
 * The live text a reader of both layers shows beside its records: for each step not
 * settled yet, the chunks of its current attempt, in arrival order. Feed it every item
 * `follow({live: true})` yields; a step's record removes the step's chunks.
 */
export class LiveText {
  private readonly steps = new Map<string, unknown[]>();

  apply(item: StreamRecord | LiveEvent): void {
    if (!(item instanceof LiveEvent)) {
      if (typeof item.idempotency_key === "string") this.steps.delete(item.idempotency_key);
      return;
    }
    if (item.source === null) return;
    if (item.supersedes) this.steps.set(item.source, []);
    const chunks = this.steps.get(item.source) ?? [];
    chunks.push(item.chunk);
    this.steps.set(item.source, chunks);
  }

  /** The chunks shown for `source` (none once its record arrived). */
  chunks(source: string): unknown[] {
    return [...(this.steps.get(source) ?? [])];
  }

  /** The steps with live text shown, in the order they started. */
  sources(): string[] {
    return [...this.steps.keys()];
  }

  /** Every step's live text, in the order the steps started. */
  view(): LiveStep[] {
    return this.sources().map((source) => {
      const chunks = this.chunks(source);
      return { source, chunks, text: chunks.map(chunkText).join("") };
    });
  }
}
