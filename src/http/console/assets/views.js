// Queen console, the reading views: overview, queues, one queue (with its options editor).
"use strict";
(() => {
  const C = Console;
  const { esc, num, secs, q, $ } = C;

  // ---- overview ---------------------------------------------------------------------
  const HISTORY = 60; // samples kept for the live chart (two minutes at one every 2 s)
  C.views.overview = {
    render(root) {
      root.innerHTML = `<h1>Overview</h1>
        <div class="grid" id="stats"></div>
        <div class="cols">
          <div class="card chart"><h2>Messages per second (cluster)</h2><div id="rate"></div></div>
          <div class="card"><h2>Nodes</h2><div id="nodes"></div></div>
        </div>
        <div class="cols">
          <div class="card"><h2>Deepest queues</h2><div id="top-queues"></div></div>
          <div class="card"><h2>Laggiest consumer groups</h2><div id="laggiest"></div></div>
        </div>`;
    },
    async refresh(root, _r, st) {
      const [ov, queues, groups, metrics, ready] = await Promise.all([
        C.get("/api/v1/resources/overview"), C.get("/api/v1/resources/queues?limit=10000"),
        C.get("/api/v1/consumer-groups"), C.get("/metrics"), fetch("/health/ready"),
      ]);
      const m = ov.messages || {};
      const now = Date.now();
      st.samples ||= { inn: [], out: [] };
      if (st.last) {
        const dt = Math.max(0.001, (now - st.last.at) / 1000);
        st.samples.inn.push(Math.max(0, (m.total - st.last.total) / dt));
        st.samples.out.push(Math.max(0, (m.completed - st.last.completed) / dt));
        for (const k of ["inn", "out"]) if (st.samples[k].length > HISTORY) st.samples[k].shift();
      }
      st.last = { at: now, total: m.total, completed: m.completed };
      const stat = (id, label, value) =>
        `<div class="card stat"><div class="label">${label}</div><div class="value" id="${id}">${value}</div></div>`;
      $("#stats", root).innerHTML = [
        stat("stat-depth", "Total depth", num(m.pending)),
        stat("stat-processing", "In flight", num(m.processing)),
        stat("stat-queues", "Queues", num(ov.queues)),
        stat("stat-groups", "Consumer groups", num(ov.consumerGroups)),
        stat("stat-dlq", "Dead letters", num(m.deadLetter)),
        stat("stat-total", "Messages ever", num(m.total)),
      ].join("");
      C.chart($("#rate", root), [
        { key: "in", label: "in", points: st.samples.inn },
        { key: "out", label: "out (completed)", points: st.samples.out },
      ], ["#5b3cc4", "#1f8a4c"]);
      const mesh = metrics.mesh || {};
      const nodes = [{ self: true, nodeId: mesh.nodeId, addr: location.host, connected: ready.ok }]
        .concat((mesh.peers || []).filter((p) => !p.self));
      $("#nodes", root).innerHTML = `<table><thead><tr><th>node</th><th>address</th><th>state</th></tr></thead><tbody>${
        nodes.map((n) => `<tr><td class="mono">${esc(n.nodeId || "?")}${n.self ? " (this)" : ""}</td><td class="mono">${
          esc(n.addr)}</td><td><span class="pill ${n.connected ? "ok" : "bad"}">${
          n.self ? (n.connected ? "ready" : "not ready") : (n.connected ? "connected" : "unreachable")}</span></td></tr>`).join("")}
        </tbody></table><p class="muted">Pool ${num(metrics.pool && metrics.pool.inUse)} / ${num(metrics.pool && metrics.pool.size)} in use ·
        pops ${metrics.maintenance ? '<span class="pill warn">paused (maintenance)</span>' : "on"} ·
        ${num(mesh.peersConnected)} mesh peer(s) connected</p>`;
      const qs = (queues.queues || []).slice().sort((a, b) => (b.messages.pending - a.messages.pending) || a.name.localeCompare(b.name)).slice(0, 8);
      $("#top-queues", root).innerHTML = `<table id="overview-queues"><thead><tr><th>queue</th><th class="num">depth</th><th class="num">in flight</th><th class="num">total</th></tr></thead><tbody>${
        qs.map((x) => `<tr><td><a href="/console/queues/${q(x.name)}" data-nav>${esc(x.name)}</a></td><td class="num">${num(x.messages.pending)}</td><td class="num">${
          num(x.messages.processing)}</td><td class="num">${num(x.messages.total)}</td></tr>`).join("") || '<tr><td colspan="4" class="muted">no queues yet</td></tr>'}</tbody></table>`;
      const gs = (groups || []).slice().sort((a, b) => (b.maxTimeLag || 0) - (a.maxTimeLag || 0)).slice(0, 8);
      $("#laggiest", root).innerHTML = `<table><thead><tr><th>group</th><th>queue</th><th class="num">lag (messages)</th><th class="num">oldest</th></tr></thead><tbody>${
        gs.map((g) => `<tr><td><a href="/console/groups?group=${q(g.name)}" data-nav>${esc(g.name)}</a></td><td>${esc(g.queueName)}</td><td class="num">${
          num(g.totalLag)}</td><td class="num">${secs(g.maxTimeLag)}</td></tr>`).join("") || '<tr><td colspan="4" class="muted">no consumer groups yet</td></tr>'}</tbody></table>`;
    },
  };

  // ---- queues -----------------------------------------------------------------------
  C.views.queues = {
    render(root, r, st) {
      if (r.args[0]) return C.views.queue.render(root, r, st);
      root.innerHTML = `<h1>Queues</h1>
        <div class="toolbar"><input id="queue-filter" placeholder="filter by name" value="${esc(r.params.get("search") || "")}">
        <span class="muted">click a column to sort</span></div>
        <div class="card" id="queue-table"></div>`;
      $("#queue-filter", root).addEventListener("input", () => C.refresh());
    },
    async refresh(root, r, st) {
      if (r.args[0]) return C.views.queue.refresh(root, r, st);
      const [list, gauges] = await Promise.all([C.get("/api/v1/resources/queues?limit=10000"), C.queueGauges()]);
      const filter = ($("#queue-filter", root).value || "").toLowerCase();
      const rows = (list.queues || []).filter((x) => x.name.toLowerCase().includes(filter)).map((x) => {
        const g = gauges[x.name] || {};
        return { name: x.name, namespace: x.namespace || "", partitions: x.partitions, depth: g.depth ?? x.messages.pending,
                 processing: x.messages.processing, lag: g.lag ?? 0, throughput: g.throughput ?? 0, total: x.messages.total };
      });
      st.sort = C.sortable($("#queue-table", root), [
        { key: "name", label: "queue", render: (x) => `<a href="/console/queues/${q(x.name)}" data-nav>${esc(x.name)}</a>` },
        { key: "namespace", label: "namespace" },
        { key: "partitions", label: "partitions", num: true, render: (x) => num(x.partitions) },
        { key: "depth", label: "depth", num: true, render: (x) => num(x.depth) },
        { key: "processing", label: "in flight", num: true, render: (x) => num(x.processing) },
        { key: "lag", label: "lag", num: true, render: (x) => secs(x.lag) },
        { key: "throughput", label: "pushed / min", num: true, render: (x) => num(x.throughput) },
        { key: "total", label: "total", num: true, render: (x) => num(x.total) },
      ], rows, st.sort);
    },
  };

  // ---- one queue --------------------------------------------------------------------
  // Options a person edits most; anything else goes through the JSON box.
  const OPTIONS = [["leaseTime", "lease (s)"], ["retryLimit", "retry limit"], ["priority", "priority"],
    ["delayedProcessing", "delay (s)"], ["ttl", "ttl (s)"], ["maxSize", "max size"]];
  const SNAKE = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  C.views.queue = {
    render(root, r) {
      const name = r.args[0];
      root.innerHTML = `<h1>Queue <span class="mono">${esc(name)}</span></h1>
        <div class="grid" id="queue-stats"></div>
        <div class="cols">
          <div class="card"><h2>Partitions</h2><div id="partitions"></div></div>
          <div class="card"><h2>Consumer groups</h2><div id="queue-groups"></div></div>
        </div>
        <div class="card"><h2>Options</h2>
          <form id="options-form"><div class="grid">${OPTIONS.map(([k, l]) =>
            `<label>${l}<br><input name="${k}" id="opt-${k}" inputmode="numeric"></label>`).join("")}</div>
            <p class="muted">Other options as JSON (merged over the fields):</p>
            <textarea id="opt-extra" placeholder='{"retentionEnabled": true}'></textarea>
            <div class="toolbar"><button type="submit" id="configure">Save options</button>
            <button type="button" class="ghost danger" id="delete-queue">Delete queue…</button></div>
            <div id="configure-result" hidden></div></form>
          <details><summary>stored configuration</summary><pre id="queue-config"></pre></details></div>`;
      $("#options-form", root).addEventListener("submit", (e) => {
        e.preventDefault();
        const options = {};
        for (const [k] of OPTIONS) {
          const v = $(`#opt-${k}`, root).value.trim();
          if (v !== "") options[k] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
        }
        C.act($("#configure-result", root), async () => {
          const extra = $("#opt-extra", root).value.trim();
          if (extra) Object.assign(options, JSON.parse(extra));
          await C.api("POST", "/api/v1/configure", { queue: name, options });
        }, "Options saved.");
      });
      $("#delete-queue", root).addEventListener("click", async () => {
        if (!(await C.confirm(`Delete queue ${name} with every message, cursor and dead letter?`))) return;
        C.act($("#configure-result", root), async () => {
          await C.api("DELETE", `/api/v1/resources/queues/${q(name)}`);
          C.go("/console/queues");
        }, "Deleted.");
      });
    },
    async refresh(root, r, st) {
      const name = r.args[0];
      const [queue, groups, gauges] = await Promise.all([
        C.get(`/api/v1/resources/queues/${q(name)}`), C.get("/api/v1/consumer-groups"), C.queueGauges()]);
      const t = queue.totals || {}, g = gauges[name] || {};
      const stat = (label, value) => `<div class="card stat"><div class="label">${label}</div><div class="value">${value}</div></div>`;
      $("#queue-stats", root).innerHTML = [stat("depth", num(g.depth ?? t.pending)), stat("in flight", num(t.processing)),
        stat("lag", secs(g.lag ?? 0)), stat("pushed / min", num(g.throughput ?? 0)), stat("dead letters", num(t.deadLetter)),
        stat("total", num(t.total))].join("");
      C.sortable($("#partitions", root), [
        { key: "name", label: "partition", render: (p) => `<a href="/console/messages?queue=${q(name)}&partition=${q(p.name)}" data-nav>${esc(p.name)}</a>` },
        { key: "pending", label: "depth", num: true, render: (p) => num(p.pending) },
        { key: "processing", label: "in flight", num: true, render: (p) => num(p.processing) },
        { key: "total", label: "total", num: true, render: (p) => num(p.total) },
        { key: "newest", label: "last push", render: (p) => C.when(p.newest) },
      ], (queue.partitions || []).map((p) => ({ name: p.name, ...p.stats, newest: p.newestMessage })), st.psort);
      C.sortable($("#queue-groups", root), [
        { key: "name", label: "group", render: (x) => `<a href="/console/groups?group=${q(x.name)}" data-nav>${esc(x.name)}</a>` },
        { key: "totalLag", label: "lag (messages)", num: true, render: (x) => num(x.totalLag) },
        { key: "maxTimeLag", label: "oldest", num: true, render: (x) => secs(x.maxTimeLag) },
        { key: "members", label: "members", num: true },
      ], (groups || []).filter((x) => x.queueName === name), st.gsort);
      $("#queue-config", root).textContent = JSON.stringify(queue.config, null, 2);
      if (!st.filled) { // fill the form once, so a refresh never overwrites what is typed
        st.filled = true;
        for (const [k] of OPTIONS) {
          const v = queue.config && queue.config[SNAKE(k)];
          if (v !== undefined && v !== null) $(`#opt-${k}`, root).value = v;
        }
      }
    },
  };
})();
