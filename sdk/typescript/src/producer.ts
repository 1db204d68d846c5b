/**
 * `Producer`: an idempotent, batching, retrying writer of one stream (the Python SDK's
 * `runnel_client.producer`, the same rules).
 *
 * Rules:
 * - every record gets an idempotency key `<keyPrefix>:<n>` (`batching.ts`): a producer
 *   restarted with the same prefix that writes the same records stores none twice;
 * - a record waits at most `lingerSeconds` (0.02 by default) before it is sent, with the
 *   others written meanwhile, in one append of at most 1000 records and `maxBatchBytes`
 *   (and within the stream's unread ceilings when it declares consumers);
 * - batches are sent one at a time, in write order; a failed one is retried under
 *   `RetryPolicy` (429 after its `Retry-After`, 5xx, transport errors) with the same
 *   keys, so a retry stores each record once;
 * - back-pressure: `write()` resolves before its record is stored, but waits while a
 *   full batch, or the batch before its own, is being sent; `flush()` resolves when
 *   everything written so far is stored;
 * - when it gives up, the producer throws `AppendFailed` from the `write`, `flush` or
 *   `close` that comes next (a linger flush has no caller to throw to) and refuses every
 *   later write: nothing written after a lost record is stored before it.
 */

import { checkInline, DEFAULT_BATCH_BYTES, Batch, type BatchLimits, KeyCounter, limitsFor } from "./batching.js";
import { AppendFailed, RunnelError } from "./errors.js";
import { LivePublisher, type LiveSink } from "./live.js";
import { RetryPolicy } from "./retrying.js";
import type { AppendResult, RecordInput, StreamInfo } from "./wire.js";

/** What a producer asks of its client (a `RunnelClient`): the stream's pins, appends, and
 * the live side channel of its steps. */
export interface ProducerClient extends LiveSink {
  getStream(runId: string, streamId: string): Promise<StreamInfo>;
  append(runId: string, streamId: string, records: RecordInput[],
         options: { backpressureRetries?: number }): Promise<AppendResult>;
}

export interface ProducerOptions {
  /** Names the work (`job-42/answer`): the n-th record's key is `<keyPrefix>:<n>`. */
  keyPrefix: string;
  start?: number;
  lingerSeconds?: number;
  maxBatchBytes?: number;
  retry?: RetryPolicy;
}

export interface PipeOptions {
  /** Send each chunk at once as a live chunk too (true by default). */
  live?: boolean;
  /** A step every `every` chunks (one step for the whole stream by default). */
  every?: number;
  attempt?: number;
  toPayload?: (chunks: unknown[]) => unknown;
}

/** A step's payload: the text when every chunk is a string, otherwise the list of chunks. */
export function joined(chunks: unknown[]): unknown {
  return chunks.every((chunk) => typeof chunk === "string") ? chunks.join("") : [...chunks];
}

class Mutex {
  private tail: Promise<void> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }
}

export class Producer {
  /** Records the server answered for (stored now, or before under the same key). */
  stored = 0;
  /** The stream's head in the last append answer. */
  head = 0;
  retries = 0;
  private readonly keys: KeyCounter;
  private readonly linger: number;
  private readonly retry: RetryPolicy;
  private limits: BatchLimits | null = null;
  private asking: Promise<BatchLimits> | null = null;
  private readonly batches: Batch[] = [];
  private readonly lock = new Mutex();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failure: unknown = null;
  private closed = false;

  constructor(private readonly client: ProducerClient, readonly runId: string, readonly streamId: string,
              private readonly options: ProducerOptions) {
    this.keys = new KeyCounter(options.keyPrefix, options.start ?? 0);
    this.linger = options.lingerSeconds ?? 0.02;
    if (!(this.linger >= 0)) throw new RangeError("lingerSeconds must be ≥ 0");
    this.retry = options.retry ?? new RetryPolicy();
  }

  /** The key the next record will get. */
  get nextKey(): string {
    return `${this.keys.prefix}:${this.keys.next}`;
  }

  /**
   * Queue one JSON record; its idempotency key. Throws 413 `too_large` at once for a
   * payload above 64 KiB (send it with `uploadObject`), `AppendFailed` once it gave up.
   */
  write(payload: unknown, options: { contentType?: string } = {}): Promise<string> {
    const record: RecordInput = { payload };
    if (options.contentType !== undefined) record.content_type = options.contentType;
    return this.queue(record, false);
  }

  /** Queue one binary record (sent as base64 `data`); as `write`. */
  writeData(data: Uint8Array, contentType = "application/octet-stream"): Promise<string> {
    return this.queue({ data: base64(data), content_type: contentType }, false);
  }

