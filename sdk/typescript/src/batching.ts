/**
 * How a producer names and groups its records before it sends them (the Python SDK's
 * `runnel_client.batching`, the same rules).
 *
 * Rules:
 * - keys: the n-th record a producer writes (from `start`, 0 by default) gets the
 *   idempotency key `<prefix>:<n>`. A producer restarted with the same prefix that
 *   writes the same records again stores none of them twice: the prefix names the work
 *   (`job-42/answer`), so new work needs a new prefix. A record that carries its own
 *   `idempotency_key` keeps it and takes no number;
 * - sizes, the server's (docs/api.md, Records): an inline record is at most 64 KiB (a JSON payload
 *   as compact UTF-8 JSON, `data` as decoded bytes); a larger one is refused here, before
 *   it is queued, pointing to `uploadObject`. A batch holds at most 1000 records and
 *   `maxBatchBytes` of request body; on a stream with declared consumers it also stays
 *   within the unread ceilings, since a batch above them could never be accepted.
 */

import { RunnelError } from "./errors.js";
import type { RecordInput, StreamDefinition } from "./wire.js";

export const INLINE_MAX_BYTES = 64 * 1024;
export const MAX_BATCH_RECORDS = 1000;
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024;
export const MAX_KEY_LENGTH = 200;

const encoder = new TextEncoder();

export function compactSize(value: unknown): number {
  return encoder.encode(JSON.stringify(value)).length;
}

export function inlineSize(record: RecordInput): number {
  if ("payload" in record) return compactSize(record.payload);
  const data = record.data;
  if (typeof data !== "string") return 0;
  return Math.floor((data.length * 3) / 4) - (data.slice(-2).match(/=/g)?.length ?? 0);
}

/** Refuse, as the server would (413 `too_large`), a record above 64 KiB. */
export function checkInline(record: RecordInput): void {
  const size = inlineSize(record);
  if (size > INLINE_MAX_BYTES) {
    throw new RunnelError(413, "too_large", {
      code: "too_large", limit: INLINE_MAX_BYTES, size,
      detail: `inline record of ${size} bytes exceeds ${INLINE_MAX_BYTES} bytes: send it as an object (uploadObject)` });
  }
}

export interface BatchLimits {
  maxRecords: number;
  maxBytes: number;
}

/** The limits for a stream, from its definition. */
export function limitsFor(definition: StreamDefinition, maxBatchBytes = DEFAULT_BATCH_BYTES): BatchLimits {
  let records = MAX_BATCH_RECORDS;
  let bytes = maxBatchBytes;
  if (definition.consumers !== undefined && definition.consumers.length > 0) {
    records = Math.min(records, Number(definition.credit?.max_unread_items ?? records));
    bytes = Math.min(bytes, Number(definition.credit?.max_unread_bytes ?? bytes));
  }
  return { maxRecords: Math.max(1, records), maxBytes: Math.max(1, bytes) };
}

/** `<prefix>:<n>` keys, n counting up from `start`. */
export class KeyCounter {
  next: number;

  constructor(readonly prefix: string, start = 0) {
    if (prefix.length === 0 || prefix.length + 21 > MAX_KEY_LENGTH) {
      throw new RangeError(`keyPrefix must be 1-${MAX_KEY_LENGTH - 21} characters`);
    }
    if (!Number.isInteger(start) || start < 0) throw new RangeError("start must be an integer ≥ 0");
    this.next = start;
  }

  take(): string {
    const key = `${this.prefix}:${this.next}`;
    this.next += 1;
    return key;
  }
}

/** Records waiting to be sent, split where the limits say. */
export class Batch {
  readonly records: RecordInput[] = [];
  bytes = compactSize({ records: [] });
  /** Being sent (or sent): it takes no more records. */
  sealed = false;

  constructor(readonly limits: BatchLimits) {}

  fits(record: RecordInput): boolean {
    if (this.sealed) return false;
    return this.records.length === 0 || (this.records.length < this.limits.maxRecords
      && this.bytes + compactSize(record) + 1 <= this.limits.maxBytes);
  }

  add(record: RecordInput): void {
    this.records.push(record);
    this.bytes += compactSize(record) + 1;
  }

  get full(): boolean {
    return this.records.length >= this.limits.maxRecords;
  }
}
