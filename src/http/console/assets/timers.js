// Queen console, the timers view: a queue's pending timers, a page at a time in key order,
// from GET /api/v1/timers/{queue} (read-only, which a viewer may). Timers are listed per
// queue only, as the route is: the page asks for the queue's name.
"use strict";
(() => {
  const C = Console;
  const { esc, num, when, q, $ } = C;
  const PAGE = 100;

  C.views.timers = {
    render(root, r, st) {
      const queue = r.args[0];
      root.innerHTML = `<h1>Pending timers${queue ? ` of <span class="mono">${esc(queue)}</span>` : ""}</h1>
        <div class="toolbar"><input id="timers-queue" placeholder="queue" value="${esc(queue || "")}">
        <button class="ghost" id="timers-open">show</button></div>
        <div class="card" id="timers-list"></div>
        <div class="toolbar"><button class="ghost" id="timers-more" hidden>next ${PAGE} timers</button></div>`;
      $("#timers-open", root).addEventListener("click", () => {
        const name = $("#timers-queue", root).value.trim();
        if (name) C.go(`/console/timers/${q(name)}`);
      });
      $("#timers-more", root).addEventListener("click", () => {
        st.after = st.next;
        C.refresh();
      });
    },
    async refresh(root, r, st) {
      const queue = r.args[0];
      const list = $("#timers-list", root);
      if (!queue) {
        list.innerHTML = '<p class="muted">Name a queue to see its pending timers.</p>';
        return;
      }
      const got = await C.get(`/api/v1/timers/${q(queue)}?limit=${PAGE}&after=${q(st.after || "")}`);
      st.next = got.nextAfter || "";
      $("#timers-more", root).hidden = !got.truncated;
      list.innerHTML = `<table id="timers-table"><thead><tr><th>timer key</th><th>partition</th><th>due</th><th class="num">failed fires</th><th>txn</th><th>message id</th></tr></thead><tbody>${
        (got.rows || []).map((t) => `<tr><td class="mono">${esc(t.timerKey)}</td><td>${esc(t.partition)}</td><td>${
          when(t.deliverAt)}</td><td class="num">${num(t.attempts)}</td><td class="mono">${esc(t.txn)}</td><td class="mono">${esc(t.messageId)}</td></tr>`).join("") ||
        '<tr><td colspan="6" class="muted">no pending timers</td></tr>'}</tbody></table>`;
    },
  };
})();
