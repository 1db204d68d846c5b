/**
 * The driver: performs a plan's effects (`effects.ts`) with `fetch`. It holds no rule of
 * the API; its own rules are the transport's.
 *
 * Rules:
 * - every request carries `Authorization: Bearer <token>`, the token asked of its source
 *   for each request (a function is called each time);
 * - a request and the reading of its answer take at most `timeoutSeconds`; a
 *   subscription has none but its idle guard (`transport.ts`). A deadline, like any
 *   failure of `fetch` or of reading a body, is thrown into the plan as a `TransportError`;
 * - the caller's `signal` ends everything: an open request or subscription is aborted,
 *   a sleep cut short, and the plan closed (its `finally` blocks run). An iteration then
 *   ends quietly; a call rejects with the signal's reason;
 * - a subscription is closed when the plan hangs up, opens another, or ends.
 */

import { tokenOf, type TokenSource } from "./auth.js";
import type { Answer, Effect, FollowStatus, OpenEffect, Plan, Query, SendEffect } from "./effects.js";
import { TransportError } from "./errors.js";
import { sha256Hex } from "./objects.js";
import { linked, Subscription, transport } from "./transport.js";

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export interface DriverSettings {
  baseUrl: string;
  token: TokenSource;
  timeoutSeconds: number;
  fetch: Fetch;
}

export interface RunOptions {
  signal?: AbortSignal | undefined;
  onStatus?: ((status: FollowStatus) => void) | undefined;
}

export class Driver {
  private subscription: Subscription | null = null;

  constructor(private readonly settings: DriverSettings, private readonly options: RunOptions = {}) {}

  get aborted(): boolean {
    return this.options.signal?.aborted ?? false;
  }

  /** What the effect gave; a `TransportError` when no answer came. */
  async perform(effect: Effect): Promise<unknown> {
    try {
      return await this.performOnce(effect);
    } catch (error) {
      if (this.aborted) throw this.options.signal?.reason;
      throw error;
    }
  }

  hangup(): void {
    this.subscription?.close();
    this.subscription = null;
  }

  private async performOnce(effect: Effect): Promise<unknown> {
    switch (effect.kind) {
      case "next":
        return this.subscription === null ? null : await this.subscription.next();
      case "send":
        return await this.send(effect);
      case "open":
        return await this.open(effect);
      case "hangup":
        this.hangup();
        return undefined;
      case "sleep":
        return await this.sleep(effect.seconds);
      case "token":
        return await tokenOf(effect.source);
      case "digest":
        return await sha256Hex(effect.data);
      case "status":
        this.options.onStatus?.(effect.status);
        return undefined;
      case "emit":
        throw new TypeError("an emit is the iterator's, never the driver's");
    }
  }

  private async send(effect: SendEffect): Promise<Answer> {
    const what = `${effect.method} ${effect.path}`;
    const request = linked(this.options.signal,
                           this.settings.timeoutSeconds + (effect.waits ?? 0), what);
    try {
      const headers: { [name: string]: string } = {
        Authorization: `Bearer ${await tokenOf(this.settings.token)}`, ...effect.headers };
      let body: BodyInit | undefined;
      if (effect.json !== undefined) {
        headers["Content-Type"] = "application/json";
        body = JSON.stringify(effect.json);
      } else if (effect.body !== undefined) body = effect.body as Uint8Array<ArrayBuffer>;
      const url = this.url(effect.path, effect.query);
      return await transport(what, (async () => {
        const response = await this.settings.fetch(url, {
          method: effect.method, headers, body, signal: request.signal, cache: "no-store" });
        return { status: response.status, headers: response.headers,
                 body: new Uint8Array(await response.arrayBuffer()) };
      })(), request);
    } finally {
      request.end();
    }
  }

  private async open(effect: OpenEffect): Promise<Answer> {
    this.hangup();
    const what = `GET ${effect.path}`;
    const token = await tokenOf(effect.token ?? this.settings.token);
    const url = this.url(effect.path, effect.query);
    const request = linked(this.options.signal, null, what);
    const response = await transport(what, this.settings.fetch(url, {
      method: "GET", headers: { Authorization: `Bearer ${token}`, ...effect.headers },
      signal: request.signal, cache: "no-store" }), request).catch((error: unknown) => {
      request.end();
      throw error;
    });
    if (response.status !== 200 || response.body === null) {
      try {
        const body = new Uint8Array(await transport(what, response.arrayBuffer(), request));
        return { status: response.status, headers: response.headers, body };
      } finally {
        request.end();
      }
    }
    this.subscription = new Subscription(response.body.getReader(), request, effect.idleSeconds);
    return { status: response.status, headers: response.headers, body: new Uint8Array() };
  }

  private sleep(seconds: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const signal = this.options.signal;
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", stop);
        resolve();
      }, seconds * 1000);
      const stop = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", stop, { once: true });
    });
  }

  private url(path: string, query: Query | undefined): string {
    const url = new URL(path, this.settings.baseUrl);
    for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, String(value));
    return url.href;
  }
}

/** Performs `plan`, yielding what it emits; ends quietly when the caller's signal aborts. */
export async function* iterate<T>(settings: DriverSettings, plan: Plan<T>,
                                  options: RunOptions = {}): AsyncGenerator<unknown, T | undefined> {
  const driver = new Driver(settings, options);
  try {
    let step = plan.next();
    while (!step.done) {
      const effect = step.value;
      if (effect.kind === "emit") {
        yield effect.item;
        step = plan.next();
        continue;
      }
      let answer: unknown;
      try {
        answer = await driver.perform(effect);
      } catch (error) {
        if (driver.aborted) return undefined;
        if (!(error instanceof TransportError)) throw error;
        step = plan.throw(error);
        continue;
      }
      step = plan.next(answer);
    }
    return step.value;
  } finally {
    driver.hangup();
    plan.return(undefined as T);
  }
}

/** Performs a call's plan (one that emits nothing); its result. */
export async function run<T>(settings: DriverSettings, plan: Plan<T>, options: RunOptions = {}): Promise<T> {
  const steps = iterate(settings, plan, options);
  const result = await steps.next();
  if (options.signal?.aborted) throw options.signal.reason;
  if (!result.done) {
    await steps.return(undefined);
    throw new TypeError("a call's plan emitted an item");
  }
  return result.value as T;
}
