// The console's shared helpers: the signed-in token (in memory only), API calls that send
// it in the Authorization header and nowhere else, and DOM building that only ever sets
// text (never HTML), so record content cannot become markup.

export const API = "/api/workflow-streams";
export const $ = (id) => document.getElementById(id);

// The pasted token. It lives here, and in sessionStorage only when the user asked for it.
export const session = { token: null };

export class ApiError extends Error {
  constructor(status, problem) {
    super(`${status} ${problem.code || ""}`.trim());
    this.status = status;
    this.problem = problem;
  }
}

export async function api(path) {
  const response = await fetch(`${API}${path}`, {
    headers: { Authorization: `Bearer ${session.token}` },
    cache: "no-store",
  });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => ({})));
  return response.json();
}

export const id = (value) => encodeURIComponent(value);

// An element with text content and data attributes; children appended as given.
export function el(tag, { className, text, data, title } = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = String(text);
  if (title !== undefined) node.title = String(title);
  for (const [key, value] of Object.entries(data || {})) node.dataset[key] = String(value);
  node.append(...children);
  return node;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

// A bar's fill: a fraction of its track (CSSOM, which a strict CSP allows).
export function fill(track, fraction) {
  const clamped = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  track.querySelector(".fill").style.width = `${(clamped * 100).toFixed(2)}%`;
  track.dataset.fraction = clamped.toFixed(4);
}

export function showError(target, error) {
  $(target).textContent = error ? error.message : "";
}

// A stream's line in the streams list: its head and what sets it apart.
export function streamDetail(view) {
  const flags = [view.definition.direction === "input" ? "input" : null,
                 view.status.closed ? "closed" : null,
                 view.status.legal_hold ? "held" : null].filter(Boolean);
  return [`head ${view.status.head}`, ...flags].join(" · ");
}
