// Queen console, core: the API client, the router, the refresh loop, the live chart and the
// dialogs. Views register themselves in Console.views (views.js, ops.js). Plain browser
// JavaScript, no library, no build step; every call goes to the broker's public API.
"use strict";
const Console = (() => {
  const TOKEN_KEY = "queen.token"; // sessionStorage: kept for this tab only
  const REFRESH_MS = 2000;
  const views = {};
  let current = null;
  let timer = null;

  // ---- API ----------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || `HTTP ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body) {
    const headers = { accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) {
      await askToken();
      return api(method, path, body);
    }
    const text = await res.text();
    let data = null;
    if (text) { try { data = JSON.parse(text); } catch (_) { data = text; } }
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
  }
  const get = (path) => api("GET", path);

  function askToken() {
    const dialog = document.getElementById("token");
    if (dialog.open) return new Promise((r) => dialog.addEventListener("close", r, { once: true }));
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        sessionStorage.setItem(TOKEN_KEY, document.getElementById("token-input").value.trim());
        tokenButton();
        resolve();
      }, { once: true });
      dialog.showModal();
    });
  }

  // The header's "Forget token" button: shown while this tab keeps a token (a token of the
  // wrong tenant or role can then be replaced without closing the tab).
  function tokenButton() {
    document.getElementById("token-forget").hidden = !sessionStorage.getItem(TOKEN_KEY);
  }

  // ---- DOM helpers --------------------------------------------------------------------
  function esc(v) {
    return String(v ?? "").replace(/[&<>"']/g, (c) =>
      ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  const num = (v) => (v === null || v === undefined || v === "" ? "—" : Number(v).toLocaleString("en-US"));
  const secs = (v) => {
    if (v === null || v === undefined) return "—";
    const s = Number(v);
    if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    if (s < 3600) return `${(s / 60).toFixed(1)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  };
  const when = (v) => (v ? new Date(v).toLocaleString() : "—");
  const q = (s) => encodeURIComponent(s);
  const $ = (sel, root = document) => root.querySelector(sel);

  function confirm(text) {
    const dialog = document.getElementById("confirm");
    document.getElementById("confirm-text").textContent = text;
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
      dialog.returnValue = "cancel";
      dialog.showModal();
    });
  }

  // Shows an action's outcome in `box`: the broker's own error text when it refuses.
  async function act(box, fn, okText) {
    box.hidden = false;
    try {
      await fn();
      box.className = "success";
      box.textContent = okText;
      refresh();
    } catch (e) {
      box.className = "error";
      box.textContent = e.status ? `${e.status}: ${e.message}` : String(e);
    }
  }

  // A table whose columns sort on click. cols: [{key, label, num, render}].
  function sortable(container, cols, rows, state) {
    const s = state || { key: cols[0].key, dir: 1 };
    const sorted = rows.slice().sort((a, b) => {
      const x = a[s.key], y = b[s.key];
      if (typeof x === "number" || typeof y === "number") return ((x ?? -1) - (y ?? -1)) * s.dir;
      return String(x ?? "").localeCompare(String(y ?? "")) * s.dir;
    });
    container.innerHTML = `<table><thead><tr>${cols.map((c) =>
      `<th class="sortable${c.num ? " num" : ""}" data-key="${c.key}">${esc(c.label)}${
        s.key === c.key ? (s.dir > 0 ? " ▲" : " ▼") : ""}</th>`).join("")}</tr></thead><tbody>${
      sorted.map((r) => `<tr>${cols.map((c) =>
        `<td class="${c.num ? "num" : ""}" data-col="${c.key}">${
          c.render ? c.render(r) : esc(r[c.key])}</td>`).join("")}</tr>`).join("") ||
      `<tr><td colspan="${cols.length}" class="muted">nothing yet</td></tr>`}</tbody></table>`;
    container.querySelectorAll("th.sortable").forEach((th) => th.addEventListener("click", () => {
      s.dir = s.key === th.dataset.key ? -s.dir : (cols.find((c) => c.key === th.dataset.key).num ? -1 : 1);
      s.key = th.dataset.key;
      sortable(container, cols, rows, s);
    }));
    return s;
  }

  // Prometheus text → [{name, labels, value}] (the per-queue gauges the console shows).
  function parseProm(text) {
    const out = [];
    for (const line of String(text).split("\n")) {
      const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)$/.exec(line);
      if (!m) continue;
      const labels = {};
      (m[3] || "").replace(/(\w+)="((?:[^"\\]|\\.)*)"/g, (_, k, v) => {
        labels[k] = v.replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
      });
      out.push({ name: m[1], labels, value: Number(m[4]) });
    }
    return out;
  }
  // Through api(), so the bearer token goes with it: the scrape then shows the token's
  // tenant's queues only (without it, an open metrics path shows the default tenant's view).
  async function queueGauges() {
    const text = await api("GET", "/metrics/prometheus");
    const gauges = {};
    for (const s of parseProm(typeof text === "string" ? text : "")) {
      if (!s.labels.queue) continue;
      const g = (gauges[s.labels.queue] ||= {});
      if (s.name === "queen_queue_depth") g.depth = s.value;
      if (s.name === "queen_queue_lag_seconds") g.lag = s.value;
      if (s.name === "queen_queue_throughput") g.throughput = s.value;
    }
    return gauges;
  }

  // ---- live chart (SVG) ---------------------------------------------------------------
  function chart(container, series, colors) {
    const w = 600, h = 160, pad = 28;
    const max = Math.max(1, ...series.flatMap((s) => s.points));
    const n = Math.max(2, ...series.map((s) => s.points.length));
    const x = (i) => pad + (i * (w - pad - 6)) / (n - 1);
    const y = (v) => h - 18 - (v / max) * (h - 30);
    // A line through the samples, and a dot on the newest (one sample draws no line).
    const lines = series.map((s, k) => `<polyline fill="none" stroke="${colors[k]}" stroke-width="2"
      points="${s.points.map((v, i) => `${x(i + n - s.points.length).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}"/>${
      s.points.length ? `<circle r="3" fill="${colors[k]}" cx="${x(n - 1).toFixed(1)}" cy="${y(s.points[s.points.length - 1]).toFixed(1)}"/>` : ""}`);
    container.innerHTML = `<svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" role="img">
      <line x1="${pad}" y1="${y(0)}" x2="${w}" y2="${y(0)}" stroke="#ccd"/>
      <line x1="${pad}" y1="${y(max)}" x2="${w}" y2="${y(max)}" stroke="#eef"/>
      <text x="2" y="${y(max) + 4}" font-size="10" fill="#889">${max.toFixed(max < 10 ? 1 : 0)}</text>
      <text x="2" y="${y(0) + 4}" font-size="10" fill="#889">0</text>${lines.join("")}</svg>
      <div class="legend">${series.map((s, k) => `<span><span class="swatch" style="background:${colors[k]}"></span>${
        esc(s.label)}: <b data-series="${esc(s.key)}">${(s.points[s.points.length - 1] ?? 0).toFixed(1)}</b>/s</span>`).join("")}</div>`;
  }

  // ---- router and refresh loop ----------------------------------------------------------
  function route() {
    const parts = location.pathname.replace(/^\/console\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
    const name = location.pathname === "/" || parts.length === 0 ? "overview" : parts[0];
    return { name: views[name] ? name : "overview", args: parts.slice(1), params: new URLSearchParams(location.search) };
  }

  function go(href) {
    history.pushState(null, "", href);
    show();
  }

  async function show() {
    const r = route();
    document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === r.name));
    current = { view: views[r.name], r, state: {} };
    const root = document.getElementById("view");
    root.innerHTML = "";
    current.view.render(root, r, current.state);
    await refresh();
  }

  async function refresh() {
    if (!current) return;
    const mine = current;
    try {
      await mine.view.refresh(document.getElementById("view"), mine.r, mine.state);
      document.getElementById("banner").hidden = true;
      document.getElementById("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      const b = document.getElementById("banner");
      b.hidden = false;
      b.textContent = `Could not reach the broker: ${e.message}`;
    }
  }

  async function nodeBadge() {
    try {
      const [m, h] = await Promise.all([get("/metrics"), fetch("/health/ready")]);
      const ok = h.ok ? "ok" : "bad";
      document.getElementById("node").innerHTML =
        `${esc(m.mesh && m.mesh.nodeId)} <span class="pill ${ok}">${h.ok ? "ready" : "not ready"}</span>`;
    } catch (_) { /* the banner says it */ }
  }

  function start() {
    document.addEventListener("click", (e) => {
      const a = e.target.closest("a[data-nav]");
      if (!a || e.ctrlKey || e.metaKey) return;
      e.preventDefault();
      go(a.getAttribute("href"));
    });
    window.addEventListener("popstate", show);
    document.getElementById("token-forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      location.reload();
    });
    tokenButton();
    show();
    nodeBadge();
    timer = setInterval(() => {
      if (document.querySelector("dialog[open]")) return;
      refresh();
      nodeBadge();
    }, REFRESH_MS);
  }

  return { views, api, get, esc, num, secs, when, q, $, confirm, act, sortable, chart,
           queueGauges, parseProm, go, refresh, start, REFRESH_MS, stop: () => clearInterval(timer) };
})();
