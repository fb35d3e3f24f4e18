// Queen console, the operating views: consumer groups (seek, delete), messages (find,
// inspect), dead letters (inspect, retry, delete) and maintenance (the pop and push switches).
"use strict";
(() => {
  const C = Console;
  const { esc, num, secs, q, $ } = C;
  const iso = (local) => (local ? new Date(local).toISOString() : "");

  // ---- consumer groups ----------------------------------------------------------------
  C.views.groups = {
    render(root, r) {
      root.innerHTML = `<h1>Consumer groups</h1>
        <div class="toolbar"><input id="group-filter" placeholder="filter by group or queue" value="${esc(r.params.get("group") || "")}">
        <label>seek time <input type="datetime-local" id="seek-time" step="1"></label></div>
        <div id="group-result" hidden></div>
        <div class="card" id="group-table"></div>
        <div class="card" id="group-detail" hidden></div>`;
      $("#group-filter", root).addEventListener("input", () => C.refresh());
      $("#group-table", root).addEventListener("click", async (e) => {
        const b = e.target.closest("button[data-act]");
        if (!b) return;
        const { act, group, queue } = b.dataset;
        const box = $("#group-result", root);
        const seek = `/api/v1/consumer-groups/${q(group)}/queues/${q(queue)}/seek`;
        if (act === "end" && (await C.confirm(`Move ${group} past every message of ${queue}?`))) {
          C.act(box, () => C.api("POST", seek, { toEnd: true }), `${group} now starts at the end of ${queue}.`);
        } else if (act === "time") {
          const t = $("#seek-time", root).value;
          if (!t) { box.hidden = false; box.className = "error"; box.textContent = "Pick a seek time first."; return; }
          if (await C.confirm(`Move ${group} on ${queue} to ${new Date(t).toLocaleString()}?`)) {
            C.act(box, () => C.api("POST", seek, { timestamp: iso(t) }), `${group} moved on ${queue}.`);
          }
        } else if (act === "delete" && (await C.confirm(`Delete group ${group} on ${queue} (its cursors and subscription)?`))) {
          C.act(box, () => C.api("DELETE", `/api/v1/consumer-groups/${q(group)}/queues/${q(queue)}`), `${group} deleted on ${queue}.`);
        } else if (act === "detail") {
          r.params.set("detail", group);
          C.refresh();
        }
      });
    },
    async refresh(root, r, st) {
      const groups = (await C.get("/api/v1/consumer-groups")) || [];
      const f = ($("#group-filter", root).value || "").toLowerCase();
      const rows = groups.filter((g) => !f || g.name.toLowerCase().includes(f) || String(g.queueName).toLowerCase().includes(f));
      st.sort = C.sortable($("#group-table", root), [
        { key: "name", label: "group", render: (g) => `<button class="ghost" data-act="detail" data-group="${esc(g.name)}" data-queue="${esc(g.queueName)}">${esc(g.name)}</button>` },
        { key: "queueName", label: "queue", render: (g) => `<a href="/console/queues/${q(g.queueName)}" data-nav>${esc(g.queueName)}</a>` },
        { key: "totalLag", label: "lag (messages)", num: true,
          render: (g) => `<span class="lag" data-group="${esc(g.name)}" data-queue="${esc(g.queueName)}">${num(g.totalLag)}</span>` },
        { key: "maxTimeLag", label: "oldest", num: true, render: (g) => secs(g.maxTimeLag) },
        { key: "partitionsWithLag", label: "partitions behind", num: true },
        { key: "members", label: "members", num: true },
        { key: "state", label: "state" },
        { key: "actions", label: "", render: (g) => ["end", "time", "delete"].map((a) =>
          `<button class="ghost${a === "delete" ? " danger" : ""}" data-act="${a}" data-group="${esc(g.name)}" data-queue="${esc(g.queueName)}">${
            { end: "seek to end", time: "seek to time", delete: "delete…" }[a]}</button>`).join(" ") },
      ], rows, st.sort);
      const detail = r.params.get("detail");
      const box = $("#group-detail", root);
      box.hidden = !detail;
      if (!detail) return;
      let d;
      try { d = await C.get(`/api/v1/consumer-groups/${q(detail)}`); } catch (e) { box.textContent = e.message; return; }
      box.innerHTML = `<h2>${esc(detail)}: lag per partition</h2>${Object.entries(d || {}).map(([queue, v]) =>
        `<h3 class="mono">${esc(queue)}</h3><table><thead><tr><th>partition</th><th class="num">committed</th><th class="num">lag</th><th class="num">oldest</th><th>lease</th><th>last consumed</th></tr></thead><tbody>${
          (v.partitions || []).map((p) => `<tr><td>${esc(p.partition)}</td><td class="num">${num(p.committedOffset)}</td><td class="num">${num(p.offsetLag)}</td><td class="num">${
            secs(p.timeLagSeconds)}</td><td>${p.leaseActive ? '<span class="pill warn">held</span>' : ""}</td><td>${C.when(p.lastConsumedAt)}</td></tr>`).join("")}</tbody></table>`).join("")}`;
    },
  };

  // ---- messages -----------------------------------------------------------------------
  C.views.messages = {
    render(root, r) {
      if (r.args.length >= 2) return renderMessage(root, r);
      const p = r.params;
      root.innerHTML = `<h1>Messages</h1>
        <form class="toolbar" id="message-form">
          <input name="queue" placeholder="queue" value="${esc(p.get("queue") || "")}">
          <input name="partition" placeholder="partition" value="${esc(p.get("partition") || "")}">
          <input name="txn" placeholder="transaction id" value="${esc(p.get("txn") || "")}">
          <select name="status"><option value="">any status</option>${["pending", "processing", "completed"].map((s) =>
            `<option${p.get("status") === s ? " selected" : ""}>${s}</option>`).join("")}</select>
          <label>from <input type="datetime-local" name="from" step="1"></label>
          <label>to <input type="datetime-local" name="to" step="1"></label>
          <button type="submit">Find</button></form>
        <div class="card" id="message-table"></div>`;
      $("#message-form", root).addEventListener("submit", (e) => {
        e.preventDefault();
        const f = new FormData(e.target), out = new URLSearchParams();
        for (const [k, v] of f) if (v) out.set(k, k === "from" || k === "to" ? iso(v) : v);
        C.go(`/console/messages?${out}`);
      });
    },
    async refresh(root, r) {
      if (r.args.length >= 2) return refreshMessage(root, r);
      const p = r.params, query = new URLSearchParams({ limit: "200" });
      for (const k of ["queue", "partition", "status", "from", "to"]) if (p.get(k)) query.set(k, p.get(k));
      const list = await C.get(`/api/v1/messages?${query}`);
      const txn = p.get("txn");
      const rows = (list.messages || []).filter((m) => !txn || m.transactionId === txn);
      $("#message-table", root).innerHTML = `<table id="messages"><thead><tr><th>pushed</th><th>queue / partition</th><th>transaction id</th><th class="num">offset</th><th>status</th><th>groups</th></tr></thead><tbody>${
        rows.map((m) => `<tr><td>${C.when(m.createdAt)}</td><td>${esc(m.queuePath)}</td><td class="mono"><a href="/console/messages/${q(m.partitionId)}/${q(m.transactionId)}" data-nav>${
          esc(m.transactionId)}</a></td><td class="num">${num(m.offset)}</td><td><span class="pill">${esc(m.status)}</span></td><td>${esc(m.busStatus)}</td></tr>`).join("") ||
        '<tr><td colspan="6" class="muted">no message matches</td></tr>'}</tbody></table>`;
    },
  };

  function renderMessage(root, r) {
    const [pid, txn] = r.args;
    root.innerHTML = `<h1>Message <span class="mono">${esc(txn)}</span></h1>
      <div class="cols"><div class="card"><h2>Where and how</h2><dl class="kv" id="message-facts"></dl></div>
      <div class="card"><h2>Each group's view</h2><div id="message-groups"></div></div></div>
      <div class="card"><h2>Payload</h2><pre id="message-payload"></pre></div>
      <div class="card"><h2>Traces</h2><div id="message-traces"></div></div>
      <div class="toolbar"><button class="danger" id="delete-message">Delete payload…</button></div><div id="message-result" hidden></div>`;
    $("#delete-message", root).addEventListener("click", async () => {
      if (!(await C.confirm(`Erase the payload of ${txn} (and its dead letters)?`))) return;
      C.act($("#message-result", root), () => C.api("DELETE", `/api/v1/messages/${q(pid)}/${q(txn)}`), "Erased.");
    });
  }

  async function refreshMessage(root, r) {
    const [pid, txn] = r.args;
    const [m, traces] = await Promise.all([C.get(`/api/v1/messages/${q(pid)}/${q(txn)}`),
      C.get(`/api/v1/traces/${q(pid)}/${q(txn)}`).catch(() => ({ traces: [] }))]);
    const facts = { queue: m.queue, partition: m.partition, offset: m.offset, status: m.status, pushed: C.when(m.createdAt),
      "trace id": m.traceId, "dead letter": m.errorMessage || (m.deadLetter && JSON.stringify(m.deadLetter)) };
    $("#message-facts", root).innerHTML = Object.entries(facts).filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
    const views = m.consumerGroups || m.groups || m.consumers || [];
    $("#message-groups", root).innerHTML = Array.isArray(views) && views.length ? `<table><tbody>${views.map((g) =>
      `<tr><td>${esc(g.consumerGroup || g.name)}</td><td>${esc(g.status)}</td></tr>`).join("")}</tbody></table>` :
      `<pre>${esc(JSON.stringify(views, null, 2))}</pre>`;
    $("#message-payload", root).textContent = JSON.stringify(m.data ?? m.payload, null, 2);
    const list = Array.isArray(traces) ? traces : traces.traces || [];
    $("#message-traces", root).innerHTML = list.length ? `<table><tbody>${list.map((t) =>
      `<tr><td>${C.when(t.created_at)}</td><td>${esc(t.event_type)}</td><td>${esc(t.consumer_group)}</td><td>${esc((t.trace_names || []).join(", "))}</td><td class="mono">${esc(JSON.stringify(t.data))}</td></tr>`).join("")}</tbody></table>` :
      '<p class="muted">no traces recorded</p>';
  }

  // ---- dead letters -------------------------------------------------------------------
  C.views.dlq = {
    render(root, r, st) {
      st.open = new Set();
      root.innerHTML = `<h1>Dead letters</h1>
        <form class="toolbar" id="dlq-form"><input name="queue" placeholder="queue" value="${esc(r.params.get("queue") || "")}">
        <input name="consumerGroup" placeholder="consumer group" value="${esc(r.params.get("consumerGroup") || "")}">
        <button type="submit">Filter</button> <span class="muted" id="dlq-total"></span></form>
        <div id="dlq-result" hidden></div><div class="card" id="dlq-table"></div>`;
      $("#dlq-form", root).addEventListener("submit", (e) => {
        e.preventDefault();
        const out = new URLSearchParams();
        for (const [k, v] of new FormData(e.target)) if (v) out.set(k, v);
        C.go(`/console/dlq?${out}`);
      });
      $("#dlq-table", root).addEventListener("click", async (e) => {
        const b = e.target.closest("button[data-act]");
        if (!b) return;
        const { act, pid, txn } = b.dataset;
        const box = $("#dlq-result", root);
        if (act === "inspect") { st.open.has(txn) ? st.open.delete(txn) : st.open.add(txn); C.refresh(); }
        if (act === "retry") C.act(box, () => C.api("POST", `/api/v1/messages/${q(pid)}/${q(txn)}/retry`), `A copy of ${txn} is back in its queue.`);
        if (act === "delete" && (await C.confirm(`Delete the dead letter ${txn} and erase its payload?`))) {
          C.act(box, () => C.api("DELETE", `/api/v1/messages/${q(pid)}/${q(txn)}`), `${txn} deleted.`);
        }
      });
    },
    async refresh(root, r, st) {
      const query = new URLSearchParams({ limit: "200" });
      for (const k of ["queue", "consumerGroup"]) if (r.params.get(k)) query.set(k, r.params.get(k));
      const d = await C.get(`/api/v1/dlq?${query}`);
      $("#dlq-total", root).textContent = `${num(d.total)} dead letter(s)`;
      $("#dlq-table", root).innerHTML = `<table id="dlq"><thead><tr><th>failed</th><th>queue / partition</th><th>group</th><th>transaction id</th><th>error</th><th class="num">retries</th><th></th></tr></thead><tbody>${
        (d.messages || []).map((m) => `<tr data-txn="${esc(m.transactionId)}"><td>${C.when(m.failedAt)}</td><td>${esc(m.queue)} / ${esc(m.partition)}</td><td>${esc(m.consumerGroup)}</td>
          <td class="mono">${esc(m.transactionId)}</td><td>${esc(m.errorMessage)}</td><td class="num">${num(m.retryCount)}</td><td style="white-space:nowrap">${
          ["inspect", "retry", "delete"].map((a) => `<button class="${a === "retry" ? "" : "ghost"}${a === "delete" ? " danger" : ""}" data-act="${a}" data-pid="${esc(m.partitionId)}" data-txn="${esc(m.transactionId)}">${a}</button>`).join(" ")}</td></tr>${
          st.open.has(m.transactionId) ? `<tr><td colspan="7"><pre>${esc(JSON.stringify(m.data, null, 2))}</pre></td></tr>` : ""}`).join("") ||
        '<tr><td colspan="7" class="muted">no dead letters</td></tr>'}</tbody></table>`;
    },
  };

  // ---- maintenance --------------------------------------------------------------------
  C.views.maintenance = {
    render(root) {
      root.innerHTML = `<h1>Maintenance</h1><div class="card" id="switches"></div><div id="maintenance-result" hidden></div>`;
      $("#switches", root).addEventListener("click", async (e) => {
        const b = e.target.closest("button[data-switch]");
        if (!b) return;
        const key = b.dataset.switch, on = b.dataset.to === "true";
        const text = key === "push"
          ? (on ? "Send every push on every node to its spool? Pushes are answered buffered and stored, in order, when this is turned off."
                : "Store the spooled pushes and send new pushes to the database again, on every node?")
          : (on ? `Pause every ${key} on every node? Clients get empty answers until it is turned off.` : `Resume ${key}s on every node?`);
        if (await C.confirm(text)) {
          C.act($("#maintenance-result", root), () => C.api("POST", "/api/v1/system/maintenance", { [key]: on }), `${key} maintenance ${on ? "on" : "off"}.`);
        }
      });
    },
    async refresh(root) {
      const m = await C.get("/api/v1/system/maintenance");
      const held = (key) => key === "push" ? "spooled" : "paused";
      const row = (key, what) => `<p class="switch">${what}: <span id="switch-${key}" class="pill ${m[key] ? "warn" : "ok"}">${
        m[key] ? held(key) : "running"}</span> <button id="toggle-${key}" data-switch="${key}" data-to="${!m[key]}" class="${m[key] ? "" : "danger"}">${
        m[key] ? `Resume ${key}s` : `Pause ${key}s…`}</button></p>`;
      $("#switches", root).innerHTML = row("pop", "Pops") + ("push" in m ? row("push", "Pushes") :
        '<p class="muted">This broker has no push switch: pushes are always accepted.</p>') +
        '<p class="muted">The switches are stored in PostgreSQL; the pop switch is told to every peer at once, the push switch reaches them within a second.</p>';
    },
  };
})();
