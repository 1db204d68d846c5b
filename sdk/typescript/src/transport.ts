/**
 * The transport under the driver: one request's abort, the failures that are the
 * network's, and a subscription's body read as server-sent events.
 *
 * Rules:
 * - a request is aborted by the caller's signal, by its deadline (a `TransportError`
 *   naming it), or when it is done with (`end()`, which also lets go of the signal);
 * - whatever makes `fetch` or the reading of a body fail is a `TransportError`;
 * - a subscription's body is decoded as UTF-8 and parsed as server-sent events
 *   (`sse.ts`); one that brings no byte (no frame, no keepalive) for its `idleSeconds` is
 *   broken off as a `TransportError`: a half-open connection otherwise hangs for minutes.
 */

import { TransportError } from "./errors.js";
import { type SseEvent, SseParser } from "./sse.js";

export interface Linked {
  signal: AbortSignal;
  end(): void;
}

/**
 * `work`'s value, its failure as a `TransportError` (the reason of a deadline that cut it
 * short, if one did): whatever makes `fetch` or a body read fail is the transport's.
 */
export async function transport<T>(what: string, work: Promise<T>, request?: Linked): Promise<T> {
  try {
    return await work;
  } catch (error) {
    const reason: unknown = request?.signal.reason;
    if (reason instanceof TransportError) throw reason;
    if (error instanceof TransportError) throw error;
    throw new TransportError(`${what}: ${String(error)}`, { cause: error });
  }
}

/** One request's abort: by the caller's signal, by its deadline, or by `end()`. */
export function linked(signal: AbortSignal | undefined, seconds: number | null, what: string): Linked {
  const abort = new AbortController();
  const follow = () => abort.abort(signal?.reason);
  if (signal?.aborted) follow();
  signal?.addEventListener("abort", follow, { once: true });
  const timer = seconds === null ? undefined : setTimeout(() => abort.abort(
    new TransportError(`${what}: no answer within ${seconds} s`)), seconds * 1000);
  return {
    signal: abort.signal,
    end: () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", follow);
      abort.abort();
    },
  };
}

/** A subscription's body as server-sent events, under its idle guard. */
export class Subscription {
  private readonly parser = new SseParser();
  private readonly decoder = new TextDecoder();
  private readonly waiting: SseEvent[] = [];

  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
              private readonly request: Linked, private readonly idleSeconds: number | null) {}

  async next(): Promise<SseEvent | null> {
    while (this.waiting.length === 0) {
      const chunk = await transport("reading the subscription", this.read());
      if (chunk.done) return null;
      this.waiting.push(...this.parser.feed(this.decoder.decode(chunk.value, { stream: true })));
    }
    return this.waiting.shift() as SseEvent;
  }

  close(): void {
    this.request.end();
    this.reader.cancel().catch(() => undefined);
  }

  private read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this.idleSeconds === null) return this.reader.read();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.close();
        reject(new TransportError(`no byte for ${this.idleSeconds} s: the connection is taken as broken`));
      }, this.idleSeconds as number * 1000);
    });
    return Promise.race([this.reader.read(), idle]).finally(() => clearTimeout(timer));
  }
}
