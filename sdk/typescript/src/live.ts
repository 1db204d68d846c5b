/**
 * Fire-and-forget publishing of best-effort live chunks (the Python SDK's
 * `runnel_client.live`, the same rules).
 *
 * Rules:
 * - `publish()` never waits and never throws: chunks wait in a queue (at most
 *   `queueLimit`, 256 by default) and every chunk waiting when a request goes out is
 *   sent in that one request; when the queue is full a chunk is dropped and counted;
 * - a failed request is counted, never retried: live chunks are best effort by
 *   definition, the durable records are the answer. `lastError` holds the latest
 *   failure, and `onError` (if given) hears each one;
 * - each request carries `source` and `attempt` as given, and `index`, the position of
 *   its first chunk among the chunks this publisher sent;
 * - `close()` sends what is queued, then resolves.
 */

import type { LiveOptions } from "./calls.js";
import type { LiveResult } from "./wire.js";

export const QUEUE_LIMIT = 256;

export interface LiveSink {
  publishLive(runId: string, streamId: string, chunks: unknown[], options?: LiveOptions): Promise<LiveResult>;
}

export interface LivePublisherOptions {
  source?: string;
  attempt?: number;
  queueLimit?: number;
  onError?: (error: unknown) => void;
}

export class LivePublisher {
  sent = 0;
  dropped = 0;
  failed = 0;
  requests = 0;
  lastError: unknown = null;
  private readonly queue: unknown[] = [];
  private sending: Promise<void> | null = null;
  private nextIndex = 0;

  constructor(private readonly sink: LiveSink, private readonly runId: string,
              private readonly streamId: string, private readonly options: LivePublisherOptions = {}) {
    if (typeof (sink as Partial<LiveSink>).publishLive !== "function") {
      throw new TypeError("LivePublisher needs a sink with publishLive (a RunnelClient)");
    }
  }

  /** Queue one chunk; false when it was dropped because the queue is full. */
  publish(chunk: unknown): boolean {
    if (this.queue.length >= (this.options.queueLimit ?? QUEUE_LIMIT)) {
      this.dropped += 1;
      return false;
    }
    this.queue.push(chunk);
    this.sending ??= this.drain();
    return true;
  }

  /** Send what is queued, then resolve. */
  async close(): Promise<void> {
    while (this.sending !== null) await this.sending;
  }

  private async drain(): Promise<void> {
    await Promise.resolve(); // let a burst of publish() calls gather first
    while (this.queue.length > 0) {
      const burst = this.queue.splice(0, this.queue.length);
      const options: LiveOptions = { index: this.nextIndex };
      if (this.options.source !== undefined) options.source = this.options.source;
      if (this.options.attempt !== undefined) options.attempt = this.options.attempt;
      try {
        await this.sink.publishLive(this.runId, this.streamId, burst, options);
        this.sent += burst.length;
      } catch (error) { // best effort: counted, never thrown
        this.lastError = error;
        this.failed += burst.length;
        try {
          this.options.onError?.(error);
        } catch { /* a listener's own failure is not the publisher's to throw */ }
      } finally {
        this.requests += 1;
        this.nextIndex += burst.length;
      }
    }
    this.sending = null;
  }
}
