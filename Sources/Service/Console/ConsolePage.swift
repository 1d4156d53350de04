/// The console page: plain HTML, CSS and JavaScript served from the binary
/// (no build step, nothing fetched from elsewhere). It logs in, then polls
/// the REST API; the live picture is one <img> on the MJPEG preview that
/// layout changes never reload (only CSS moves it).
enum ConsolePage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>allspark-recorder</title>
<style>
  :root { --bg:#111; --panel:#1c1c1e; --text:#eee; --muted:#999; --accent:#0a84ff; --red:#ff453a; --orange:#ff9f0a; --green:#30d158; }
  * { box-sizing:border-box; }
  body { margin:0; font:15px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--text); }
  header { display:flex; align-items:center; gap:.6em; padding:.5em .8em; background:var(--panel); }
  header h1 { font-size:1em; margin:0; flex:1; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
  #indicator { width:.8em; height:.8em; border-radius:50%; background:var(--red); flex:none; }
  #indicator.connecting { background:var(--orange); } #indicator.connected { background:var(--green); } #indicator.none { background:#636366; }
  #lock { display:none; } #lock.on { display:inline; }
  #rec { color:var(--red); font-weight:700; } #rec.degraded { color:var(--orange); }
  main { display:grid; gap:.8em; padding:.8em; grid-template-columns:1fr; }
  #live { position:relative; background:#000; aspect-ratio:16/9; width:100%; border-radius:6px; overflow:hidden; }
  #live img { width:100%; height:100%; object-fit:contain; display:block; }
  .overlay { position:absolute; inset:0; display:none; align-items:center; justify-content:center; background:rgba(0,0,0,.6); font-weight:600; }
  #live.connecting #connecting, #live.error #failed { display:flex; }
  section.panel { background:var(--panel); border-radius:6px; padding:.6em .8em; }
  section.panel h2 { font-size:.9em; text-transform:uppercase; color:var(--muted); margin:.2em 0 .5em; }
  dl { display:grid; grid-template-columns:max-content 1fr; gap:.2em .8em; margin:0; } dt { color:var(--muted); } dd { margin:0; }
  button, input, select { font:inherit; color:var(--text); background:#2c2c2e; border:1px solid #3a3a3c; border-radius:4px; padding:.3em .6em; }
  button.primary { background:var(--accent); border-color:var(--accent); }
  .hour { margin:.4em 0; } .hour summary { cursor:pointer; }
  .chunks a { color:var(--accent); } .chunks li { margin:.15em 0; } .chunks a.companion { font-size:.85em; }
  #login { max-width:22em; margin:15vh auto; display:flex; flex-direction:column; gap:.6em; padding:1em; }
  #login-error, .error-text { color:var(--red); min-height:1.2em; }
  form.controls { display:flex; flex-wrap:wrap; align-items:center; gap:.4em .6em; margin-top:.6em; }
  form.controls input[type=text] { flex:1 1 12em; min-width:0; } form.controls input[type=number] { width:6em; }
  .note { color:var(--muted); font-size:.9em; min-height:1.2em; width:100%; }
  .hidden { display:none !important; }
  /* Phone landscape: picture left, panels right. Desktop: picture big, panels in a column. */
  @media (orientation: landscape) and (max-height: 540px) { main { grid-template-columns:3fr 2fr; } #live { grid-row:span 4; } }
  @media (min-width: 1000px) { main { grid-template-columns:2fr 1fr; } #live { grid-row:span 4; } }
</style>
</head>
<body>
<form id="login" class="panel hidden">
  <h1>allspark-recorder</h1>
  <label>Password for admin <input id="password" type="password" autocomplete="current-password" required></label>
  <button class="primary" type="submit">Log in</button>
  <div id="login-error"></div>
</form>
<div id="app" class="hidden">
  <header>
    <span id="indicator" title="server connection"></span><span id="lock" title="encrypted (wss)">&#128274;</span>
    <span id="rec" class="hidden" role="status"></span>
    <h1 id="device">allspark-recorder</h1>
    <button id="logout">Log out</button>
  </header>
  <main>
    <div id="live" class="connecting">
      <img id="preview" alt="live picture (faces pixelated)">
      <div class="overlay" id="connecting">connecting…</div>
      <div class="overlay" id="failed">no picture — retrying</div>
    </div>
    <section class="panel"><h2>Recording</h2><dl id="recording"></dl></section>
    <section class="panel"><h2>Server</h2><dl id="server"></dl>
      <form id="server-form" class="controls">
        <input id="host" type="text" placeholder="host:port, ws://… or wss://…" autocomplete="off" spellcheck="false" aria-label="server host">
        <select id="discovered" aria-label="discovered servers"><option value="">discovered servers…</option></select>
        <label><input id="verify-tls" type="checkbox" checked> verify TLS</label>
        <label title="with no host, connect to a server found on the local network"><input id="discovery" type="checkbox"> discover servers</label>
        <button id="connect" class="primary" type="submit">Connect</button> <button id="disconnect" type="button">Disconnect</button>
        <div id="server-result" class="note"></div>
      </form></section>
    <section class="panel"><h2>Settings</h2>
      <form id="settings-form" class="controls">
        <label>container <select id="video-format"><option>mp4</option><option>mov</option></select></label>
        <label>chunk length <input id="chunk-seconds" type="number" min="0.5" max="3600" step="0.1" required> s</label>
        <button class="primary" type="submit">Save</button>
        <div id="settings-result" class="note"></div>
      </form></section>
    <section class="panel"><h2>Storage</h2><dl id="storage"></dl></section>
    <section class="panel"><h2>Recordings</h2>
      <div>Send to server: <input id="from" type="datetime-local" step="1"> – <input id="to" type="datetime-local" step="1">
        <button id="send">Send</button> <span id="send-result"></span></div>
      <div id="chunks" class="chunks"></div></section>
  </main>
</div>
<script>
"use strict";
let csrf = null;
const $ = (id) => document.getElementById(id);
async function api(path, options = {}) {
  options.headers = Object.assign({ "Content-Type": "application/json", "X-Requested-With": "allspark-console" }, options.headers || {});
  if (csrf && options.method && options.method !== "GET") options.headers["X-CSRF-Token"] = csrf;
  options.credentials = "same-origin";
  const response = await fetch(path, options);
  if (response.status === 401) { showLogin(); throw new Error("log in"); }
  const body = response.status === 204 ? null : await response.json();
  if (!response.ok) throw new Error(body && body.error ? body.error.message : response.statusText);
  return body;
}
function showLogin() { $("app").classList.add("hidden"); $("login").classList.remove("hidden"); $("preview").removeAttribute("src"); }
function showApp() { $("login").classList.add("hidden"); $("app").classList.remove("hidden"); startPreview(); refresh(); loadServer(); loadSettings(); }
$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("login-error").textContent = "";
  try {
    const answer = await fetch("/api/v1/login", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Requested-With": "allspark-console" }, body: JSON.stringify({ password: $("password").value }) });
    const body = await answer.json();
    if (!answer.ok) { $("login-error").textContent = body.error.message; return; }
    csrf = body.csrf_token; $("password").value = ""; showApp();
  } catch (e) { $("login-error").textContent = String(e); }
});
$("logout").addEventListener("click", async () => { try { await api("/api/v1/logout", { method: "POST" }); } catch (e) {} csrf = null; showLogin(); });
function startPreview() {
  const img = $("preview"), live = $("live");
  live.className = "connecting";
  img.onload = () => { live.className = ""; };
  img.onerror = () => { live.className = "error"; setTimeout(startPreview, 3000); };
  img.src = "/api/v1/preview.mjpeg?t=" + Date.now();
}
function fill(dl, rows) {
  dl.replaceChildren(...rows.flatMap(([k, v]) => { const dt = document.createElement("dt"), dd = document.createElement("dd"); dt.textContent = k; dd.textContent = v; return [dt, dd]; }));
}
const size = (b) => b >= 1073741824 ? (b / 1073741824).toFixed(1) + " GiB" : b >= 1048576 ? (b / 1048576).toFixed(1) + " MiB" : (b / 1024).toFixed(0) + " KiB";
async function refresh() {
  try {
    const s = await api("/api/v1/status");
    $("device").textContent = s.device;
    const ind = $("indicator"); ind.className = s.server.state;
    $("lock").classList.toggle("on", s.server.scheme === "wss");
    fill($("recording"), [["state", s.recording.state], ["frames", s.recording.frames_recorded + " recorded / " + s.recording.frames_captured + " captured"],
      ["picture", s.recording.width ? s.recording.width + "×" + s.recording.height + " @ " + s.recording.frames_per_second.toFixed(0) + " fps" : "—"],
      ["chunks", s.recording.video_format + ", " + s.recording.chunk_duration_ms / 1000 + " s"], ["privacy", s.recording.privacy],
      ["problem", s.recording.last_problem || "none"], ["health", s.health.status + (s.health.problems.length ? ": " + s.health.problems.join("; ") : "")]]);
    // REC while frames reach the chunks; degraded (still recording) said plainly.
    const rec = $("rec"); rec.classList.toggle("hidden", s.health.status === "not_recording");
    rec.classList.toggle("degraded", s.health.status === "degraded");
    rec.textContent = s.health.status === "degraded" ? "● REC degraded" : "● REC"; rec.title = s.health.problems.join("\n");
    fill($("server"), [["state", s.server.state + (s.server.scheme ? " (" + s.server.scheme + ")" : "")], ["address", s.server.address || "none"]]);
    fill($("storage"), [["used", size(s.storage.bytes) + " of " + size(s.storage.buffer_max_bytes)], ["disk free", s.storage.disk_free_bytes != null ? size(s.storage.disk_free_bytes) : "?"],
      ["chunks", String(s.storage.chunks)], ["oldest", s.storage.oldest ? new Date(s.storage.oldest).toLocaleString() : "—"]]);
    const c = await api("/api/v1/chunks?from=-86400");
    const hours = new Map();
    for (const chunk of c.chunks.reverse()) {
      const d = new Date(chunk.start); const key = d.toLocaleDateString() + " " + String(d.getHours()).padStart(2, "0") + ":00";
      if (!hours.has(key)) hours.set(key, []); hours.get(key).push(chunk);
    }
    const open = new Set([...document.querySelectorAll("#chunks details[open]")].map((d) => d.dataset.hour));
    $("chunks").replaceChildren(...[...hours].map(([hour, list], i) => {
      const details = document.createElement("details"); details.className = "hour"; details.dataset.hour = hour;
      if (open.has(hour) || (open.size === 0 && i === 0)) details.open = true;
      const summary = document.createElement("summary"); summary.textContent = hour + " — " + list.length + " chunks"; details.append(summary);
      const ul = document.createElement("ul");
      for (const chunk of list) { const li = document.createElement("li"), a = document.createElement("a");
        a.href = chunk.url; a.textContent = new Date(chunk.start).toLocaleTimeString() + " (" + chunk.duration_s.toFixed(1) + " s, " + size(chunk.size_bytes) + ")";
        li.append(a);
        // Its companions, as small links after it (timestamps, audio).
        for (const c of chunk.companions || []) { const link = document.createElement("a");
          link.href = c.url; link.className = "companion"; link.textContent = c.kind; link.title = c.name + ", " + size(c.size_bytes);
          li.append(" · ", link); }
        ul.append(li); }
      details.append(ul); return details;
    }));
  } catch (e) { if (String(e) !== "Error: log in") console.warn(e); }
}
$("send").addEventListener("click", async () => {
  try {
    const from = new Date($("from").value).toISOString(), to = new Date($("to").value).toISOString();
    const r = await api("/api/v1/uploads", { method: "POST", body: JSON.stringify({ from, to }) });
    $("send-result").textContent = r.accepted[0].chunks + " chunk(s) queued";
  } catch (e) { $("send-result").textContent = String(e.message || e); }
});
// Server controls: the form shows the chosen host (not overwritten while polling); Connect applies it
// (an empty host with "discover servers" connects to the one discovery picks); Disconnect ends both.
function showServer(s) {
  $("host").value = s.host; $("verify-tls").checked = s.verify_tls; $("discovery").checked = s.discovery;
}
async function loadServer() { try { showServer(await api("/api/v1/server")); } catch (e) {} }
async function changeServer(host, discovery) {
  $("server-result").textContent = "";
  try {
    const s = await api("/api/v1/server", { method: "PATCH", body: JSON.stringify({ host, verify_tls: $("verify-tls").checked, discovery }) });
    showServer(s);
    $("server-result").textContent = s.host ? "connecting to " + s.host + "…" : (s.discovery ? "no host: using the server discovery picks" : "disconnected");
    refresh();
  } catch (e) { $("server-result").textContent = String(e.message || e); }
}
$("server-form").addEventListener("submit", (event) => { event.preventDefault(); changeServer($("host").value.trim(), $("discovery").checked); });
$("disconnect").addEventListener("click", () => changeServer("", false));
$("discovered").addEventListener("change", () => { if ($("discovered").value) $("host").value = $("discovered").value; });
async function refreshServers() {
  try {
    const list = await api("/api/v1/servers"), select = $("discovered"), chosen = select.value;
    const options = list.map((s) => { const a = s.addresses[0] || s.host; const o = document.createElement("option");
      o.value = (a.includes(":") ? "[" + a + "]" : a) + ":" + s.port; o.textContent = s.name + " (" + o.value + ")"; return o; });
    const first = document.createElement("option"); first.value = ""; first.textContent = list.length ? "discovered servers…" : "no server discovered";
    select.replaceChildren(first, ...options); select.value = chosen;
  } catch (e) {}
}
// Settings: PATCHed with the version they were read at; a change made elsewhere meanwhile is answered 409.
let settingsVersion = null;
async function loadSettings() {
  const r = await fetch("/api/v1/settings", { credentials: "same-origin", headers: { "X-Requested-With": "allspark-console" } });
  if (!r.ok) return;
  const s = await r.json(); settingsVersion = r.headers.get("ETag");
  $("video-format").value = s.video_format; $("chunk-seconds").value = s.chunk_duration_ms / 1000;
}
$("settings-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const result = $("settings-result"); result.textContent = ""; result.classList.remove("error-text");
  const body = { video_format: $("video-format").value, chunk_duration_ms: Math.round(Number($("chunk-seconds").value) * 1000) };
  try {
    const r = await fetch("/api/v1/settings", { method: "PATCH", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "X-Requested-With": "allspark-console", "X-CSRF-Token": csrf, "If-Match": settingsVersion } });
    const answer = await r.json();
    if (r.status === 409) {
      await loadSettings();
      result.classList.add("error-text"); result.textContent = "Not saved: the settings were changed elsewhere; reloaded, check them and save again.";
    } else if (!r.ok) {
      result.classList.add("error-text"); result.textContent = answer.error.message;
    } else {
      settingsVersion = r.headers.get("ETag"); result.textContent = "Saved: the next chunk follows.";
    }
  } catch (e) { result.classList.add("error-text"); result.textContent = String(e); }
});
setInterval(() => { if (!$("app").classList.contains("hidden")) { refresh(); refreshServers(); } }, 3000);
fetch("/api/v1/session", { credentials: "same-origin", headers: { "X-Requested-With": "allspark-console" } }).then(async (r) => {
  if (r.ok) { csrf = (await r.json()).csrf_token; showApp(); } else showLogin();
}).catch(showLogin);
</script>
</body>
</html>
"""#
}
