// pitwatch console: the standing banner and alarm on every page, the live feed
// (server-sent events) with its grouping, pinned CRITICALs, selection and triage dialog.
// Plain browser JavaScript, no build step.
"use strict";

(function () {
  const meta = (n) => (document.querySelector(`meta[name="pitwatch-${n}"]`) || {}).content || "";
  const USER = meta("user");
  const CSRF = meta("csrf");
  const TZ = meta("tz") || "UTC";
  const MAY = new Set(meta("may").split(" ").filter(Boolean));
  const status = document.getElementById("status");
  const banner = document.getElementById("banner");
  const announce = document.getElementById("announce");
  const alarm = document.getElementById("alarm");
  const muteBtn = document.getElementById("mute");
  if (!USER) return; // the login page

  // --- helpers -----------------------------------------------------------------------
  const pad = (n, w) => String(n).padStart(w || 2, "0");
  const fmt = new Intl.DateTimeFormat("en-US", {
    timeZone: TZ, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
    minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short",
  });
  function clock(ms) {
    const d = new Date(ms);
    const p = Object.fromEntries(fmt.formatToParts(d).map((x) => [x.type, x.value]));
    const utc = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
    const local = `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}.` +
      pad(d.getUTCMilliseconds(), 3);
    return TZ === "UTC" ? `${local} UTC` : `${local} ${p.timeZoneName} (${utc} UTC)`;
  }
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else n.setAttribute(k, v);
    }
    for (const k of kids) n.append(k);
    return n;
  }
  const seg = (id) => encodeURIComponent(id);
  function age(ms) {
    const s = Math.floor(ms / 1000);
    return s < 120 ? `${s} s` : s < 7200 ? `${Math.floor(s / 60)} min` : `${Math.floor(s / 3600)} h`;
  }
  function say(text) { announce.textContent = ""; setTimeout(() => { announce.textContent = text; }, 50); }

  // --- the alarm: sound (mutable per user, on this browser) and a notification ----------
  const muteKey = `pitwatch-mute:${USER}`;
  function muted() { return localStorage.getItem(muteKey) === "1"; }
  function showMute() {
    if (!muteBtn) return;
    muteBtn.textContent = muted() ? "alarm sound: off" : "alarm sound: on";
    muteBtn.setAttribute("aria-pressed", muted() ? "true" : "false");
  }
  if (muteBtn) {
    muteBtn.addEventListener("click", () => {
      localStorage.setItem(muteKey, muted() ? "0" : "1");
      showMute();
      if ("Notification" in window && Notification.permission === "default") {
        Notification.requestPermission();
      }
    });
    showMute();
  }
  function raise(title, text) {
    say(`${title}: ${text}`);
    if (!muted()) {
      alarm.currentTime = 0;
      const p = alarm.play();
      if (p) {
        p.then(() => { alarm.dataset.rang = String(Number(alarm.dataset.rang || 0) + 1); })
          .catch(() => { alarm.dataset.blocked = "1"; });
      }
    }
    if ("Notification" in window && Notification.permission === "granted") {
      try { new Notification(`pitwatch: ${title}`, { body: text, tag: title }); } catch (e) { /* none */ }
    }
  }

  // --- the standing banner: store, broker, silent tables, unhandled CRITICALs -----------
  let knownCritical = null; // ids of unhandled CRITICALs already alarmed for
  let wasDead = false;
  let failures = 0;
  function setStatus(text, cls) {
    status.textContent = text;
    status.className = "status " + cls;
  }
  function showBanner(items) {
    banner.replaceChildren();
    banner.hidden = !items.length;
    for (const it of items) banner.append(el("p", { class: `b-${it.kind}` }, ...it.parts));
  }
  function onStatus(st) {
    const items = [];
    if (st.store === "down") {
      items.push({ kind: "down", parts: [el("b", {}, "STORE DOWN"),
        ` The store does not answer (${st.store_error}); pages show the last data held ` +
        "and actions are refused until it answers."] });
    }
    if (st.kafka !== "off" && st.kafka !== "live") {
      items.push({ kind: "down", parts: [el("b", {}, "ALERTS TOPIC DOWN"),
        ` Kafka: ${st.kafka}. New findings may not reach this page.`] });
    }
    if (st.silent && st.silent.length) {
      const p = [el("b", {}, "DEAD FEED"), ` ${st.silent.length} table(s) sent nothing for too long: `];
      st.silent.forEach((t, i) => { if (i) p.push(", "); p.push(el("a", { href: "/floor" }, t)); });
      items.push({ kind: "dead", parts: p });
    }
    const pin = st.pinned;
    if (pin && pin.total) {
      const first = pin.alerts[0];
      items.push({ kind: "critical", parts: [el("b", {}, `${pin.total} UNHANDLED CRITICAL`), " newest: ",
        el("a", { href: `/violations/${seg(first.violation_id)}` }, `${first.code} at ${first.table_id}`)] });
      const ids = new Set(pin.alerts.map((a) => a.violation_id));
      const fresh = knownCritical === null ? [...ids] : [...ids].filter((i) => !knownCritical.has(i));
      if (fresh.length) raise("CRITICAL", `${first.code} at table ${first.table_id}: ${first.message}`);
      knownCritical = new Set([...(knownCritical || []), ...ids]);
    }
    const dead = Boolean(st.silent && st.silent.length) || st.store === "down" ||
      (st.kafka !== "off" && st.kafka !== "live");
    if (dead && !wasDead) raise("feed down", items.filter((i) => i.kind !== "critical")
      .map((i) => i.parts.map((x) => (typeof x === "string" ? x : x.textContent)).join("")).join(" "));
    wasDead = dead;
    showBanner(items);
    const lag = st.kafka_lag == null ? "" : `, worker lag ${st.kafka_lag}`;
    const k = st.kafka === "off" ? "no alerts topic" : `alerts topic ${st.kafka.split(":")[0]}${lag}`;
    setStatus(`store ${st.store} · ${k}`, dead ? "warn" : "ok");
    document.body.dataset.store = st.store;
    document.body.dataset.kafka = st.kafka.split(":")[0];
  }
  async function pollStatus() {
    try {
      const r = await fetch("/api/status", { cache: "no-store" });
      if (r.status === 401) { location.href = "/login?next=" + seg(location.pathname + location.search); return; }
      onStatus(await r.json());
      failures = 0;
    } catch (e) {
      failures += 1;
      if (failures >= 2) {
        showBanner([{ kind: "down", parts: [el("b", {}, "CONSOLE UNREACHABLE"),
          " This page cannot reach the console: what it shows may be old."] }]);
        setStatus("console unreachable", "warn");
        if (!wasDead) raise("console unreachable", "this page cannot reach the console");
        wasDead = true;
      }
    }
  }
  pollStatus();
  setInterval(pollStatus, 2000);

  // --- the live feed -----------------------------------------------------------------------
  const feed = document.getElementById("feed");
  if (!feed) return;
  const body = feed.querySelector("tbody");
  const form = document.getElementById("filters");
  const note = document.getElementById("feed-note");
  const bad = document.getElementById("feed-bad");
  const pinned = document.getElementById("pinned");
  const pinnedList = document.getElementById("pinned-list");
  const pinnedCount = document.getElementById("pinned-count");
  const dialog = document.getElementById("triage-dialog");
  const bulk = document.getElementById("bulk");
  const WINDOW = Number(feed.dataset.window || 600000);
  const states = new Map(); // violation_id -> triage state
  const alerts = new Map(); // violation_id -> alert
  const groups = new Map(); // code|table -> {tr, ids, newest}
  const pins = new Map(); // violation_id -> alert (unhandled CRITICAL)
  const selected = new Set(); // group keys
  let source = null;
  let dialogIds = [];

  function params() {
    const p = new URLSearchParams();
    for (const s of form.querySelectorAll("select")) if (s.value) p.set(s.name, s.value);
    const u = document.getElementById("f-unhandled");
    if (u && u.checked) p.set("unhandled", "1");
    return p;
  }
  function stateText(st) {
    if (!st || st.status === "new") return "new";
    let t = st.status;
    if (st.status === "closed" && st.disposition) t += ` (${st.disposition.replace("_", " ")})`;
    if (st.assignee) t += ` · ${st.assignee}`;
    return `${t} by ${st.who}`;
  }
  function triageCell(ids) {
    const head = ids[0];
    const st = states.get(head);
    const td = el("td", { class: "triage" });
    td.append(el("span", { class: `st st-${st ? st.status : "new"}` }, stateText(st)));
    if (MAY.size) {
      const b = el("button", { class: "act", type: "button" },
        ids.length > 1 ? `act on ${ids.length}…` : (st && st.status !== "new" ? "update…" : "acknowledge…"));
      b.addEventListener("click", () => openDialog(ids));
      td.append(" ", b);
    }
    return td;
  }
  function renderGroup(key) {
    const g = groups.get(key);
    const a = alerts.get(g.ids[0]);
    const seat = a.seat == null ? "" : (a.hand ? `${a.seat} / hand ${a.hand}` : String(a.seat));
    const box = el("input", { type: "checkbox", class: "pick", "aria-label": `select ${a.code} at ${a.table_id}` });
    box.checked = selected.has(key);
    box.addEventListener("change", () => { if (box.checked) selected.add(key); else selected.delete(key); showBulk(); });
    const count = g.ids.length > 1 ? el("span", { class: "repeat", title: "repeats within the window" }, ` ×${g.ids.length}`) : "";
    const search = g.ids.length > 1 ? el("a", { class: "sub", href: `/search?${new URLSearchParams({ table: a.table_id, code: a.code })}` }, " all of them") : "";
    const tr = el("tr", {
      "data-id": a.violation_id, "data-severity": a.severity, "data-code": a.code,
      "data-table": a.table_id, "data-jurisdiction": a.jurisdiction, "data-count": String(g.ids.length),
      class: `sev-row-${a.severity}`,
    },
      el("td", {}, box),
      el("td", { class: "t" }, clock(a.detected_at)),
      el("td", {}, el("span", { class: `sev sev-${a.severity}` }, a.severity)),
      el("td", { class: "id" }, el("a", { href: `/tables/${seg(a.table_id)}` }, a.table_id),
        el("div", { class: "sub" }, a.jurisdiction)),
      el("td", { class: "n" }, seat),
      el("td", {}, el("a", { class: "code", href: `/violations/${seg(a.violation_id)}` }, a.code), count, search,
        el("div", { class: "msg" }, a.message)),
      el("td", { class: "citation" }, a.citation),
      triageCell(g.ids));
    if (g.tr) g.tr.replaceWith(tr);
    g.tr = tr;
    return tr;
  }
  function addAlert(a, fresh) {
    if (alerts.has(a.violation_id)) return;
    alerts.set(a.violation_id, a);
    const key = `${a.code}|${a.table_id}`;
    const g = groups.get(key);
    if (g && Math.abs(a.detected_at - g.newest) <= WINDOW) {
      if (a.detected_at >= g.newest) { g.ids.unshift(a.violation_id); g.newest = a.detected_at; } else g.ids.push(a.violation_id);
      renderGroup(key);
      if (fresh) body.prepend(g.tr);
    } else {
      if (g) groups.delete(key); // an old group stays as its row; a new one starts
      groups.set(key, { tr: null, ids: [a.violation_id], newest: a.detected_at });
      const tr = renderGroup(key);
      if (fresh) { tr.classList.add("fresh"); body.prepend(tr); } else body.append(tr);
    }
    if (a.severity === "CRITICAL" && !states.get(a.violation_id)) pinAlert(a);
  }
  function pinAlert(a) {
    pins.set(a.violation_id, a);
    showPins();
  }
  let pinnedTotal = 0;
  function showPins() {
    const list = [...pins.values()].sort((x, y) => y.detected_at - x.detected_at);
    pinned.hidden = !list.length;
    pinnedCount.textContent = String(Math.max(list.length, pinnedTotal));
    pinnedList.replaceChildren(...list.slice(0, 20).map((a) => {
      const li = el("li", { "data-id": a.violation_id },
        el("span", { class: "sev sev-CRITICAL" }, "CRITICAL"), " ",
        el("span", { class: "t" }, clock(a.detected_at)), " ",
        el("a", { href: `/tables/${seg(a.table_id)}`, class: "id" }, a.table_id), " ",
        el("a", { href: `/violations/${seg(a.violation_id)}`, class: "code" }, a.code), " ",
        el("span", { class: "msg" }, a.message), " ");
      if (MAY.has("acknowledge")) {
        const b = el("button", { type: "button", class: "act primary" }, "handle…");
        b.addEventListener("click", () => openDialog([a.violation_id]));
        li.append(b);
      }
      return li;
    }));
  }
  function applyState(t) {
    states.set(t.violation_id, { status: t.status, assignee: t.assignee, disposition: t.disposition,
      amount: t.amount, who: t.who, at: t.at, note: t.note });
    if (t.status !== "new" && pins.delete(t.violation_id)) { pinnedTotal = Math.max(0, pinnedTotal - 1); showPins(); }
    for (const [key, g] of groups) if (g.ids.includes(t.violation_id)) renderGroup(key);
  }
  function showBulk() {
    const ids = [...selected].flatMap((k) => (groups.get(k) ? groups.get(k).ids : []));
    bulk.hidden = !ids.length || !MAY.size;
    document.getElementById("bulk-n").textContent = `${ids.length} finding(s) selected`;
    return ids;
  }
  document.getElementById("bulk-act").addEventListener("click", () => openDialog(showBulk()));
  document.getElementById("bulk-clear").addEventListener("click", () => {
    selected.clear();
    for (const b of body.querySelectorAll("input.pick")) b.checked = false;
    showBulk();
  });

  function connect() {
    if (source) source.close();
    const p = params();
    history.replaceState(null, "", p.toString() ? `/?${p}` : "/");
    source = new EventSource(`/api/feed?${p}`);
    source.addEventListener("snapshot", (ev) => {
      const d = JSON.parse(ev.data);
      states.clear(); alerts.clear(); groups.clear(); pins.clear(); selected.clear();
      for (const [id, st] of Object.entries(d.states)) states.set(id, st);
      body.replaceChildren();
      for (const a of d.alerts.slice().reverse()) addAlert(a, true);
      pinnedTotal = d.pinned.total || 0;
      for (const a of d.pinned.alerts) if (!states.get(a.violation_id)) pins.set(a.violation_id, a);
      showPins();
      showBulk();
      note.textContent = d.alerts.length ? "" :
        (d.status.store === "down" ? "The store does not answer: no findings to show yet." : "No violation yet for these filters.");
      feed.dataset.ready = "1";
    });
    source.addEventListener("alert", (ev) => {
      const a = JSON.parse(ev.data).alert;
      addAlert(a, true);
      note.textContent = "";
      if (a.severity === "CRITICAL") {
        if (!knownCritical || !knownCritical.has(a.violation_id)) {
          knownCritical = new Set([...(knownCritical || []), a.violation_id]);
          raise("CRITICAL", `${a.code} at table ${a.table_id}: ${a.message}`);
          pollStatus(); // the banner now, not at the next tick
        }
      } else if (a.severity === "HIGH") say(`HIGH ${a.code} at table ${a.table_id}`);
    });
    source.addEventListener("triage", (ev) => applyState(JSON.parse(ev.data).triage));
    source.addEventListener("bad", (ev) => {
      const d = JSON.parse(ev.data);
      bad.textContent = `${d.count} undecodable message(s) on the alerts topic skipped; ` +
        `last at ${d.where}: ${d.reason}`;
    });
    source.onerror = () => setStatus("feed reconnecting…", "warn");
  }

  // --- the triage dialog -------------------------------------------------------------------
  const action = document.getElementById("td-action");
  const closeBox = document.getElementById("td-close");
  const assigneeL = document.getElementById("td-assignee-l");
  const amountL = document.getElementById("td-amount-l");
  const disposition = document.getElementById("td-disposition");
  const err = document.getElementById("td-error");
  for (const o of [...action.options]) if (!MAY.has(o.value)) o.remove();
  function shape() {
    closeBox.hidden = action.value !== "close";
    amountL.hidden = disposition.value !== "confirmed";
    assigneeL.hidden = action.value !== "assign";
  }
  action.addEventListener("change", shape);
  disposition.addEventListener("change", shape);
  function openDialog(ids) {
    if (!ids.length) return;
    dialogIds = ids;
    const a = alerts.get(ids[0]) || pins.get(ids[0]);
    document.getElementById("td-what").textContent = ids.length > 1 ?
      `${ids.length} findings` : `${a.severity} ${a.code} at ${a.table_id}`;
    document.getElementById("td-msg").textContent = ids.length > 1 ? "" : a.message;
    const st = states.get(ids[0]);
    action.value = st && st.status !== "new" ? (MAY.has("investigate") ? "investigate" : "note") : "acknowledge";
    if (!action.value && action.options.length) action.value = action.options[0].value;
    err.textContent = "";
    shape();
    dialog.showModal();
    document.getElementById("td-note").focus();
  }
  document.getElementById("td-cancel").addEventListener("click", () => dialog.close("cancel"));
  document.getElementById("triage-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body_ = { violation_ids: dialogIds, action: action.value,
      note: document.getElementById("td-note").value.trim() };
    if (action.value === "close") {
      body_.disposition = disposition.value;
      if (disposition.value === "confirmed") {
        const v = document.getElementById("td-amount").value.trim();
        if (!/^[0-9]+([.][0-9]{1,2})?$/.test(v)) { err.textContent = "money involved: dollars, e.g. 12.50"; return; }
        const [d, c] = v.split(".");
        body_.amount = Number(d) * 100 + Number((c || "0").padEnd(2, "0"));
      }
    }
    if (action.value === "assign") body_.assignee = document.getElementById("td-assignee").value.trim();
    err.textContent = "recording…";
    let r, d;
    try {
      r = await fetch("/api/triage", { method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
        body: JSON.stringify(body_) });
      d = await r.json();
    } catch (e) {
      err.textContent = "NOT recorded: the console does not answer. Your note is kept here; try again.";
      return;
    }
    if (!r.ok && !(d.done && d.done.length)) { err.textContent = `NOT recorded: ${d.error}`; return; }
    for (const t of d.done || []) applyState(t);
    if (d.refused && d.refused.length) {
      err.textContent = `${(d.done || []).length} recorded; ${d.refused.length} refused: ` +
        d.refused.slice(0, 3).map((x) => x.error).join("; ");
      return;
    }
    document.getElementById("td-note").value = "";
    dialog.close("ok");
    note.textContent = `${(d.done || []).length} finding(s): ${body_.action} recorded.`;
  });
  form.addEventListener("change", () => { feed.dataset.ready = ""; connect(); });
  connect();
})();
