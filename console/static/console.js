// pitwatch console: the live feed (server-sent events), its filters and triage.
// Plain browser JavaScript, no build step. Other pages need none of it.
"use strict";

(function () {
  const feed = document.getElementById("feed");
  if (!feed) return;
  const body = feed.querySelector("tbody");
  const form = document.getElementById("filters");
  const note = document.getElementById("feed-note");
  const bad = document.getElementById("feed-bad");
  const silent = document.getElementById("silent");
  const status = document.getElementById("status");
  const dialog = document.getElementById("ack-dialog");
  const triage = new Map(); // violation_id -> newest triage row
  let source = null;
  let ackFor = null;

  const pad = (n, w) => String(n).padStart(w || 2, "0");
  function clock(ms) {
    const d = new Date(ms);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.` +
      pad(d.getUTCMilliseconds(), 3);
  }
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else n.setAttribute(k, v);
    }
    for (const k of kids) n.append(k);
    return n;
  }
  function params() {
    const p = new URLSearchParams();
    for (const s of form.querySelectorAll("select")) if (s.value) p.set(s.name, s.value);
    return p;
  }
  function triageCell(id) {
    const t = triage.get(id);
    if (t) {
      return el("td", { class: "triage" }, el("span", { class: "acked" },
        `acknowledged by ${t.who} at ${clock(t.at)}` + (t.note ? `: ${t.note}` : "")));
    }
    const b = el("button", { class: "ack", type: "button" }, "acknowledge");
    b.addEventListener("click", () => openAck(id));
    return el("td", { class: "triage" }, b);
  }
  function row(a, fresh) {
    const seat = a.seat == null ? "" : (a.hand ? `${a.seat} / hand ${a.hand}` : String(a.seat));
    const tr = el("tr", {
      "data-id": a.violation_id, "data-severity": a.severity, "data-code": a.code,
      "data-table": a.table_id, "data-jurisdiction": a.jurisdiction,
      class: `sev-row-${a.severity}` + (fresh ? " fresh" : ""),
    },
      el("td", { class: "t" }, clock(a.detected_at)),
      el("td", {}, el("span", { class: `sev sev-${a.severity}` }, a.severity)),
      el("td", {}, el("a", { href: `/tables/${a.table_id}` }, a.table_id),
        el("div", { class: "sub" }, a.jurisdiction)),
      el("td", { class: "n" }, seat),
      el("td", {}, el("a", { class: "code", href: `/violations/${a.violation_id}` }, a.code),
        el("div", { class: "msg" }, a.message)),
      el("td", { class: "citation" }, a.citation),
      triageCell(a.violation_id));
    return tr;
  }
  function age(ms) {
    const s = Math.floor(ms / 1000);
    return s < 120 ? `${s} s` : s < 7200 ? `${Math.floor(s / 60)} min` : `${Math.floor(s / 3600)} h`;
  }
  function showSilent(tables) {
    silent.hidden = !tables.length;
    silent.replaceChildren();
    if (!tables.length) return;
    silent.append(el("span", { class: "sev sev-HIGH" }, "SILENT"), " ",
      `${tables.length} table(s) sent nothing for too long: `);
    tables.forEach((t, i) => {
      if (i) silent.append(", ");
      silent.append(el("a", { href: "/floor", "data-table": t.table_id }, t.table_id),
        ` (${age(t.age_ms)})`);
    });
  }
  function setStatus(text, cls) {
    status.textContent = text;
    status.className = "status " + cls;
  }
  function connect() {
    if (source) source.close();
    const p = params();
    history.replaceState(null, "", p.toString() ? `/?${p}` : "/");
    source = new EventSource(`/api/feed?${p}`);
    source.addEventListener("snapshot", (ev) => {
      const d = JSON.parse(ev.data);
      for (const t of d.triage.slice().reverse()) triage.set(t.violation_id, t);
      body.replaceChildren(...d.alerts.map((a) => row(a, false)));
      showSilent(d.silent);
      const k = d.status.kafka;
      setStatus(k === "off" ? "store only" : `alerts topic: ${k}`, k === "live" || k === "off" ? "ok" : "warn");
      note.textContent = d.alerts.length ? "" : "No violation yet for these filters.";
      feed.dataset.ready = "1";
    });
    source.addEventListener("alert", (ev) => {
      const a = JSON.parse(ev.data).alert;
      if (body.querySelector(`tr[data-id="${a.violation_id}"]`)) return;
      body.prepend(row(a, true));
      note.textContent = "";
    });
    source.addEventListener("triage", (ev) => {
      const t = JSON.parse(ev.data).triage;
      triage.set(t.violation_id, t);
      const tr = body.querySelector(`tr[data-id="${t.violation_id}"]`);
      if (tr) tr.lastChild.replaceWith(triageCell(t.violation_id));
    });
    source.addEventListener("silent", (ev) => showSilent(JSON.parse(ev.data).tables));
    source.addEventListener("bad", (ev) => {
      const d = JSON.parse(ev.data);
      bad.textContent = `${d.count} undecodable message(s) on the alerts topic skipped; ` +
        `last at ${d.where}: ${d.reason}`;
    });
    source.onopen = () => setStatus("live", "ok");
    source.onerror = () => setStatus("reconnecting…", "warn");
  }
  function openAck(id) {
    ackFor = id;
    const tr = body.querySelector(`tr[data-id="${id}"]`);
    document.getElementById("ack-code").textContent = tr.dataset.code;
    document.getElementById("ack-msg").textContent = tr.querySelector(".msg").textContent;
    document.getElementById("ack-who").value = localStorage.getItem("pitwatch-who") || "";
    document.getElementById("ack-note").value = "";
    dialog.showModal();
  }
  dialog.addEventListener("close", async () => {
    if (dialog.returnValue !== "ok" || !ackFor) return;
    const who = document.getElementById("ack-who").value.trim();
    const text = document.getElementById("ack-note").value.trim();
    localStorage.setItem("pitwatch-who", who);
    const r = await fetch("/api/triage", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ violation_id: ackFor, who: who, note: text }),
    });
    const d = await r.json();
    if (!r.ok) { note.textContent = `acknowledge failed: ${d.error}`; return; }
    triage.set(d.violation_id, d);
    const tr = body.querySelector(`tr[data-id="${d.violation_id}"]`);
    if (tr) tr.lastChild.replaceWith(triageCell(d.violation_id));
  });
  form.addEventListener("change", () => { feed.dataset.ready = ""; connect(); });
  connect();
})();
