// The live mesh view: renders each "mesh" event of /api/events (a sample
// of the daemon's node, see cmd/troupe/meshview.go). Every text that
// comes from the mesh (peer IDs, actor and group names, which other peers
// choose) is set as textContent, never parsed as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function fmtRate(r) {
  if (r >= 1e6) return (r / 1e6).toFixed(1) + "M";
  if (r >= 1e3) return (r / 1e3).toFixed(1) + "k";
  return r >= 10 || r === 0 ? Math.round(r).toString() : r.toFixed(1);
}

function fmtBytes(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

// names lists a sample's names; the daemon sends a bounded number and
// counts the rest in more.
function names(list, more) {
  const s = (list || []).join(" ");
  return more ? s + " (+" + more + " more)" : s;
}

function short(id) { return "…" + id.slice(-6); }

function setText(id, text) { document.getElementById(id).textContent = text; }

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function drawGraph(v) {
  const g = document.getElementById("graph");
  g.replaceChildren();
  const cx = 300, cy = 210, r = 160;
  const peers = v.peers || [];
  const at = peers.map((p, i) => {
    const a = (2 * Math.PI * i) / Math.max(peers.length, 1) - Math.PI / 2;
    return [cx + r * Math.cos(a), cy + r * Math.sin(a)];
  });
  // Edges first, then their labels: a thick edge drawn later must not
  // hide another's label, and each label sits beside its own edge, past
  // half its width, on a halo (style.css) that keeps it readable.
  const widths = peers.map((p) => 1 + Math.log2(1 + (p.sent_rate || 0) + (p.received_rate || 0)));
  peers.forEach((p, i) => {
    const [x, y] = at[i];
    g.appendChild(svgEl("line", {
      class: "edge" + (p.relayed ? " relayed" : ""), "data-peer": p.id,
      x1: cx, y1: cy, x2: x, y2: y, "stroke-width": widths[i],
    }));
  });
  peers.forEach((p, i) => {
    const [x, y] = at[i];
    const len = Math.hypot(x - cx, y - cy) || 1;
    // The unit normal of the edge, pointing up the screen.
    let nx = -(y - cy) / len, ny = (x - cx) / len;
    if (ny > 0) { nx = -nx; ny = -ny; }
    const off = widths[i] / 2 + 6;
    g.appendChild(svgEl("text", {
      class: "edge-label", "data-peer": p.id, "text-anchor": "middle",
      x: (cx + x) / 2 + nx * off, y: (cy + y) / 2 + ny * off,
    }, "↑" + fmtRate(p.sent_rate || 0) + " ↓" + fmtRate(p.received_rate || 0) + "/s"));
  });
  const node = (x, y, label, sub, cls, id) => {
    const n = svgEl("g", { class: "node" + cls, "data-peer": id });
    n.appendChild(svgEl("circle", { cx: x, cy: y, r: 30 }));
    n.appendChild(svgEl("text", { x: x, y: y - 2, "text-anchor": "middle" }, label));
    n.appendChild(svgEl("text", { x: x, y: y + 12, "text-anchor": "middle" }, sub));
    const title = svgEl("title", {}, id);
    n.appendChild(title);
    g.appendChild(n);
  };
  peers.forEach((p, i) => {
    const rtt = p.latency_ms ? p.latency_ms.toFixed(1) + " ms" : "";
    node(at[i][0], at[i][1], short(p.id), rtt, "", p.id);
  });
  node(cx, cy, short(v.self.id), "this peer", " self", v.self.id);
}

function drawTable(v) {
  const body = document.querySelector("#peers tbody");
  body.replaceChildren();
  for (const p of v.peers || []) {
    const tr = document.createElement("tr");
    tr.dataset.peer = p.id;
    cell(tr, p.id, "mono");
    cell(tr, p.relayed ? "relayed" : "direct", p.relayed ? "relayed" : "");
    cell(tr, p.latency_ms ? p.latency_ms.toFixed(1) + " ms" : "–", "num");
    const out = cell(tr, fmtRate(p.sent_rate || 0), "num sent-rate");
    out.dataset.value = String(p.sent_rate || 0);
    const inn = cell(tr, fmtRate(p.received_rate || 0), "num received-rate");
    inn.dataset.value = String(p.received_rate || 0);
    cell(tr, String(p.queued || 0), "num");
    cell(tr, fmtBytes(p.held_bytes || 0), "num");
    cell(tr, names(p.actors, p.more_actors), "mono");
    cell(tr, names(p.groups, p.more_groups), "mono");
    body.appendChild(tr);
  }
  document.getElementById("no-peers").hidden = (v.peers || []).length > 0;
}

// The dead-letter panel: the latest maxDead dead letters, newest first,
// fetched from api/deadletters when a sample's count has grown.
const maxDead = 50;
let deadSeq = 0, deadTotal = 0, deadBusy = false;

function shortRef(ref) {
  const i = ref.lastIndexOf("/");
  return i < 0 ? ref : short(ref.slice(0, i)) + ref.slice(i);
}

function addDeadLetters(list) {
  const body = document.querySelector("#deadletters tbody");
  for (const d of list) {
    if (d.seq <= deadSeq) continue;
    deadSeq = d.seq;
    const tr = document.createElement("tr");
    tr.dataset.seq = String(d.seq);
    const t = cell(tr, new Date(d.time).toLocaleTimeString(), "num");
    t.title = d.time;
    const why = cell(tr, d.kind, "reason");
    why.title = d.reason;
    cell(tr, shortRef(d.to), "mono to").title = d.to;
    cell(tr, d.from ? shortRef(d.from) : "–", "mono").title = d.from || "plain code";
    cell(tr, d.type, "mono type");
    cell(tr, d.size >= 0 ? fmtBytes(d.size) : "?", "num");
    body.prepend(tr);
  }
  while (body.children.length > maxDead) body.lastElementChild.remove();
  setText("dead-shown", String(body.children.length));
  document.getElementById("no-dead").hidden = body.children.length > 0;
}

function refreshDeadLetters(total) {
  if (total === deadTotal || deadBusy) return;
  deadBusy = true;
  fetch("api/deadletters?n=" + maxDead + "&after=" + deadSeq)
    .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
    .then((res) => { deadTotal = total; addDeadLetters(res.recent || []); })
    .catch(() => {})
    .finally(() => { deadBusy = false; });
}

function render(v) {
  setText("mesh", v.self.mesh);
  setText("self-id", v.self.id);
  setText("reach", v.self.reachability);
  setText("sent-rate", fmtRate(v.sent_rate || 0));
  setText("received-rate", fmtRate(v.received_rate || 0));
  setText("dead", String(v.dead_letters || 0));
  setText("dead-rate", fmtRate(v.dead_letter_rate || 0));
  setText("peer-count", String((v.peers || []).length));
  setText("actors", names(v.actors, v.more_actors));
  setText("groups", names(v.groups, v.more_groups) || "none");
  drawGraph(v);
  drawTable(v);
  refreshDeadLetters(v.dead_letters || 0);
}

// connect follows the daemon's events. The browser reconnects by itself
// after a dropped stream, but gives up after an error answer (a daemon
// serving too many streams says 503): then the page tries again itself.
function connect() {
  const status = document.getElementById("status");
  const es = new EventSource("api/events");
  es.addEventListener("mesh", (e) => {
    status.textContent = "live";
    status.className = "";
    render(JSON.parse(e.data));
  });
  es.onerror = () => {
    status.className = "down";
    if (es.readyState === EventSource.CLOSED) {
      status.textContent = "the daemon refused the event stream (too many viewers?), trying again in 5 s";
      setTimeout(connect, 5000);
      return;
    }
    status.textContent = "daemon unreachable, retrying";
  };
}

connect();
