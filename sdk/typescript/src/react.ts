/**
 * `@runnel/client/react`: `useRunnelStream(run, stream, options)`, a stream's records and
 * live text as React state (docs/adr/0069).
 *
 * Rules:
 * - the hook follows the stream (`RunnelClient.follow`) while the component is mounted
 *   and its `run`, `stream`, `consumer`, `live`, `after` or `history` stay the same;
 *   changing one starts over, unmounting ends the follow (its connection is closed);
 * - every record reaches `records` once, in sequence order, across reconnects;
 * - with `consumer`, the follow resumes at that consumer's acknowledged sequence and acks
 *   as the records are shown, so a page reloaded goes on where the last one stopped;
 *   with `history` (the default) the records up to that point are read first, in pages,
 *   so the page shows the whole stream and nothing twice. A cursor pruned by retention
 *   starts the history at the stream's earliest record;
 * - with `live`, `live` holds each step's live text not yet replaced by its record (the
 *   two-layer rule, ADR 0019): a step's record removes its live text;
 * - `token` is the caller's API token (or a function returning one); `tokenProvider`, if
 *   given, supplies the subscription's tokens (a backend's subscribe tokens, say) and
 *   is asked again when one expires. The latest values given are used; a change of
 *   token does not start the follow over;
 * - `status` is `connecting`, `following`, `reconnecting`, `closed` (every record of the
 *   closed stream is shown) or `error` (`error` says why; the follow has stopped).
 */

import { useEffect, useRef, useState } from "react";

import { tokenOf, type TokenSource } from "./auth.js";
import { RunnelClient } from "./client.js";
import { ResyncRequired } from "./errors.js";
import { FollowState, startCursor } from "./following.js";
import { LiveText, type LiveStep } from "./layers.js";
import { LiveEvent, type StreamRecord } from "./wire.js";

export interface UseRunnelStreamOptions {
  /** The server; the page's own origin by default. */
  baseUrl?: string;
  token?: TokenSource;
  tokenProvider?: TokenSource;
  consumer?: string;
  live?: boolean;
  ackEvery?: number;
  /** With `consumer`: read the records up to its ack first (true by default). */
  history?: boolean;
  /** Where to start without a consumer (0: the whole stream). */
  after?: number;
}

export type RunnelStreamStatus = "connecting" | "following" | "reconnecting" | "closed" | "error";

export interface RunnelStreamView {
  records: StreamRecord[];
  live: LiveStep[];
  status: RunnelStreamStatus;
  error: Error | null;
  /** The last sequence shown. */
  cursor: number;
  /** The sequence the follow resumed after (the consumer's ack), once known. */
  resumedAfter: number | null;
}

const HISTORY_PAGE = 1000;

const initial: RunnelStreamView = {
  records: [], live: [], status: "connecting", error: null, cursor: 0, resumedAfter: null };

export function useRunnelStream(run: string, stream: string, options: UseRunnelStreamOptions): RunnelStreamView {
  const [view, setView] = useState<RunnelStreamView>(initial);
  const latest = useRef(options);
  latest.current = options;
  const { baseUrl, consumer, live = false, ackEvery, history = true, after = 0 } = options;

  useEffect(() => {
    const abort = new AbortController();
    const tokens = () => {
      const { token, tokenProvider } = latest.current;
      const source = token ?? tokenProvider;
      if (source === undefined) throw new TypeError("useRunnelStream needs a token or a tokenProvider");
      return tokenOf(source);
    };
    const provider = latest.current.tokenProvider === undefined ? undefined
      : () => tokenOf(latest.current.tokenProvider as TokenSource);
    const client = new RunnelClient({ ...(baseUrl === undefined ? {} : { baseUrl }), token: tokens });
    const records: StreamRecord[] = [];
    const liveText = new LiveText();
    const state = new FollowState(after);
    let status: RunnelStreamStatus = "connecting";
    let error: Error | null = null;
    let resumedAfter: number | null = null;
    let scheduled: ReturnType<typeof setTimeout> | undefined;
    const show = () => {
      scheduled = undefined;
      if (abort.signal.aborted) return;
      setView({ records: [...records], live: liveText.view(), status, error, cursor: state.cursor, resumedAfter });
    };
    const schedule = () => { scheduled ??= setTimeout(show, 0); };
    setView(initial);

    (async () => {
      let start = after;
      if (consumer !== undefined) {
        const info = await client.getStream(run, stream);
        start = startCursor(info.status, after, consumer, undefined);
        resumedAfter = start;
        if (history) await readHistory(client, run, stream, after, start, records, abort.signal);
        state.cursor = Math.max(state.cursor, records.at(-1)?.sequence ?? after);
        schedule();
      }
      const items = client.follow(run, stream, {
        after: start, live, consumer, ackEvery, state, tokenProvider: provider, signal: abort.signal,
        onStatus: (next) => { status = next; schedule(); } });
      for await (const item of items) {
        if (!(item instanceof LiveEvent)) records.push(item);
        liveText.apply(item);
        schedule();
      }
      if (!abort.signal.aborted) status = "closed";
    })().catch((failure: unknown) => {
      if (abort.signal.aborted) return;
      status = "error";
      error = failure instanceof Error ? failure : new Error(String(failure));
    }).finally(schedule);

    return () => {
      abort.abort();
      clearTimeout(scheduled);
    };
  }, [run, stream, baseUrl, consumer, live, ackEvery, history, after]);

  return view;
}

/** Records `after < sequence ≤ until`, in pages, into `records` (from the earliest if pruned). */
async function readHistory(client: RunnelClient, run: string, stream: string, after: number, until: number,
                           records: StreamRecord[], signal: AbortSignal): Promise<void> {
  let cursor = after;
  while (cursor < until) {
    let page;
    try {
      page = await client.read(run, stream, { after: cursor, limit: Math.min(HISTORY_PAGE, until - cursor), signal });
    } catch (failure) {
      if (!(failure instanceof ResyncRequired) || failure.earliest - 1 <= cursor) throw failure;
      cursor = failure.earliest - 1;
      continue;
    }
    if (page.records.length === 0) return;
    for (const record of page.records) if (record.sequence <= until) records.push(record);
    cursor = page.next_cursor;
  }
}
