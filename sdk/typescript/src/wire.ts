/**
 * The server's shapes, as it sends them (snake_case, docs/adr/0068), and the paths of its
 * routes. What the server defines (definitions, status, records, pages) keeps the wire's
 * field names, so the examples of docs/api.md, the Python SDK and this one read alike; what the SDK
 * itself adds (`LiveEvent`, options) is camelCase.
 */

export const API_PREFIX = "/api/workflow-streams";

export interface ObjectRef {
  object_id: string;
  size: number;
  sha256: string;
  content_type: string;
  href: string;
}

/** A record as readers get it: a JSON `payload`, base64 `data`, or an `object` reference. */
export interface StreamRecord {
  sequence: number;
  content_type: string;
  appended_at: string;
  payload?: unknown;
  data?: string;
  object?: ObjectRef;
  /** The producer's key; a live chunk whose `source` equals it is this record's preview. */
  idempotency_key?: string;
  /** The stream it belongs to, in a run follow (`followRun`). */
  stream_id?: string;
}

/** A record as it is sent: `{payload}` or `{data, content_type}`, an optional key. */
export interface RecordInput {
  payload?: unknown;
  data?: string;
  content_type?: string;
  idempotency_key?: string;
}

/**
 * One page of `read()`: records with `sequence > after`, ascending, dense. Read on from
 * `next_cursor`; `head` is the stream's last sequence, `earliest` its oldest retained one.
 */
export interface ReadPage {
  records: StreamRecord[];
  next_cursor: number;
  head: number;
  earliest: number;
  closed: boolean;
}

export type ConsumerDeclaration = string | { id: string; principals?: string[] };

/** A definition's pins; only `content_class` (and the id) is required, the rest defaults. */
export interface StreamDefinition {
  stream_id?: string;
  content_class: string;
  direction?: "output" | "input";
  mode?: "durable" | "best_effort";
  credit?: {
    max_unread_items?: number;
    max_unread_bytes?: number;
    max_total_items?: number;
    max_total_bytes?: number;
    on_unread_full?: "reject" | "block";
    block_timeout_seconds?: number;
  };
  retention?: { max_age_seconds?: number | null; max_records?: number | null };
  /** Seconds from creation after which the stream is gone (404) and deleted by the server. */
  expires_after_seconds?: number | null;
  redaction?: { mask?: string[] };
  authorization?: { readers?: string[]; writers?: string[] };
  consumers?: ConsumerDeclaration[];
  [pin: string]: unknown;
}

export interface StreamStatus {
  head: number;
  earliest: number;
  closed: boolean;
  legal_hold: boolean;
  consumers: { [consumerId: string]: number };
  [field: string]: unknown;
}

export interface StreamInfo {
  run_id: string;
  stream_id: string;
  definition: StreamDefinition;
  status: StreamStatus;
  created_at: string;
}

/** `duplicates`: the indexes of the records whose key was used already (stored before). */
export interface AppendResult { sequences: number[]; head: number; duplicates?: number[] }
export interface AckResult { consumer_id: string; acked: number }
export interface CloseResult { closed: boolean; head: number }
/** A repeated delete answers zero counts. */
export interface DeleteResult {
  run_id: string; stream_id: string; deleted: true; records_deleted: number; objects_deleted: number;
}
export interface LiveResult { accepted: number }
export interface SubscribeGrant { token: string; expires_at: string }

/** A subscribe token for a browser, with the subscribe URL that takes it (ADR 0023). */
export interface BrowserToken extends SubscribeGrant { subscribe_url: string }

export interface ObjectIntent {
  object_id: string;
  state: "prepared" | "uploaded" | "committed" | "aborted" | "expired";
  size: number;
  sha256: string;
  content_type: string;
  schema?: string | null;
  sequence?: number | null;
  expires_at: string;
}

function field<T>(frame: unknown, name: string, test: (value: unknown) => value is T): T | null {
  if (typeof frame !== "object" || frame === null) return null;
  const value = (frame as { [key: string]: unknown })[name];
  return test(value) ? value : null;
}

const isString = (value: unknown): value is string => typeof value === "string";
const isInteger = (value: unknown): value is number => Number.isInteger(value);

/**
 * A best-effort chunk seen while following with `live`. `frame` is the frame as sent,
 * `{seq, data, source, attempt, index}`; `chunk` is the published chunk itself.
 * `supersedes` is true on the first chunk of a higher `attempt` of its `source`: drop
 * what is shown of the earlier attempt (`LiveText` does).
 */
export class LiveEvent {
  readonly frame: unknown;
  readonly supersedes: boolean;
  readonly chunk: unknown;
  /** The step the chunk belongs to, if the producer named one. */
  readonly source: string | null;
  readonly attempt: number | null;
  readonly index: number | null;
  readonly seq: number | null;
  /** The stream it belongs to, in a run follow (`followRun`). */
  readonly streamId: string | null;

  constructor(frame: unknown, supersedes = false) {
    this.frame = frame;
    this.supersedes = supersedes;
    this.chunk = typeof frame === "object" && frame !== null
      ? (frame as { data?: unknown }).data : undefined;
    this.source = field(frame, "source", isString);
    this.attempt = field(frame, "attempt", isInteger);
    this.index = field(frame, "index", isInteger);
    this.seq = field(frame, "seq", isInteger);
    this.streamId = field(frame, "stream_id", isString);
  }
}

/** A record envelope from the wire; a `TypeError` when it has no integer `sequence`. */
export function recordOf(body: unknown): StreamRecord {
  if (field(body, "sequence", isInteger) === null) {
    throw new TypeError("a record without an integer sequence");
  }
  return body as StreamRecord;
}

export function runPath(runId: string, ...rest: string[]): string {
  return [API_PREFIX, "runs", encodeURIComponent(runId), ...rest].join("/");
}

export function streamPath(runId: string, streamId: string, ...rest: string[]): string {
  return runPath(runId, "streams", encodeURIComponent(streamId), ...rest);
}
