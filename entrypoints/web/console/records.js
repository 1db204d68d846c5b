// The stream's records as they arrive: a list (a step's live text shown until its stored
// record replaces it, ADR 0019), the record inspector, and the records-per-second sparkline.
import { $, el } from "./dom.js";

const SHOWN = 1000;     // records kept in the list (the oldest go first)
const SECONDS = 60;     // the sparkline's window

const shown = new Map(); // sequence -> record, for the inspector
let liveFrom = 0;        // records above this sequence arrived live (not the backlog)
let buckets = new Array(SECONDS).fill(0);
let ticker = null;

export function reset(head) {
  $("records").replaceChildren();
  shown.clear();
  liveFrom = head;
  buckets = new Array(SECONDS).fill(0);
  clearInterval(ticker);
  ticker = setInterval(() => { buckets.push(0); buckets.shift(); draw(); }, 1000);
  clearInspector();
  draw();
}

export function stop() {
  clearInterval(ticker);
  ticker = null;
}

function size(record) {
  if ("payload" in record) return new TextEncoder().encode(JSON.stringify(record.payload)).length;
  if ("data" in record) return Math.floor(record.data.length * 3 / 4)
    - (record.data.endsWith("==") ? 2 : record.data.endsWith("=") ? 1 : 0);
  return record.object.size;
}

function preview(record) {
  const text = "payload" in record ? JSON.stringify(record.payload)
    : "data" in record ? `(binary) ${size(record)} bytes`
    : `(object) ${record.object.object_id} ${record.object.size} bytes`;
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function item(sequence, text, live) {
  const entry = el("li", { className: live ? "live" : "" },
                   el("span", { className: "seq", text: live ? "live" : `#${sequence}` }),
                   el("span", { className: "text", text }));
  if (!live) {
    entry.dataset.sequence = String(sequence);
    entry.tabIndex = 0;
  }
  $("records").append(entry);
  return entry;
}

function liveItem(step) {
  return document.querySelector(`ol#records li.live[data-source="${CSS.escape(step)}"]`);
}

function chunkText(chunk) {
  if (typeof chunk === "string") return chunk;
  if (chunk !== null && typeof chunk === "object" && typeof chunk.text === "string") {
    return chunk.text;
  }
  return JSON.stringify(chunk);
}

export function onRecord(record) {
  item(record.sequence, preview(record), false);
  shown.set(record.sequence, record);
  if (shown.size > SHOWN) {
    const oldest = shown.keys().next().value;
    shown.delete(oldest);
    document.querySelector(`ol#records li[data-sequence="${oldest}"]`)?.remove();
  }
  if (typeof record.idempotency_key === "string") liveItem(record.idempotency_key)?.remove();
  if (record.sequence > liveFrom) { buckets[SECONDS - 1] += 1; draw(); }
}

export function onLive(chunk, { source, attempt, supersedes }) {
  if (source === null) { item(null, chunkText(chunk), true); return; }
  let entry = liveItem(source);
  if (entry && supersedes) entry.querySelector(".text").replaceChildren();  // a retry
  if (!entry) {
    entry = item(null, "", true);
    entry.dataset.source = source;
  }
  if (attempt !== null) entry.dataset.attempt = String(attempt);
  entry.querySelector(".seq").textContent = attempt !== null && attempt > 1
    ? `live ${source} (attempt ${attempt})` : `live ${source}`;
  entry.querySelector(".text").append(document.createTextNode(chunkText(chunk)));
}

// -- the inspector ---------------------------------------------------------------------

function clearInspector() {
  $("inspector-fields").hidden = true;
  $("inspector-empty").hidden = false;
  for (const entry of document.querySelectorAll("ol#records li.selected")) {
    entry.classList.remove("selected");
  }
}

function inspect(sequence) {
  const record = shown.get(sequence);
  if (!record) return;
  clearInspector();
  document.querySelector(`ol#records li[data-sequence="${sequence}"]`)?.classList.add("selected");
  $("ins-sequence").textContent = String(record.sequence);
  $("ins-appended").textContent = record.appended_at;
  $("ins-type").textContent = record.content_type;
  $("ins-size").textContent = `${size(record)} bytes`;
  $("ins-key").textContent = record.idempotency_key ?? "—";
  if ("payload" in record) {
    $("ins-body-label").textContent = "payload";
    $("ins-body").textContent = JSON.stringify(record.payload, null, 2);
  } else if ("data" in record) {
    $("ins-body-label").textContent = "data";
    $("ins-body").textContent = `${size(record)} bytes of binary data (base64 on the wire)`;
  } else {
    $("ins-body-label").textContent = "object";
    $("ins-body").textContent = JSON.stringify(record.object, null, 2);
  }
  $("inspector-fields").hidden = false;
  $("inspector-empty").hidden = true;
}

function picked(event) {
  const entry = event.target.closest("li[data-sequence]");
  if (entry) inspect(Number(entry.dataset.sequence));
}

$("records").addEventListener("click", picked);
$("records").addEventListener("keydown", (event) => {
  if (event.key === "Enter" || event.key === " ") picked(event);
});

// -- the sparkline -----------------------------------------------------------------------

function draw() {
  const svg = $("sparkline");
  const peak = Math.max(1, ...buckets);
  const width = 240;
  const height = 48;
  const step = width / (SECONDS - 1);
  const points = buckets.map((count, index) =>
    `${(index * step).toFixed(1)},${(height - 2 - (count / peak) * (height - 6)).toFixed(1)}`);
  svg.querySelector(".line").setAttribute("points", points.join(" "));
  svg.querySelector(".area").setAttribute("points",
                                          `0,${height} ${points.join(" ")} ${width},${height}`);
  const total = buckets.reduce((sum, count) => sum + count, 0);
  svg.dataset.total = String(total);
  svg.dataset.peak = String(Math.max(...buckets));
  $("rate").textContent = String(buckets[SECONDS - 1]);
  $("peak").textContent = svg.dataset.peak;
}
