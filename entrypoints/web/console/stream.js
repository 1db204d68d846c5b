// One stream's panel: its figures (head, earliest retained, closed, hold), each declared
// consumer's ack as a lag bar against head, the credit used out of the unread ceiling, an
// input stream's deliveries, and the stream followed live over its own SSE (/runnel.js,
// which mints the short-lived subscribe token: the pasted one never enters a URL).
import { follow } from "/runnel.js";
import { $, api, bytes, el, fill, id, session, streamDetail } from "./dom.js";
import * as records from "./records.js";

const REFRESH_MS = 1000;
let following = null;
let poll = null;
let opened = null; // { run, stream }

function path(run, stream) {
  return `/runs/${id(run)}/streams/${id(stream)}`;
}

function yesNo(value) {
  return value ? "yes" : "no";
}

function renderFigures(view) {
  const { status, definition } = view;
  $("fig-head").textContent = String(status.head);
  $("fig-earliest").textContent = String(status.earliest);
  $("fig-closed").textContent = yesNo(status.closed);
  $("fig-hold").textContent = status.legal_hold ? "held" : "none";
  $("fig-direction").textContent = definition.direction;
  $("fig-mode").textContent = definition.mode;
  const badges = [definition.direction === "input" ? "input" : null,
                  status.closed ? "closed" : "open", status.legal_hold ? "held" : null,
                  status.erased ? "erased" : null].filter(Boolean);
  $("badges").replaceChildren(...badges.map((badge) =>
    el("span", { className: `badge ${badge}`, text: badge })));
}

function renderConsumers(view) {
  const head = view.status.head;
  const declared = view.definition.consumers || [];
  const acks = view.status.consumers || {};
  $("no-consumers").hidden = declared.length > 0;
  $("consumers").replaceChildren(...declared.map((consumer) => {
    const acked = acks[consumer] ?? 0;
    const lag = Math.max(0, head - acked);
    const track = el("span", { className: lag > 0 ? "track lagging" : "track" },
                     el("span", { className: "fill" }));
    const entry = el("li", { data: { consumer, acked, lag } },
                     el("span", { className: "label",
                                  text: `${consumer} · acked ${acked} of ${head} · lag ${lag}` }),
                     track);
    fill(entry, head > 0 ? acked / head : 1);
    return entry;
  }));
}

function renderCredit(view) {
  const unread = view.status.unread || { items: 0, bytes: 0 };
  const credit = view.definition.credit;
  const gated = (view.definition.consumers || []).length > 0;
  const rows = [["credit-items", unread.items, credit.max_unread_items, String],
                ["credit-bytes", unread.bytes, credit.max_unread_bytes, bytes]];
  for (const [row, used, ceiling, show] of rows) {
    const entry = $(row);
    const unit = row === "credit-items" ? " items" : "";
    entry.querySelector(".label").textContent = gated
      ? `${show(used)} of ${show(ceiling)}${unit} unread`
      : `${show(used)}${unit} unread · no ceiling binds (no declared consumer)`;
    entry.dataset.used = String(used);
    entry.dataset.ceiling = String(ceiling);
    fill(entry, used / ceiling);
  }
}

function renderDeliveries(report) {
  $("deliveries").hidden = report.direction !== "input";
  $("pending").textContent = String(report.pending);
  $("dead-count").textContent = String(report.dead_letter_count);
  $("dead-letters").querySelector("tbody").replaceChildren(...report.dead_letters.map((dead) =>
    el("tr", { data: { sequence: dead.sequence } },
       el("td", { text: dead.sequence }), el("td", { text: dead.attempts }),
       el("td", { text: dead.last_error ?? "—" }))));
}

async function refresh() {
  if (!opened) return;
  const { run, stream } = opened;
  const view = await api(path(run, stream));
  if (opened?.run !== run || opened?.stream !== stream) return null;
  renderFigures(view);
  const listed = document.querySelector(`#streams button[data-stream="${CSS.escape(stream)}"]`);
  if (listed) listed.querySelector(".detail").textContent = streamDetail(view);
  renderConsumers(view);
  renderCredit(view);
  if (view.definition.direction === "input") {
    renderDeliveries(await api(`${path(run, stream)}/deliveries`));
  } else {
    $("deliveries").hidden = true;
  }
  return view;
}

function renderState(state) {
  $("last").textContent = state.cursor;
  $("count").textContent = state.count;
  $("reconnects").textContent = state.reconnects;
  $("renewals").textContent = state.renewals;
  $("gaps").textContent = state.gaps;
  $("duplicates").textContent = state.duplicates;
  $("live-dropped").textContent = state.steps.dropped;
}

export function close() {
  if (following) following.close();
  following = null;
  clearInterval(poll);
  poll = null;
  opened = null;
  records.stop();
}

export async function open(run, stream) {
  close();
  opened = { run, stream };
  $("current").textContent = stream;
  $("placeholder").hidden = true;
  $("stream-panel").hidden = false;
  $("state").textContent = "loading";
  const view = await refresh();
  if (!view) return;
  records.reset(view.status.head);
  const ttl = Number(new URLSearchParams(location.search).get("ttl"));
  following = follow({
    run, stream, token: () => session.token, live: true,
    ttlSeconds: Number.isInteger(ttl) && ttl > 0 ? ttl : undefined,
    onRecord: (record, state) => { records.onRecord(record); renderState(state); },
    onLive: records.onLive,
    onDropped: (frame, state) => renderState(state),
    onState: (text, state) => { $("state").textContent = text; renderState(state); },
  });
  renderState(following.state);
  poll = setInterval(() => refresh().catch(() => {}), REFRESH_MS);
}
