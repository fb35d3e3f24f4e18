// Queen console, the ephemeral view: the ephemeral queues (their declarations, and the
// depth figures of the queues this node holds) from GET /api/v1/ephemeral/queues, and one
// queue's depth (rings, groups, losses) from GET /api/v1/ephemeral/queues/{queue}/depth,
// which the owner node answers wherever the page is served. Both routes are read-only,
// which a viewer may. Contents live in memory only: the figures are the owner's now.
"use strict";
(() => {
  const C = Console;
  const { esc, num, q, $ } = C;

  const policy = (o) => (o && o.policy) || "";
  const bound = (o) => (o ? `${num(o.maxLength)} msgs / ${num(o.maxBytes)} B` : "");

  C.views.ephemeral = {
    render(root, r) {
      const queue = r.args[0];
      if (!queue) {
        root.innerHTML = `<h1>Ephemeral queues</h1>
          <p class="muted">Contents live in the owning node's memory only; declarations are durable.</p>
          <div class="card" id="ephemeral-queues"></div>`;
        return;
      }
      root.innerHTML = `<h1>Ephemeral queue <span class="mono">${esc(queue)}</span></h1>
        <div class="toolbar"><a href="/console/ephemeral" data-nav>all ephemeral queues</a></div>
        <div class="card" id="ephemeral-depth"></div>
        <div class="card" id="ephemeral-partitions"></div>
        <div class="card" id="ephemeral-groups"></div>`;
    },
    async refresh(root, r, st) {
      const queue = r.args[0];
      if (!queue) {
        const list = await C.get("/api/v1/ephemeral/queues");
        st.sort = C.sortable($("#ephemeral-queues", root), [
          { key: "queue", label: "queue", render: (x) => `<a href="/console/ephemeral/${q(x.queue)}" data-nav>${esc(x.queue)}</a>` },
          { key: "declared", label: "declared", render: (x) => (x.declared ? "yes" : "no (defaults)") },
          { key: "depth", label: "messages here", num: true, render: (x) => num(x.depth) },
          { key: "bytes", label: "bytes here", num: true, render: (x) => num(x.bytes) },
          { key: "partitions", label: "partitions", num: true, render: (x) => num(x.partitions) },
          { key: "groups", label: "groups", num: true, render: (x) => num(x.groups) },
          { key: "drops", label: "lost", num: true, render: (x) => num(x.drops) },
          { key: "policy", label: "policy", render: (x) => esc(policy(x.options)) },
          { key: "bound", label: "bounds per ring", render: (x) => esc(bound(x.options)) },
        ], (list.queues || []).map((x) => ({ ...x, policy: policy(x.options), bound: bound(x.options) })), st.sort);
        return;
      }
      const d = await C.get(`/api/v1/ephemeral/queues/${q(queue)}/depth`);
      const o = d.options || {};
      $("#ephemeral-depth", root).innerHTML = `<table id="ephemeral-figures"><tbody>${[
        ["pending", num(d.pending)], ["bytes", num(d.bytes)], ["partitions pending", num(d.partitionsPending)],
        ["pushed", num(d.pushed)], ["dropped", num(d.dropped)], ["expired", num(d.expired)],
        ["retries exhausted", num(d.retriesExhausted)], ["pushes refused", num(d.refused)],
        ["declared", d.declared ? "yes" : "no (defaults)"], ["policy", esc(o.policy || "")],
        ["bounds per ring", esc(bound(o))], ["lease", `${num(o.leaseSeconds)} s`],
        ["retry limit", num(o.retryLimit)], ["TTL", o.ttlSeconds ? `${num(o.ttlSeconds)} s` : "none"],
      ].map(([k, v]) => `<tr><th>${k}</th><td class="num">${v}</td></tr>`).join("")}</tbody></table>`;
      $("#ephemeral-partitions", root).innerHTML = `<table id="ephemeral-partition-table"><thead><tr><th>partition</th><th class="num">pending</th><th class="num">bytes</th></tr></thead><tbody>${
        (d.partitions || []).map((p) => `<tr><td class="mono">${esc(p.partition)}</td><td class="num">${num(p.pending)}</td><td class="num">${num(p.bytes)}</td></tr>`).join("") ||
        '<tr><td colspan="3" class="muted">no partition held</td></tr>'}</tbody></table>`;
      $("#ephemeral-groups", root).innerHTML = `<table id="ephemeral-group-table"><thead><tr><th>group</th><th class="num">not yet delivered</th><th class="num">leased</th></tr></thead><tbody>${
        (d.groups || []).map((g) => `<tr><td class="mono">${esc(g.group)}</td><td class="num">${num(g.pending)}</td><td class="num">${num(g.leased)}</td></tr>`).join("") ||
        '<tr><td colspan="3" class="muted">no group has popped</td></tr>'}</tbody></table>`;
    },
  };
})();
