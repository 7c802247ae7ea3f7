// BashGym dashboard: the pages are rendered by the server; this script keeps them live through
// the same JSON API and WebSocket any client uses. No framework, no network beyond this server.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, text) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; };

async function api(method, url, body) {
  const res = await fetch(url, {
    method, credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!res.ok) throw new Error((data && data.detail) || `${res.status} ${res.statusText}`);
  return data;
}

function fmtCost(v) { return v === null || v === undefined ? "-" : "$" + Number(v).toFixed(4); }
function dash(v) { return v === null || v === undefined ? "-" : String(v); }

// ---- index: the start-a-run form and the orchestration form ---------------------------------
function setupIndex() {
  const form = $("#new-run");
  if (!form) return;
  const select = $("#pipeline");
  const describe = () => {
    const opt = select.selectedOptions[0];
    if (!opt) return;
    $("#pipeline-description").textContent = opt.dataset.description || "";
    try {
      const schema = JSON.parse(opt.dataset.schema || "{}");
      const names = Object.keys(schema.properties || {});
      $("#options-fields").textContent = names.length ? "options: " + names.join(", ") : "no options";
    } catch (e) { $("#options-fields").textContent = ""; }
  };
  select.addEventListener("change", describe);
  describe();
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("#form-error").textContent = "";
    let options;
    try { options = JSON.parse($("#options").value || "{}"); }
    catch (e) { $("#form-error").textContent = "options: not valid JSON: " + e.message; return; }
    const spec = {
      pipeline: Object.assign({ plugin: select.value }, options),
      num_records: Number($("#num_records").value) || undefined,
      sinks: [{ plugin: $("#sink").value }],
    };
    try {
      const job = await api("POST", "/api/jobs", spec);
      window.location.href = "/jobs/" + encodeURIComponent(job.id);
    } catch (e) { $("#form-error").textContent = e.message; }
  });
  const orch = $("#new-orchestration");
  orch.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("#orchestration-error").textContent = "";
    try {
      const job = await api("POST", "/api/orchestrations", { spec: $("#orchestration-spec").value, format: "md" });
      window.location.href = "/jobs/" + encodeURIComponent(job.id);
    } catch (e) { $("#orchestration-error").textContent = e.message; }
  });
  setInterval(refreshJobs, 3000);
}

async function refreshJobs() {
  let jobs;
  try { jobs = await api("GET", "/api/jobs"); } catch (e) { return; }
  const body = $("#jobs tbody");
  body.replaceChildren(...jobs.map((j) => {
    const tr = el("tr"); tr.dataset.id = j.id;
    const a = el("a", j.id); a.href = "/jobs/" + encodeURIComponent(j.id);
    const td = el("td"); td.append(a); tr.append(td, el("td", j.kind));
    const st = el("span", j.status); st.className = "status s-" + j.status;
    const std = el("td"); std.append(st); tr.append(std);
    tr.append(el("td", `${dash(j.kept)} / ${dash(j.requested)}`), el("td", fmtCost(j.cost_usd)), el("td", age(j.age_s)));
    return tr;
  }));
}

function age(s) {
  for (const [u, n] of [["d", 86400], ["h", 3600], ["m", 60]]) if (s >= n) return Math.floor(s / n) + u;
  return Math.floor(s) + "s";
}

// ---- a job's page: events over the WebSocket, counts from the API ---------------------------
function setupJob() {
  const root = $("#job");
  if (!root) return;
  const id = root.dataset.job, kind = root.dataset.kind;
  let offset = 0, count = 0, refreshing = false, again = false, ended = false, socket = null;
  const list = $("#events");

  const refresh = async () => {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try { render(await api("GET", "/api/jobs/" + encodeURIComponent(id)), kind); }
    catch (e) { /* the next event retries */ }
    refreshing = false;
    if (again) { again = false; refresh(); }
  };

  const connect = () => {
    if (socket && socket.readyState <= 1) return;  // one socket at a time
    ended = false;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = socket = new WebSocket(`${proto}//${location.host}/ws/jobs/${encodeURIComponent(id)}?offset=${offset}`);
    $("#ws-state").textContent = "live";
    ws.onmessage = (msg) => {
      const data = JSON.parse(msg.data);
      if (data.end) {
        ended = true;
        $("#ws-state").textContent = "ended: " + data.status;
        refresh();
        if (kind !== "orchestration") loadRows("kept");
        return;
      }
      offset = data.offset;
      for (const ev of data.events) {
        count += 1;
        const li = el("li", describe(ev));
        li.dataset.type = ev.type;
        list.append(li);
      }
      while (list.children.length > 500) list.firstChild.remove();
      list.scrollTop = list.scrollHeight;
      $("#event-count").textContent = count;
      refresh();
    };
    ws.onclose = (ev) => {
      if (ended) return;
      if (ev.code === 4404 || ev.code === 4422) {  // refused (no such job, a bad offset): say why
        ended = true;
        $("#ws-state").textContent = "refused: " + ev.reason;
        return;
      }
      $("#ws-state").textContent = "reconnecting";
      setTimeout(connect, 1000);  // resumes from `offset`: nothing missed, nothing twice
    };
  };
  connect();
  refresh();
  setInterval(() => { if (!ended) refresh(); }, 2000);  // states that come without an event

  const action = (btn, method, url, body) => btn && btn.addEventListener("click", async () => {
    try { await api(method, url, body); $("#error").hidden = true; } catch (e) { showError(e.message); }
    if (method === "POST" && ended) { $("#ws-state").textContent = "reconnecting"; setTimeout(connect, 500); }
    refresh();
  });
  const base = "/api/" + (kind === "orchestration" ? "orchestrations/" : "jobs/") + encodeURIComponent(id);
  action($("#cancel"), "DELETE", kind === "orchestration" ? base : "/api/jobs/" + encodeURIComponent(id));
  action($("#resume"), "POST", base + "/resume");
  action($("#approve"), "POST", base + "/approve");
  document.querySelectorAll(".retry").forEach((b) => action(b, "POST", base + "/tasks/" + encodeURIComponent(b.dataset.task) + "/retry"));
  $("#show-kept") && $("#show-kept").addEventListener("click", () => loadRows("kept"));
  $("#show-dropped") && $("#show-dropped").addEventListener("click", () => loadRows("dropped"));

  async function loadRows(which) {
    const box = $("#rows");
    if (!box) return;
    let page;
    try { page = await api("GET", `/api/jobs/${encodeURIComponent(id)}/rows?which=${which}&limit=20`); }
    catch (e) { box.textContent = e.message; return; }
    $("#rows-total").textContent = `${page.rows.length} of ${page.total} ${which} rows`;
    const rows = page.rows.map((r) => which === "dropped" ? Object.assign({ by: r.by, reason: r.reason }, flat(r.row)) : flat(r));
    const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    const table = el("table"); table.id = "rows-" + which;
    const head = el("tr"); cols.forEach((c) => head.append(el("th", c)));
    const thead = el("thead"); thead.append(head); table.append(thead);
    const tbody = el("tbody");
    rows.forEach((r) => { const tr = el("tr"); cols.forEach((c) => tr.append(el("td", clip(r[c])))); tbody.append(tr); });
    table.append(tbody);
    box.replaceChildren(table);
  }
}

