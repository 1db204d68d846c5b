// The page the Chromium test loads (tests/sdk_typescript/test_react_page.py): bundled with
// esbuild from the package, React included; no CDN. The test sets `window.RUNNEL` (the
// server, a token, the run and stream) before the page's scripts run.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { RunnelClient } from "@runnel/client";
import { useRunnelStream } from "@runnel/client/react";

const { baseUrl, token, run, stream } = window.RUNNEL;

// The test writes through the SDK, from the page: window.writer is the stream's handle.
window.writer = new RunnelClient({ baseUrl, token }).stream(run, stream);

function App() {
  const view = useRunnelStream(run, stream, { baseUrl, token, consumer: "ui", live: true });
  return (
    <main>
      <p id="status">{view.status}</p>
      <p id="resumed">{view.resumedAfter === null ? "" : String(view.resumedAfter)}</p>
      <ol id="records">
        {view.records.map((record) => (
          <li key={record.sequence} data-sequence={record.sequence}>{String(record.payload)}</li>
        ))}
      </ol>
      <ul id="live">
        {view.live.map((step) => <li key={step.source} data-source={step.source}>{step.text}</li>)}
      </ul>
      {view.error === null ? null : <p id="error">{view.error.message}</p>}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<StrictMode><App /></StrictMode>);