  /**
   * Both layers from a stream of chunks (an LLM's tokens, ADR 0019): each chunk goes out
   * at once as a live chunk (with `live`), and each step (the whole stream, or every
   * `every` chunks) becomes one record, `toPayload(chunks)`. A step's live chunks carry
   * `source` = its record's key, so a reader drops the preview when the record arrives.
   * The steps' keys, once every record is stored; throws as `flush`.
   */
  async pipe(chunks: AsyncIterable<unknown> | Iterable<unknown>, options: PipeOptions = {}): Promise<string[]> {
    const { live = true, every, attempt = 1, toPayload = joined } = options;
    if (every !== undefined && !(Number.isInteger(every) && every >= 1)) throw new RangeError("every must be ≥ 1");
    const keys: string[] = [];
    let step: unknown[] = [];
    let key = this.keys.take();
    let publisher = this.publisher(key, attempt, live);
    for await (const chunk of chunks) {
      publisher?.publish(chunk);
      step.push(chunk);
      if (every !== undefined && step.length >= every) {
        await this.endStep(publisher, key, toPayload(step));
        keys.push(key);
        step = [];
        key = this.keys.take();
        publisher = this.publisher(key, attempt, live);
      }
    }
    if (step.length > 0 || keys.length === 0) {
      await this.endStep(publisher, key, toPayload(step));
      keys.push(key);
    } else await publisher?.close();
    await this.flush();
    return keys;
  }

  /** Send everything written so far; resolves once it is stored. Throws `AppendFailed`. */
  async flush(): Promise<void> {
    if (this.limits === null) await this.asking?.catch(() => undefined); // writes waiting on it go first
    this.cancelTimer();
    await this.lock.run(() => this.sendWaiting(true));
    if (this.failure !== null) throw this.failure;
  }

  /** Flush, then refuse further writes. Throws as `flush`. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.closed = true;
    }
  }

  private publisher(key: string, attempt: number, live: boolean): LivePublisher | null {
    return live ? new LivePublisher(this.client, this.runId, this.streamId, { source: key, attempt }) : null;
  }

  private async endStep(publisher: LivePublisher | null, key: string, payload: unknown): Promise<void> {
    await publisher?.close();
    await this.queue({ payload, idempotency_key: key }, true);
  }

  private async queue(record: RecordInput, keyed: boolean): Promise<string> {
    if (this.closed) throw new Error("the producer is closed");
    if (this.failure !== null) throw this.failure;
    checkInline(record);
    if (!keyed) record.idempotency_key = this.keys.take();
    const limits = this.limits ?? await this.streamLimits();
    const last = this.batches.at(-1);
    if (last === undefined || !last.fits(record)) this.batches.push(new Batch(limits));
    const batch = this.batches.at(-1) as Batch;
    batch.add(record);
    if (this.batches.length > 1 || batch.full || this.linger === 0) {
      this.cancelTimer();
      await this.lock.run(() => this.sendWaiting(this.linger === 0));
      if (this.failure !== null) throw this.failure;
    }
    if (this.batches.length > 0 && this.timer === null && this.linger > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.lock.run(() => this.sendWaiting(true)).catch((error: unknown) => {
          this.failure ??= error;
        });
      }, this.linger * 1000);
    }
    return record.idempotency_key as string;
  }

  /** Asked once (again after a failure); writes waiting for it add their records in order. */
  private streamLimits(): Promise<BatchLimits> {
    this.asking ??= this.client.getStream(this.runId, this.streamId).then((info) => {
      this.limits = limitsFor(info.definition, this.options.maxBatchBytes ?? DEFAULT_BATCH_BYTES);
      return this.limits;
    }, (error: unknown) => {
      this.asking = null;
      throw error;
    });
    return this.asking;
  }

  private cancelTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Send the batches that are due (all with `everything`), oldest first; under the lock. */
  private async sendWaiting(everything: boolean): Promise<void> {
    while (this.failure === null && this.batches.length > 0) {
      const batch = this.batches[0] as Batch;
      if (!(everything || this.batches.length > 1 || batch.full)) return;
      batch.sealed = true; // a write while it is in flight opens the next batch
      try {
        await this.send(batch.records);
      } catch (error) {
        if (!(error instanceof AppendFailed)) throw error;
        this.failure = error;
        return;
      }
      this.batches.shift();
    }
  }

  private async send(records: RecordInput[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const answer = await this.client.append(this.runId, this.streamId, records, { backpressureRetries: 0 });
        this.stored += records.length;
        this.head = answer.head;
        return;
      } catch (error) {
        if (!this.retry.retryable(error)) {
          if (error instanceof RunnelError) throw new AppendFailed(error, attempt, [...records]);
          throw error;
        }
        if (attempt >= this.retry.maxAttempts) throw new AppendFailed(error, attempt, [...records]);
        this.retries += 1;
        await new Promise((resolve) => setTimeout(resolve, this.retry.delay(attempt, error) * 1000));
      }
    }
  }
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}