function flat(row) { return row && typeof row === "object" ? row : { value: row }; }
function clip(v) {
  const s = v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
  return s.length > 600 ? s.slice(0, 600) + ` … [+${s.length - 600} chars]` : s;
}
function showError(text) { const e = $("#error"); e.textContent = text; e.hidden = false; }

function describe(ev) {
  const t = new Date(ev.at * 1000).toLocaleTimeString();
  const rest = Object.entries(ev).filter(([k]) => k !== "type" && k !== "at")
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
  return `${t} ${ev.type} ${rest}`.slice(0, 400);
}

function render(job, kind) {
  const st = $("#status");
  st.textContent = job.status; st.className = "status s-" + job.status;
  document.querySelectorAll("[data-show]").forEach((b) => { b.hidden = !b.dataset.show.split(" ").includes(job.status); });
  if (job.error) showError(job.error); else $("#error").hidden = true;
  if (kind === "orchestration") return renderOrchestration(job);
  const c = job.counts || {};
  $("#n-requested").textContent = dash(job.requested);
  $("#n-generated").textContent = dash(c.generated);
  $("#n-kept").textContent = dash(job.kept);
  $("#n-dropped").textContent = dash(c.dropped_total || 0);
  $("#cost").textContent = fmtCost(job.cost_usd);
  if (job.usage) { $("#tokens-in").textContent = job.usage.input_tokens; $("#tokens-out").textContent = job.usage.output_tokens; }
  const reasons = Object.entries(job.dropped || {});
  $("#dropped-reasons tbody").replaceChildren(...(reasons.length ? reasons : [["no row dropped", ""]]).map(([r, n]) => {
    const tr = el("tr"); tr.append(el("td", r), el("td", String(n))); return tr;
  }));
  $("#progress tbody").replaceChildren(...Object.entries(job.progress || {}).map(([s, p]) => {
    const tr = el("tr"); tr.append(el("td", s), el("td", dash(p.done)), el("td", dash(p.total))); return tr;
  }));
  const report = $("#report");
  if (report) report.hidden = !job.report_url;
}

function renderOrchestration(job) {
  const tasks = job.tasks || [];
  if (tasks.length && !$("#dag svg")) { location.reload(); return; }  // the plan came: draw it
  for (const t of tasks) {
    const row = document.querySelector(`#tasks tr[data-task="${CSS.escape(t.id)}"]`);
    if (row) {
      const cells = row.children;
      cells[1].replaceChildren(Object.assign(el("span", t.state), { className: "status s-" + t.state }));
      cells[2].textContent = dash(t.worker); cells[3].textContent = dash(t.branch);
      cells[4].textContent = fmtCost(t.cost_usd); cells[5].textContent = dash(t.merge);
    }
    const node = document.querySelector(`#dag g.node[data-task="${CSS.escape(t.id)}"]`);
    if (node) { node.setAttribute("class", "node s-" + t.state); const s = node.querySelector(".state"); if (s) s.textContent = t.state; }
  }
  const outs = $("#outputs");
  outs.replaceChildren(...tasks.filter((t) => t.output_tail).flatMap((t) => [el("h3", t.id), el("pre", t.output_tail)]));
  $("#merges").replaceChildren(...(job.merges || []).map((m) => el("li", `${m.task_id}: ${m.outcome}${m.conflicts && m.conflicts.length ? " (" + m.conflicts.join(", ") + ")" : ""}`)));
  $("#verify").textContent = job.verify || "";
}

document.addEventListener("DOMContentLoaded", () => { setupIndex(); setupJob(); });
