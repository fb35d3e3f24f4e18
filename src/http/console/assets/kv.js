// Queen console, the state views: key/value namespaces (their keys, paged) and the locks
// held (each permit is a KV row of the namespace `queen-locks`, key `<name>#<slot>`).
// Read-only: both pages read GET /api/v1/resources/kv[/{namespace}], which a viewer may.
"use strict";
(() => {
  const C = Console;
  const { esc, num, when, q, $ } = C;
  const LOCKS = "queen-locks";
  const PAGE = 100;

  // One page of a namespace's keys (`after`: the nextAfter of the page before).
  const page = (ns, prefix, after) =>
    C.get(`/api/v1/resources/kv/${q(ns)}?limit=${PAGE}&prefix=${q(prefix || "")}&after=${q(after || "")}`);

  const preview = (v) => {
    const text = JSON.stringify(v);
    return text.length > 120 ? `${text.slice(0, 120)}…` : text;
  };

  // ---- key/value ------------------------------------------------------------------------
  C.views.kv = {
    render(root, r, st) {
      const ns = r.args[0];
      if (!ns) {
        root.innerHTML = `<h1>Key/value</h1><div class="card" id="kv-namespaces"></div>`;
        return;
      }
      root.innerHTML = `<h1>Namespace <span class="mono">${esc(ns)}</span></h1>
        <div class="toolbar"><a href="/console/kv" data-nav>all namespaces</a>
        <input id="kv-prefix" placeholder="key prefix" value="${esc(r.params.get("prefix") || "")}"></div>
        <div class="card" id="kv-keys"></div>
        <div class="toolbar"><button class="ghost" id="kv-more" hidden>next ${PAGE} keys</button></div>`;
      $("#kv-prefix", root).addEventListener("input", () => C.refresh());
      $("#kv-more", root).addEventListener("click", () => {
        st.after = st.next;
        C.refresh();
      });
    },
    async refresh(root, r, st) {
      const ns = r.args[0];
      if (!ns) {
        const list = await C.get("/api/v1/resources/kv");
        st.sort = C.sortable($("#kv-namespaces", root), [
          { key: "namespace", label: "namespace", render: (x) => `<a href="/console/kv/${q(x.namespace)}" data-nav>${esc(x.namespace)}</a>` },
          { key: "keys", label: "keys", num: true, render: (x) => num(x.keys) },
          { key: "expiring", label: "with a TTL", num: true, render: (x) => num(x.expiring) },
          { key: "bytes", label: "value bytes", num: true, render: (x) => num(x.bytes) },
          { key: "updatedAt", label: "last write", render: (x) => when(x.updatedAt) },
        ], list.namespaces || [], st.sort);
        return;
      }
      // The refresh loop keeps the page the person is on; "next" moves it on, a new
      // prefix starts over.
      const prefix = $("#kv-prefix", root).value;
      if (st.prefix !== prefix) Object.assign(st, { prefix, after: "", next: "" });
      const got = await page(ns, prefix, st.after);
      st.next = got.nextAfter || "";
      const more = $("#kv-more", root);
      more.hidden = !got.truncated;
      $("#kv-keys", root).innerHTML = `<table id="kv-key-table"><thead><tr><th>key</th><th>value</th><th class="num">version</th><th>expires</th><th>updated</th></tr></thead><tbody>${
        got.rows.map((k) => `<tr><td class="mono">${esc(k.key)}</td><td class="mono">${esc(preview(k.value))}</td><td class="num">${
          num(k.version)}</td><td>${k.expiresAt ? when(k.expiresAt) : "never"}</td><td>${when(k.updatedAt)}</td></tr>`).join("") ||
        '<tr><td colspan="5" class="muted">no live keys</td></tr>'}</tbody></table>`;
    },
  };

  // ---- locks ------------------------------------------------------------------------------
  C.views.locks = {
    render(root) {
      root.innerHTML = `<h1>Locks</h1>
        <p class="muted">Every live permit: a lock is a semaphore of one slot. The token is what a
        holder's guard checks; it changes at every renew.</p>
        <div class="card" id="lock-table"></div>`;
    },
    async refresh(root, _r, st) {
      const rows = [];
      let after = "";
      // Permits are few; read them all, a page at a time.
      for (;;) {
        const got = await page(LOCKS, "", after);
        for (const k of got.rows) {
          const cut = k.key.lastIndexOf("#");
          const value = k.value || {};
          rows.push({ name: k.key.slice(0, cut), slot: Number(k.key.slice(cut + 1)), owner: value.owner ?? "",
                      token: k.version, since: value.since || k.updatedAt, renewedAt: k.updatedAt, expiresAt: k.expiresAt });
        }
        if (!got.truncated) break;
        after = got.nextAfter;
      }
      st.sort = C.sortable($("#lock-table", root), [
        { key: "name", label: "lock", render: (x) => `<span class="mono">${esc(x.name)}</span>` },
        { key: "slot", label: "slot", num: true },
        { key: "owner", label: "holder", render: (x) => `<span class="mono">${esc(x.owner || "—")}</span>` },
        { key: "token", label: "token", num: true, render: (x) => num(x.token) },
        { key: "since", label: "held since", render: (x) => when(x.since) },
        { key: "renewedAt", label: "last renewed", render: (x) => when(x.renewedAt) },
        { key: "expiresAt", label: "expires", render: (x) => when(x.expiresAt) },
      ], rows, st.sort);
    },
  };
})();
