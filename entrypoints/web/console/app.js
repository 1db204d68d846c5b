// The console's shell: sign-in (the token in memory, or in sessionStorage when ticked;
// never in a URL), the tenant's runs, a run's streams, and navigation. The location holds
// only what is not secret: `#run=…&stream=…` (and `?ttl=N` for N-second subscribe tokens).
import { $, ApiError, api, el, id, session, showError, streamDetail } from "./dom.js";
import * as panel from "./stream.js";

const KEPT = "runnel.console.token";
const RUNS_PAGE = 50;
let runsCursor = null;

function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}

function place() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { run: params.get("run"), stream: params.get("stream") };
}

function go(run, stream) {
  const params = new URLSearchParams();
  if (run) params.set("run", run);
  if (stream) params.set("stream", stream);
  const hash = `#${params}`;
  if (location.hash !== hash) history.pushState(null, "", hash);
  route();
}

// -- sign-in -------------------------------------------------------------------------------

function signedIn(token) {
  session.token = token;
  const said = claims(token);
  $("who").textContent = [said.tenant && `tenant ${said.tenant}`, said.sub && `as ${said.sub}`]
    .filter(Boolean).join(" ");
  $("sign-in-panel").hidden = true;
  $("console").hidden = false;
  $("sign-out").hidden = false;
}

async function signIn(event) {
  event.preventDefault();
  showError("sign-in-error", null);
  const token = $("token").value.trim();
  $("token").value = "";
  if (!token) return;
  session.token = token;
  try {
    await loadRuns(true);
  } catch (error) {
    session.token = null;
    showError("sign-in-error", error);
    return;
  }
  if ($("remember").checked) sessionStorage.setItem(KEPT, token);
  else sessionStorage.removeItem(KEPT);
  signedIn(token);
  route();
}

function signOut() {
  panel.close();
  session.token = null;
  sessionStorage.removeItem(KEPT);
  $("runs").replaceChildren();
  $("streams").replaceChildren();
  $("who").textContent = "";
  $("console").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in-panel").hidden = false;
  history.pushState(null, "", location.pathname + location.search);
}

// -- runs and streams ----------------------------------------------------------------------

function pick(list, key, value, label, detail) {
  const button = el("button", { data: { [key]: value }, type: "button" },
                    el("span", { className: "name", text: label }),
                    el("span", { className: "detail", text: detail }));
  button.type = "button";
  list.append(el("li", {}, button));
  return button;
}

async function loadRuns(first) {
  if (first) { runsCursor = null; $("runs").replaceChildren(); }
  const query = `?limit=${RUNS_PAGE}${runsCursor ? `&cursor=${id(runsCursor)}` : ""}`;
  const page = await api(`/runs${query}`);
  for (const run of page.runs) {
    pick($("runs"), "run", run.run_id, run.run_id,
         `${run.streams} stream${run.streams === 1 ? "" : "s"}`)
      .addEventListener("click", () => go(run.run_id, null));
  }
  runsCursor = page.next_cursor;
  $("more-runs").hidden = runsCursor === null;
}

async function listStreams(run) {
  showError("list-error", null);
  $("run-name").textContent = run;
  const streams = [];
  let cursor = null;
  do {  // the listing comes in pages; follow next_cursor to the end of the run
    const query = cursor === null ? "" : `?cursor=${id(cursor)}`;
    let body;
    try {
      body = await api(`/runs/${id(run)}/streams${query}`);
    } catch (error) {
      showError("list-error", error);
      $("streams").replaceChildren();
      return;
    }
    streams.push(...body.streams);
    cursor = body.next_cursor ?? null;
  } while (cursor !== null);
  $("streams").replaceChildren();
  for (const stream of streams) {
    pick($("streams"), "stream", stream.stream_id, stream.stream_id, streamDetail(stream))
      .addEventListener("click", () => go(run, stream.stream_id));
  }
  for (const button of document.querySelectorAll("#runs button")) {
    button.classList.toggle("selected", button.dataset.run === run);
  }
}

let shownRun = null;

async function route() {
  if (!session.token) return;
  const { run, stream } = place();
  if (run !== shownRun) {
    shownRun = run;
    if (run) await listStreams(run);
    else $("streams").replaceChildren();
  }
  for (const button of document.querySelectorAll("#streams button")) {
    button.classList.toggle("selected", button.dataset.stream === stream);
  }
  if (run && stream) {
    await panel.open(run, stream).catch((error) => showError("list-error", error));
  } else {
    panel.close();
    $("stream-panel").hidden = true;
    $("placeholder").hidden = false;
  }
}

// -- start -----------------------------------------------------------------------------------

// An old link may carry `?token=`: it is dropped from the location (and this history
// entry) at once, and never used.
const query = new URLSearchParams(location.search);
if (query.has("token")) {
  query.delete("token");
  const rest = query.toString();
  history.replaceState(null, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
}

$("sign-in-form").addEventListener("submit", signIn);
$("sign-out").addEventListener("click", signOut);
$("more-runs").addEventListener("click", () => loadRuns(false).catch((error) =>
  showError("runs-error", error)));
$("open-run").addEventListener("submit", (event) => {
  event.preventDefault();
  const run = $("run").value.trim();
  if (!run) return;
  shownRun = null;  // list again, even the run shown
  go(run, null);
});
window.addEventListener("popstate", () => route());

const kept = sessionStorage.getItem(KEPT);
if (kept) {
  session.token = kept;
  $("remember").checked = true;
  loadRuns(true).then(() => { signedIn(kept); route(); }).catch((error) => {
    session.token = null;
    if (error instanceof ApiError && error.status === 401) sessionStorage.removeItem(KEPT);
    showError("sign-in-error", error);
  });
}
