// The summary page: asks once for a token (the admin token or a viewer token, kept in
// sessionStorage for this tab, never in the address), then shows one view at a time: the
// advertiser's overview, the web (PCM), the apps, Apple Ads and the tools. The view, the
// advertiser, the site, the app site and the period live in the address's fragment, so that a
// link opens the same view (the fragment never reaches a server or its logs).
// No framework, no build step, nothing loaded from elsewhere.
"use strict";

const TOKEN_KEY = "attribution-endpoint-token";
const VIEWS = ["overview", "web", "apps", "apple-ads", "tools", "register"];
const $ = (id) => document.getElementById(id);

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function showLogin(message) {
  $("summary").hidden = true;
  $("nav").hidden = true;
  $("caller").hidden = true;
  $("login").hidden = false;
  const error = $("login-error");
  error.hidden = !message;
  error.textContent = message || "";
  $("token").focus();
}

async function api(path, body) {
  const init = { headers: { Authorization: "Bearer " + token() }, cache: "no-store" };
  if (body !== undefined) Object.assign(init, { method: "POST", body });
  const response = await fetch(path, init);
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw Object.assign(new Error("That token was not accepted. Check data/admin-token (or --token), or ask for a new viewer token, and try again."), { login: true });
  }
  if (!response.ok) {
    let problem = {};
    try { problem = await response.json(); } catch (_) { /* not JSON */ }
    const error = new Error("The endpoint answered " + response.status + ": " + (problem.detail || response.statusText));
    // Right after a restart the summary (or the Apps view) is rebuilt from the log: try again shortly.
    error.retry = ["summary_rebuilding", "postbacks_rebuilding", "apple_ads_rebuilding"].includes(problem.rule);
    throw error;
  }
  return response;
}

// ---- The address's state -------------------------------------------------------------------

/// The state the fragment holds: `#view=web&advertiser=acme&site=shop.example&from=…&to=…`.
const state = { view: "overview", advertiser: "", site: "", role: "", app_site: "", from: "", to: "", scope: "" };

function readFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const key of Object.keys(state)) state[key] = params.get(key) || "";
  if (!VIEWS.includes(state.view)) state.view = "overview";
}

function fragment() {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(state)) if (value) params.set(key, value);
  return "#" + params.toString();
}

/// The controls into the state, and the state into the address (a new history entry only when
/// the view changes, so Back goes to the previous view).
function writeFragment(newEntry) {
  const url = location.pathname + fragment();
  if (newEntry) history.pushState(null, "", url); else history.replaceState(null, "", url);
}

function controlsToState() {
  for (const [key, id] of [["advertiser", "advertiser"], ["from", "from"], ["to", "to"], ["site", "site"], ["role", "role"], ["app_site", "app-site"]]) {
    state[key] = $(id).value;
  }
  state.scope = !$("scope-choice").hidden && $("scope").value === "cluster" ? "cluster" : "";
}

function stateToControls() {
  for (const [key, id] of [["from", "from"], ["to", "to"], ["role", "role"]]) $(id).value = state[key];
  for (const [key, id] of [["advertiser", "advertiser"], ["site", "site"], ["app_site", "app-site"]]) choose($(id), state[key]);
  $("scope").value = state.scope === "cluster" ? "cluster" : "node";
}

/// Selects `value`, adding it as an option first if the list does not have it yet (the list is
/// filled from the answer that the value itself asks for).
function choose(select, value) {
  // A scoped viewer's advertiser is fixed: a link naming another (refused by the endpoint) must
  // not put that name in the list.
  if (select.disabled) return;
  if (value && ![...select.options].some((o) => o.value === value)) select.appendChild(new Option(value, value));
  select.value = value;
}

/// The query for an API path from the state: `names` maps its parameters to the state's keys.
/// The summaries take `scope`; the exports do not.
function params(names, withScope = true) {
  const out = new URLSearchParams();
  for (const [name, key] of names) if (state[key]) out.set(name, state[key]);
  if (withScope && state.scope === "cluster") out.set("scope", "cluster");
  return out;
}

const period = [["advertiser", "advertiser"], ["from", "from"], ["to", "to"]];

// ---- Drawing -------------------------------------------------------------------------------

function text(node, value) { node.textContent = String(value); }

function cell(row, content, className, tag) {
  const td = document.createElement(tag || "td");
  if (className) td.className = className;
  if (content instanceof Node) td.appendChild(content); else td.textContent = content;
  row.appendChild(td);
  return td;
}

function named(name, detail) {
  const span = document.createElement("span");
  span.textContent = name;
  const sub = document.createElement("span");
  sub.className = "sub";
  sub.textContent = detail;
  const wrapper = document.createElement("span");
  wrapper.append(span, sub);
  return wrapper;
}

function fill(tableId, rows, render) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    render(tr, row);
    body.appendChild(tr);
  }
  if (LONG_TABLES.has(tableId)) shorten(tableId);
}

/// Tables that can grow with campaigns and ids: they show their top rows (sorted by total), the
/// rest one click away, so that the page stays a page.
const LONG_TABLES = new Set(["campaigns", "conversions", "crosstab", "apps-campaigns", "apps-crosstab", "spend-table", "quarantine", "apps-reasons"]);
const SHOWN_ROWS = 10;

function shorten(tableId) {
  const table = $(tableId), rows = [...table.tBodies[0].rows];
  let button = $(tableId + "-more");
  if (rows.length <= SHOWN_ROWS) { if (button) button.hidden = true; return; }
  rows.forEach((tr, i) => { tr.hidden = i >= SHOWN_ROWS; });
  if (!button) {
    button = document.createElement("button");
    button.type = "button";
    button.className = "secondary more";
    button.id = tableId + "-more";
    button.addEventListener("click", () => {
      const open = button.dataset.open !== "true";
      for (const [i, tr] of [...table.tBodies[0].rows].entries()) tr.hidden = !open && i >= SHOWN_ROWS;
      button.dataset.open = String(open);
      button.textContent = open ? "Show the top " + SHOWN_ROWS : `Show all ${table.tBodies[0].rows.length} rows`;
    });
    (table.closest(".scroll") || table).insertAdjacentElement("afterend", button);
  }
  button.hidden = false;
  button.dataset.open = "false";
  button.textContent = `Show all ${rows.length} rows`;
}

function empty(id, html) {
  const node = $(id);
  node.hidden = !html;
  node.innerHTML = html || "";
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes, parent) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

/// Charts are drawn at the width they are shown at, so that their labels keep their size on a
/// phone; drawn again when the window changes width.
const redraws = new Map();
let redrawTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(redrawTimer);
  redrawTimer = setTimeout(() => { for (const draw of redraws.values()) draw(); }, 150);
});

function chartWidth() {
  return Math.max(300, Math.min(800, document.documentElement.clientWidth - 72));
}

/// Labels at least ~56 px apart: every how many days one is written.
function labelEvery(count, width) {
  return Math.max(1, Math.ceil(count / Math.max(2, Math.floor(width / 56))));
}

/// Whether `day` is the endpoint's today, which is not over: drawn as partial, never as a drop.
function isToday(day) {
  return Boolean(whoami && whoami.now && whoami.now.slice(0, 10) === day);
}

/// Bars per day, one for each series side by side: `series` is [{key, label, className}].
function drawDays(elementId, days, series, what) {
  redraws.set(elementId, () => drawDays(elementId, days, series, what));
  const width = chartWidth(), height = 200, left = 36, bottom = 22, top = 8;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": what });
  const max = Math.max(1, ...days.map((d) => Math.max(...series.map((s) => d[s.key]))));
  const plotH = height - top - bottom, slot = (width - left) / Math.max(1, days.length), bar = Math.max(1, slot / series.length - 1);
  svg("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, class: "axis" }, root);
  for (const tick of [0, max]) {
    svg("text", { x: left - 4, y: height - bottom - (tick / max) * plotH + 3, "text-anchor": "end" }, root).textContent = tick;
  }
  const every = labelEvery(days.length, width - left);
  days.forEach((d, i) => {
    const x = left + i * slot, partial = isToday(d.day);
    series.forEach((s, n) => {
      const h = (d[s.key] / max) * plotH;
      const rect = svg("rect", { x: x + n * bar, y: height - bottom - h, width: bar, height: h, class: s.className + (partial ? " partial" : "") }, root);
      svg("title", {}, rect).textContent = `${d.day}: ${d[s.key]} ${s.label}${partial ? " (today, so far)" : ""}`;
    });
    if (i % every === 0 || partial) {
      svg("text", { x: x + bar, y: height - 6, "text-anchor": "middle" }, root).textContent = partial ? "today" : d.day.slice(5);
    }
  });
  if (days.length && isToday(days[days.length - 1].day)) root.setAttribute("aria-label", what + "; the last day is today, not over");
  $(elementId).replaceChildren(root);
}

/// One line per series over the days, each in its colour (`colour`, a `series-N` class): channels
/// that must not be added are drawn side by side, never stacked.
function drawLines(elementId, days, series, what) {
  redraws.set(elementId, () => drawLines(elementId, days, series, what));
  const width = chartWidth(), height = 220, left = 36, bottom = 22, top = 10;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": what });
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const plotH = height - top - bottom, step = (width - left - 8) / Math.max(1, days.length - 1);
  const x = (i) => left + (days.length === 1 ? (width - left) / 2 : i * step), y = (v) => height - bottom - (v / max) * plotH;
  svg("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, class: "axis" }, root);
  for (const tick of [0, max]) svg("text", { x: left - 4, y: y(tick) + 3, "text-anchor": "end" }, root).textContent = tick;
  // Today is not over: its last stretch is dashed and its point hollow, never read as a drop.
  const partial = days.length > 1 && isToday(days[days.length - 1]);
  series.forEach((s) => {
    const whole = partial ? s.values.slice(0, -1) : s.values;
    svg("polyline", { points: whole.map((v, i) => `${x(i)},${y(v)}`).join(" "), class: "line series-" + s.colour, fill: "none" }, root);
    if (partial) {
      const n = s.values.length - 1;
      svg("line", { x1: x(n - 1), y1: y(s.values[n - 1]), x2: x(n), y2: y(s.values[n]), class: "line partial series-" + s.colour }, root);
    }
    s.values.forEach((v, i) => {
      const today = partial && i === s.values.length - 1;
      const dot = svg("circle", { cx: x(i), cy: y(v), r: 3, class: "dot series-" + s.colour + (today ? " partial" : "") }, root);
      svg("title", {}, dot).textContent = `${days[i]}: ${v} ${s.label}${today ? " (today, so far)" : ""}`;
    });
  });
  const every = labelEvery(days.length, width - left);
  days.forEach((day, i) => {
    const today = partial && i === days.length - 1;
    if (i % every === 0 || today) {
      svg("text", { x: x(i), y: height - 6, "text-anchor": today ? "end" : "middle" }, root).textContent = today ? "today" : day.slice(5);
    }
  });
  if (partial) root.setAttribute("aria-label", what + "; the last day is today, not over");
  $(elementId).replaceChildren(root);
}

function drawDelays(buckets) {
  const width = 800, height = 140, bottom = 22, top = 8;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Reports by delay after the conversion" });
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const slot = width / buckets.length;
  buckets.forEach((b, i) => {
    const h = (b.count / max) * (height - top - bottom);
    const rect = svg("rect", { x: i * slot + 4, y: height - bottom - h, width: slot - 8, height: h, class: "bar-delay" }, root);
    const name = b.to === null ? `${b.from} h or more` : `${b.from}–${b.to} h`;
    svg("title", {}, rect).textContent = `${name}: ${b.count}`;
    svg("text", { x: i * slot + slot / 2, y: height - 6, "text-anchor": "middle" }, root).textContent = `${name} (${b.count})`;
  });
  $("delays").replaceChildren(root);
}

/// A crosstab: `columns` are header labels (each a [name, detail] pair), `rows` each a label and
/// its counts; totals in the footer.
function drawCrosstab(tableId, corner, columns, rows, totals, total) {
  const table = $(tableId);
  const head = table.querySelector("thead tr"), foot = table.querySelector("tfoot tr");
  head.replaceChildren();
  cell(head, corner, "", "th").scope = "col";
  for (const [name, detail] of columns) cell(head, named(name, detail), "num", "th").scope = "col";
  cell(head, "Total", "num", "th").scope = "col";
  // The biggest first: a marketer reads the top of the table.
  rows = [...rows].sort((a, b) => b.total - a.total);
  fill(tableId, rows, (tr, r) => {
    cell(tr, r.label, "", "th").scope = "row";
    for (const n of r.counts) cell(tr, n, n ? "num" : "num zero");
    cell(tr, r.total, "num total");
  });
  foot.replaceChildren();
  if (!rows.length) return;
  cell(foot, "Total", "", "th").scope = "row";
  for (const n of totals) cell(foot, n, "num total");
  cell(foot, total, "num total");
}

const percent = (part, whole, of = "") => `${Math.round((100 * part) / whole)} %${of ? " of " + of : ""}`;
const sum = (rows, key) => rows.reduce((n, r) => n + r[key], 0);
const entries = (object) => Object.entries(object).map(([name, count]) => ({ name, count }));

// ---- Who is reading ------------------------------------------------------------------------

let whoami = null;

async function loadRole() {
  whoami = await (await api("/api/whoami")).json();
  const caller = $("caller");
  caller.hidden = false;
  // The forms are the admin token's: a viewer token is never offered them.
  $("nav-register").hidden = whoami.role !== "admin";
  if (whoami.role === "admin") {
    text(caller, "Admin token: reads and changes everything");
    caller.className = "caller admin";
  } else {
    const whose = whoami.advertiser ? `${whoami.advertiser.name}'s sites (${whoami.sites.join(", ")})` : "every advertiser";
    text(caller, `Viewer token "${whoami.label}": reads ${whose}${whoami.advertiser ? ", gives its own spend, changes nothing else" : ", changes nothing"}`);
    caller.className = "caller viewer";
  }
  const select = $("advertiser");
  select.replaceChildren();
  const advertisers = await (await api("/api/advertisers")).json();
  if (whoami.advertiser) {
    select.appendChild(new Option(whoami.advertiser.name, whoami.advertiser.id));
    select.disabled = true;
    state.advertiser = whoami.advertiser.id;
  } else {
    select.appendChild(new Option("All advertisers", ""));
    for (const a of advertisers) select.appendChild(new Option(a.name, a.id));
    select.disabled = false;
  }
  $("advertiser-choice").hidden = !whoami.advertiser && advertisers.length === 0;
}

// ---- The views -----------------------------------------------------------------------------

const CHANNEL_NAMES = { web: "web conversions", app_installs: "app installs", re_engagements: "re-engagements", apple_ads: "Apple Ads installs" };

function renderOverview(o) {
  text($("overview-who"), (o.advertiser ? `${o.advertiser.name}: ${o.advertiser.sites.join(", ")}` : "Every site this endpoint serves") +
    `, ${o.from} to ${o.to}.`);
  const tiles = $("overview-tiles");
  tiles.replaceChildren();
  o.channels.forEach((c, n) => {
    const tile = document.createElement("div");
    tile.className = "tile series-" + n;
    tile.dataset.channel = c.id;
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = c.name;
    const value = document.createElement("span");
    value.className = "value";
    value.textContent = c.total === null ? "…" : c.total;
    const source = document.createElement("span");
    source.className = "sub";
    source.textContent = c.unavailable || c.source;
    tile.append(label, value, source);
    tiles.appendChild(tile);
  });
  // A channel keeps its colour (its place among all four) whether or not the others have numbers.
  const drawn = o.channels.map((c, n) => ({ c, n })).filter(({ c }) => c.per_day);
  drawLines("overview-chart", o.days, drawn.map(({ c, n }) => ({ label: CHANNEL_NAMES[c.id] || c.name, values: c.per_day, colour: n })), "Each channel per day");
  const legend = $("overview-legend");
  legend.replaceChildren(...drawn.map(({ c, n }) => {
    const key = document.createElement("span");
    key.className = "key series-" + n;
    key.textContent = "● " + c.name + " ";
    return key;
  }));
  text($("overview-note"), o.side_by_side);
  const top = $("overview-top");
  top.replaceChildren();
  for (const c of o.channels) {
    const box = document.createElement("div");
    const title = document.createElement("h3");
    title.textContent = c.name;
    box.appendChild(title);
    if (!c.top.length) {
      const none = document.createElement("p");
      none.className = "explain";
      none.textContent = c.unavailable || "Nothing in this period.";
      box.appendChild(none);
    } else {
      const table = document.createElement("table");
      table.className = "top";
      table.innerHTML = '<thead><tr><th scope="col">Campaign</th><th scope="col" class="num">Count</th></tr></thead><tbody></tbody>';
      for (const t of c.top) {
        const tr = document.createElement("tr");
        cell(tr, named(t.name, t.detail));
        cell(tr, t.count, "num");
        table.tBodies[0].appendChild(tr);
      }
      box.appendChild(table);
    }
    if (c.revenue && c.revenue.currencies.length) box.appendChild(revenueTable(c.revenue, "Estimated revenue, top campaigns", c.revenue.currencies.flatMap(
      (r) => r.top.map((t) => ({ name: t.name, detail: t.detail, currency: r.currency, estimate: t.estimate })))));
    if (c.placements && c.placements.length) {
      const table = document.createElement("table");
      table.className = "top placements";
      table.innerHTML = '<thead><tr><th scope="col">Placement</th><th scope="col" class="num">Attributed</th><th scope="col" class="num">Postbacks</th></tr></thead><tbody></tbody>';
      for (const p of c.placements) {
        const tr = document.createElement("tr");
        cell(tr, p.label); cell(tr, p.attributed, "num"); cell(tr, p.postbacks, "num");
        table.tBodies[0].appendChild(tr);
      }
      box.appendChild(table);
      if (c.unverifiable_postbacks) {
        const note = document.createElement("p");
        note.className = "explain";
        note.textContent = `${c.unverifiable_postbacks} of Apple Ads' postbacks are SKAdNetwork 1.0 or 2.0 copies, signed with a P-192 key no library here can check: counted, but anyone could have sent them.`;
        box.appendChild(note);
      }
    }
    top.appendChild(box);
  }
}

/// "DE" → "Germany (DE)", in the reader's language where the browser knows it; the words as they are.
function country(code) {
  if (!/^[A-Z]{2}$/.test(code)) return code;
  try {
    const name = new Intl.DisplayNames(undefined, { type: "region" }).of(code);
    return name && name !== code ? `${name} (${code})` : code;
  } catch { return code; }
}

/// "1,234.50 USD"
function money(amount, currency) {
  return Number(amount).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + " " + currency;
}

/// Estimated revenue by campaign, low / middle / high: an estimate from the schema's conversion-value
/// ranges, and the table says so in its caption.
function revenueTable(revenue, title, rows) {
  const box = document.createElement("div");
  const table = document.createElement("table");
  table.className = "top revenue";
  const caption = document.createElement("caption");
  caption.textContent = title;
  const note = document.createElement("span");
  note.className = "sub";
  note.textContent = " " + revenue.estimate;
  caption.appendChild(note);
  table.appendChild(caption);
  const head = table.createTHead().insertRow();
  for (const [label, className] of [["Campaign", ""], ["Low", "num"], ["Middle", "num"], ["High", "num"]]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = label;
    if (className) th.className = className;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    cell(tr, named(r.name, r.detail));
    const e = r.estimate;
    cell(tr, money(e.low, r.currency), "num"); cell(tr, money(e.middle, r.currency), "num"); cell(tr, money(e.high, r.currency), "num");
  }
  box.appendChild(table);
  return box;
}

function renderWeb(s) {
  const select = $("site");
  select.replaceChildren(new Option("All sites", ""));
  for (const site of s.sites) select.appendChild(new Option(site, site));
  choose(select, state.site);

  text($("accepted-source"), s.accepted.source);
  text($("accepted-destination"), s.accepted.destination);
  text($("quarantined-total"), s.quarantined.source + s.quarantined.destination);
  text($("late-total"), s.late.source + s.late.destination);
  drawDays("chart", s.per_day, [{ key: "source", label: "source copies", className: "bar-source" },
    { key: "destination", label: "destination copies", className: "bar-destination" }], "Accepted reports per day");
  const anything = s.accepted.source + s.accepted.destination + s.quarantined.source + s.quarantined.destination;
  empty("empty-reports", anything ? "" :
    "No reports in this period yet. Browsers send them 24 to 48 hours after a conversion. Advertisers: register a conversion with " +
    "<code>POST /api/conversions</code> and embed the pixel <code>&lt;img src=\"https://your-site/conversion-pixel?conversion=purchase&amp;source=https://publisher\"&gt;</code>; " +
    "publishers: put <code>attributionsourceid</code> on ad links and register campaigns with <code>POST /api/campaigns</code>.");

  const x = s.crosstab;
  text($("crosstab-copy"), x.copy === "destination"
    ? "Accepted destination copies: the report each conversion sends to the advertiser's site, so each conversion is counted once. Choose “Source copies” above to count the publishers' copies instead."
    : "Accepted source copies: the report each conversion sends to the publisher's site, so each conversion is counted once (this view holds no destination copies, or you chose source copies).");
  drawCrosstab("crosstab", "Campaign", x.conversions.map((c) => [c.conversion || "trigger data " + c.trigger_data, `${c.site} · ${c.trigger_data}`]),
    x.rows.map((r) => ({ label: named(r.campaign || "source id " + r.source_id, `${r.source_site} · source id ${r.source_id}${r.campaign ? "" : " · no campaign registered"}`), counts: r.counts, total: r.total })),
    x.totals, x.total);
  empty("empty-crosstab", x.rows.length ? "" : "No accepted reports in this period to cross campaigns with conversions.");

  fill("campaigns", [...s.by_campaign].sort((a, b) => (b.source + b.destination) - (a.source + a.destination)), (tr, r) => {
    cell(tr, named(r.campaign || "source id " + r.source_id, `${r.source_site} · source id ${r.source_id}${r.campaign ? "" : " · no campaign registered"}`));
    cell(tr, r.source, "num"); cell(tr, r.destination, "num"); cell(tr, verifiedShare(r), "num");
  });
  empty("empty-campaigns", s.by_campaign.length ? (s.registered.campaigns ? "" :
    "Reports are shown by source id only: register campaigns (<code>POST /api/campaigns</code>) to see their names and to quarantine reports for ids you never used.") :
    "No accepted reports to break down by campaign.");

  fill("conversions", s.by_conversion, (tr, r) => {
    cell(tr, named(r.conversion || "Unnamed conversion", `${r.site} · trigger data ${r.trigger_data}`));
    cell(tr, r.source, "num"); cell(tr, r.destination, "num"); cell(tr, verifiedShare(r), "num");
  });
  empty("empty-conversions", s.by_conversion.length ? (s.registered.conversions ? "" :
    "Register your conversions (<code>POST /api/conversions</code>) to name trigger data values and embed the pixel.") :
    "No accepted reports to break down by conversion.");

  // A verified token is noted beside a report's causes, never a cause of its own.
  const causes = s.quarantined_by_reason.filter((r) => !r.reason.endsWith("_verified"));
  const notes = s.quarantined_by_reason.filter((r) => r.reason.endsWith("_verified"));
  fill("quarantine", [...causes].sort((a, b) => (b.source + b.destination) - (a.source + a.destination)),
    (tr, r) => { cell(tr, r.reason); cell(tr, r.source, "num"); cell(tr, r.destination, "num"); });
  const quarantined = s.quarantined.source + s.quarantined.destination;
  const causesCounted = causes.reduce((n, r) => n + r.source + r.destination, 0);
  text($("quarantine-note"), (causesCounted > quarantined ? `Some of the ${quarantined} quarantined reports have more than one cause, so the rows add up to ${causesCounted}. ` : "") +
    (notes.length ? `Also noted on them, not a cause: ${notes.map((r) => `${r.reason} (${r.source + r.destination})`).join(", ")}.` : ""));
  fill("rejections", s.rejected_by_rule, (tr, r) => { cell(tr, r.rule); cell(tr, r.count, "num"); });
  drawDelays(s.delay_hours);
  const withTokens = s.tokens.with_tokens.source + s.tokens.with_tokens.destination;
  const verified = s.tokens.verified.source + s.tokens.verified.destination;
  const total = anything;
  text($("tokens"), `Reports carrying fraud-prevention tokens: ${withTokens} of ${total}` +
    (total ? ` (${percent(withTokens, total, "the reports")})` : "") + `; with a token that verified: ${verified}` +
    (withTokens ? ` (${percent(verified, withTokens)} of those)` : "") +
    ". Forged and replayed tokens are quarantined (…_token_invalid, …_token_replayed, …_token_possibly_replayed above); a token from a site whose key this endpoint does not know is kept as …_token_unverifiable.");
}

/// "12 (40 %)": accepted reports of the row whose token verified, and their share of the row.
function verifiedShare(r) {
  const n = r.verified_tokens.source + r.verified_tokens.destination, all = r.source + r.destination;
  return all ? `${n} (${percent(n, all, "the row")})` : "0";
}

/// Fine values grouped by meaning (a schema's range), values without one by eights.
function fineByMeaning(values) {
  const groups = new Map();
  for (const v of values) {
    const label = v.meaning || `values ${Math.floor(v.value / 8) * 8}–${Math.floor(v.value / 8) * 8 + 7}`;
    const group = groups.get(label) || { label, values: [], count: 0 };
    group.values.push(v.value);
    group.count += v.count;
    groups.set(label, group);
  }
  return [...groups.values()].sort((a, b) => Math.min(...a.values) - Math.min(...b.values));
}

/// 3, 4, 5, 9 → "3–5, 9"
function ranges(values) {
  const sorted = [...values].sort((a, b) => a - b), out = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}–${sorted[j]}`);
    i = j;
  }
  return out.join(", ");
}

function renderApps(a) {
  const select = $("app-site");
  select.replaceChildren(new Option("All app sites", ""));
  for (const site of a.sites) select.appendChild(new Option(site, site));
  choose(select, state.app_site);
  text($("apps-installs"), sum(a.conversions, "installs"));
  text($("apps-redownloads"), sum(a.conversions, "redownloads"));
  text($("apps-reengagements"), sum(a.conversions, "re_engagements"));
  text($("apps-quarantined"), a.postbacks.quarantined);
  text($("apps-retries"), a.postbacks.duplicates_received);
  empty("empty-apps", a.postbacks.stored ? "" :
    "No postback copies in this period. App developers: name this endpoint's site in the app's Info.plist " +
    "(<code>NSAdvertisingAttributionReportEndpoint</code> for SKAdNetwork, <code>AttributionCopyEndpoint</code> for AdAttributionKit) " +
    "and register the app's conversion values with <code>POST /api/apps</code>.");
  drawDays("apps-chart", (a.per_day || []).map((d) => ({ day: d.day, installs: d.installs + d.redownloads, re_engagements: d.re_engagements })),
    [{ key: "installs", label: "installs and redownloads", className: "bar-installs" },
     { key: "re_engagements", label: "re-engagements", className: "bar-reengagements" }], "Installs and re-engagements per day");
  const installs = (r) => r.installs + r.redownloads + r.re_engagements;
  fill("apps-campaigns", [...a.conversions].sort((x, y) => installs(y) - installs(x)), (tr, r) => {
    cell(tr, named(r.ad_network_name || r.ad_network, r.ad_network_name ? r.ad_network : "not registered"));
    cell(tr, named(r.campaign_name || "campaign " + r.campaign, r.campaign_name ? r.campaign : r.campaign + " · not registered"));
    cell(tr, named(r.app_name || "App " + r.app_id, r.app_name ? "app " + r.app_id : "not registered"));
    cell(tr, r.installs, "num"); cell(tr, r.redownloads, "num"); cell(tr, r.re_engagements, "num");
  });
  const revenue = $("apps-revenue");
  revenue.replaceChildren();
  if (a.revenue && a.revenue.by_campaign.length) {
    revenue.appendChild(revenueTable(a.revenue, "Estimated revenue by campaign", a.revenue.by_campaign.map((r) => ({
      name: r.campaign_name || "campaign " + r.campaign, detail: `${r.ad_network_name || r.ad_network} · ${r.app_name || "app " + r.app_id} · ${counted(r.postbacks, "postback")}`,
      currency: r.currency, estimate: r }))));
    const totals = a.revenue.totals.map((t) => `${money(t.low, t.currency)} – ${money(t.high, t.currency)} (middle ${money(t.middle, t.currency)})`).join("; ");
    const p = document.createElement("p");
    p.className = "explain";
    p.textContent = `In all: ${totals}.` + (a.revenue.postbacks_without_estimate
      ? ` ${counted(a.revenue.postbacks_without_estimate, "postback")} with a fine value ${a.revenue.postbacks_without_estimate === 1 ? "has" : "have"} no estimate: their range names no revenue, or the schema changed while their value could be set.` : "");
    revenue.appendChild(p);
  }
  const x = a.crosstab;
  const tierDetail = { none: "below the privacy threshold", ambiguous: "schema changed in its window" };
  // Which version of the app's schema a row's values read with, or the versions they could be.
  const version = (r) => r.schema_ambiguous_versions ? ` · schema v${r.schema_ambiguous_versions.replace("-", " or v")}, ambiguous`
    : r.schema_version ? ` · schema v${r.schema_version}` : "";
  drawCrosstab("apps-crosstab", "Campaign", x.columns.map((c) => [c.meaning, tierDetail[c.tier] || c.tier + " value"]),
    x.rows.map((r) => ({ label: named(r.campaign_name || "campaign " + r.campaign, `${r.ad_network_name || r.ad_network} · ${r.app_name || "app " + r.app_id}${version(r)}`),
      counts: r.counts, total: r.total })), x.totals, x.total);
  const ambiguous = a.schema_versions ? a.schema_versions.ambiguous_postbacks : 0;
  $("apps-ambiguous").hidden = !ambiguous;
  text($("apps-ambiguous"), ambiguous ? `${ambiguous} postback${ambiguous === 1 ? "" : "s"} could have been set under either of two versions of their app's schema (it changed while their value could be set): counted under "schema changed in its window", by value, and given no meaning.` : "");
  const fine = fineByMeaning(a.fine_values), most = Math.max(1, ...fine.map((r) => r.count));
  fill("apps-fine", fine, (tr, r) => {
    cell(tr, named(r.label, "values " + ranges(r.values)));
    const bar = document.createElement("span");
    bar.className = "meter";
    bar.style.width = `${Math.max(1, Math.round((100 * r.count) / most))}%`;
    bar.title = `${r.label}: ${r.count}`;
    cell(tr, bar, "meter-cell");
    cell(tr, r.count, "num");
  });
  fill("apps-coarse", a.coarse_values, (tr, r) => { cell(tr, r.value); cell(tr, r.meaning || "—"); cell(tr, r.count, "num"); });
  fill("apps-windows", a.postback_windows, (tr, r) => { cell(tr, ["first (days 0–2)", "second (days 3–7)", "third (days 8–35)"][r.index] || r.index); cell(tr, r.count, "num"); });
  const tiers = entries(a.privacy_tiers.source_identifier_digits).map((e) => ({ name: e.name + "-digit source identifier", count: e.count }))
    .concat(entries(a.privacy_tiers.conversion_value).map((e) => ({ name: { fine: "fine value", coarse: "coarse value", none: "no value" }[e.name] || e.name, count: e.count })));
  // Shares of the accepted postbacks: how many got through each privacy tier's filter.
  const share = (n) => a.postbacks.accepted ? ` (${percent(n, a.postbacks.accepted, "accepted")})` : "";
  fill("apps-tiers", tiers, (tr, r) => { cell(tr, r.name); cell(tr, r.count + share(r.count), "num"); });
  fill("apps-fidelity", entries(a.fidelity), (tr, r) => { cell(tr, r.name.replaceAll("_", " ")); cell(tr, r.count, "num"); });
  fill("apps-signatures", entries(a.signatures), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
  fill("apps-reasons", entries(a.quarantine_reasons), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
  fill("apps-countries", a.countries || [], (tr, r) => { cell(tr, country(r.country)); cell(tr, r.postbacks, "num"); cell(tr, r.installs, "num"); });
  renderSpend(a.spend_and_return);
  $("apps-retention").hidden = !a.records_kept_from;
  $("apps-retention").textContent = a.records_kept_from
    ? `Postbacks and Apple Ads tokens received before ${a.records_kept_from} were removed by retention: they are counted here, but /api/postbacks and /api/apple-ads start on that day.` : "";
}

/// Cost per install and return on ad spend, per campaign given spend; the upload only for a
/// token that may give spend (the admin's, or an advertiser's own viewer token).
function renderSpend(section) {
  $("spend-form").hidden = !(whoami && (whoami.role === "admin" || whoami.advertiser));
  const rows = section ? section.campaigns : [];
  const ratio = (x) => x === null ? "—" : `${Number(x).toFixed(2)}×`;
  fill("spend-table", rows, (tr, r) => {
    cell(tr, named(r.campaign_name || "campaign " + r.campaign, `${r.ad_network_name || r.ad_network} · ${r.app_name || "app " + r.app_id}`));
    cell(tr, money(r.spend, r.currency), "num");
    // Beside, never divided by: installs under a shortened id (may be a sibling's) and unverifiable ones.
    const beside = [r.installs_with_shorter_ids ? `+${r.installs_with_shorter_ids} under a shorter id` : "",
      r.unverifiable_installs ? `${r.unverifiable_installs} unverifiable` : ""].filter(Boolean).join(" · ");
    cell(tr, beside ? named(String(r.installs), beside) : r.installs, "num");
    cell(tr, r.cost_per_install === null ? "—" : money(r.cost_per_install, r.currency), "num");
    cell(tr, r.revenue ? money(r.revenue.middle, r.currency) : (r.revenue_in_other_currencies.length ? `in ${r.revenue_in_other_currencies.join(", ")}: not compared` : "—"), "num");
    cell(tr, r.revenue ? `${ratio(r.roas.low)} – ${ratio(r.roas.high)}` : "—", "num");
  });
  empty("empty-spend", rows.length ? "" : "No spend given for this period.");
}

/// Sends a spend file in pieces the endpoint takes (a request body is at most 64 KiB), each with
/// the header; a refusal names its row in the whole file.
async function uploadSpend(event) {
  event.preventDefault();
  const file = $("spend-file").files[0], status = $("spend-status");
  status.hidden = false;
  if (!file) { text(status, "Choose a CSV file first."); return; }
  const lines = (await file.text()).split(/\r?\n/);
  const header = lines.shift();
  let sent = 0, piece = [], pieceStart = 1, size = 0;
  const send = async () => {
    if (!piece.length) return;
    const response = await fetch("/api/spend" + (state.advertiser ? "?advertiser=" + encodeURIComponent(state.advertiser) : ""),
      { method: "POST", headers: { Authorization: "Bearer " + token(), "Content-Type": "text/csv" }, body: [header, ...piece].join("\r\n") + "\r\n" });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      // "row 3: spend" in this piece is row pieceStart + 2 of the file, in the field and the detail.
      const renumber = (text) => String(text || "").replace(/^row (\d+)/, (_, n) => `row ${pieceStart + Number(n) - 1}`);
      const field = renumber(answer.field), detail = renumber(answer.detail || response.statusText);
      throw new Error((field && !detail.startsWith(field) ? field + ": " : "") + detail +
        (sent ? ` (the ${counted(sent, "row")} before it were kept: send the file again once it is fixed)` : ""));
    }
    sent += answer.rows;
    pieceStart += piece.length;
    piece = []; size = 0;
  };
  try {
    for (const line of lines) {
      if (!line) continue;
      if (size + line.length > 60000) await send();
      piece.push(line);
      size += line.length + 2;
    }
    await send();
    text(status, `${counted(sent, "row")} of spend kept.`);
    loadView();
  } catch (error) {
    text(status, "Refused: " + error.message);
  }
}

function renderAppleAds(a, postbacks) {
  const count = (name) => a.by_status[name] || 0;
  text($("apple-ads-tokens"), a.tokens);
  text($("apple-ads-attributed"), count("attributed"));
  text($("apple-ads-not-attributed"), count("not_attributed"));
  text($("apple-ads-pending"), count("pending"));
  text($("apple-ads-failed"), count("invalid_token") + count("not_found") + count("expired") + count("refused"));
  empty("empty-apple-ads", a.tokens ? "" :
    "No Apple Ads tokens in this period. The app posts the token from <code>AAAttribution.attributionToken()</code> to " +
    "<code>/apple-ads/attribution</code> on its site (see the README).");
  const label = (name, id, what) => id === null ? "—" : named(name || "Not registered", what + " " + id);
  fill("apple-ads-installs", a.installs, (tr, r) => {
    cell(tr, label(r.campaign_name, r.campaign_id, "campaign"));
    cell(tr, label(r.ad_group_name, r.ad_group_id, "ad group"));
    cell(tr, label(r.keyword_name, r.keyword_id, "keyword"));
    cell(tr, r.downloads, "num"); cell(tr, r.redownloads, "num"); cell(tr, r.pre_orders, "num");
  });
  // Placement × claim from the attributions, beside Apple Ads' own postbacks by placement.
  const rows = new Map();
  const row = (name, label) => rows.get(name) || rows.set(name, { label, click: 0, view: 0, unstated: 0, postbacks: 0 }).get(name);
  for (const p of a.placements || []) row(p.placement, p.label)[p.claim] += p.installs;
  for (const p of (postbacks && postbacks.placements) || []) row(p.placement, p.label).postbacks += p.postbacks;
  fill("apple-ads-placements", [...rows.values()], (tr, r) => {
    cell(tr, r.label); cell(tr, r.click, "num"); cell(tr, r.view, "num"); cell(tr, r.unstated, "num"); cell(tr, r.postbacks, "num");
  });
  fill("apple-ads-countries", a.countries || [], (tr, r) => { cell(tr, country(r.country)); cell(tr, r.installs, "num"); });
  const uncheckable = (postbacks && postbacks.unverifiable) || 0;
  $("apple-ads-unverifiable").hidden = !uncheckable;
  $("apple-ads-unverifiable").textContent = uncheckable
    ? `${uncheckable} of Apple Ads' postbacks are SKAdNetwork 1.0 or 2.0 copies, signed with a P-192 key no library here can check: they are kept and counted, marked unverifiable.` : "";
  $("apple-ads-tests").hidden = !a.test_payloads;
  $("apple-ads-tests").textContent = a.test_payloads
    ? `${a.test_payloads} token${a.test_payloads === 1 ? " was" : "s were"} answered with Apple's Developer Mode test payload (campaign 1234567890): the app's setup works; they are left out of every count here.` : "";
  fill("apple-ads-statuses", entries(a.by_status).filter((e) => e.count), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
}

/// Apple Ads' own postbacks (ad network com.apple.ads) by the placement their campaign id names,
/// and how many of them no key could check, from the Apps view's answer.
function appleAdsPostbacks(apps) {
  // Apple Ads' campaign id is the placement (docs/APPLE.md §2), whatever name a registration gives it.
  const codes = { "10": ["search_results", "Search Results"], "20": ["search_tab", "Search Tab"], "30": ["today_tab", "Today Tab"], "40": ["product_pages", "Product Pages"] };
  const byPlacement = new Map();
  for (const c of apps.conversions || []) {
    if (c.ad_network !== "com.apple.ads") continue;
    const [name, label] = codes[c.campaign] || ["other", "Another placement"];
    const p = byPlacement.get(name) || byPlacement.set(name, { placement: name, label, postbacks: 0 }).get(name);
    p.postbacks += c.installs + c.redownloads;
  }
  const apart = (apps.unverifiable_by_ad_network || []).find((u) => u.ad_network === "com.apple.ads");
  return { placements: [...byPlacement.values()], unverifiable: apart ? apart.postbacks : 0 };
}

const when = (time) => time ? time.slice(0, 16).replace("T", " ") + " UTC" : "never";

/// The warning on every view: silence names the key or the front to check; a relay destination
/// failing for an hour, or dead, says what is wrong and what to do.
function renderHealth(a, relays) {
  const warnings = [...a.sites, ...a.apps].filter((r) => r.silent).map((r) => r.warning)
    .concat((relays ? relays.destinations : []).filter((d) => d.warning).map((d) => d.warning));
  $("health").hidden = warnings.length === 0;
  $("health-list").replaceChildren(...warnings.map((warning) => {
    const item = document.createElement("li");
    item.textContent = warning;
    return item;
  }));
  text($("health-count"), warnings.length === 1 ? "one thing needs a look" : `${warnings.length} things need a look`);
  // Read and closed, the box stays one line on every view until what it says changes.
  const said = warnings.map((w) => w.replace(/\d+/g, "#")).join("\n");
  $("health-details").open = localStorage.getItem(HEALTH_READ) !== said;
  $("health-details").dataset.said = said;
}

const HEALTH_READ = "attribution-endpoint-health-read";

/// The table in Tools: when each site and app last received something.
function renderArrivals(a) {
  const rows = a.sites.map((s) => ({ label: named(s.site, "site" + (s.silent ? " · silent" : "")), last: s.last_received, silent: s.silent }))
    .concat(a.apps.map((p) => ({ label: named(p.name, `app ${p.app_id} at ${p.site}` + (p.silent ? " · silent" : "")), last: p.last_received, silent: p.silent })));
  fill("arrivals", rows, (tr, r) => {
    if (r.silent) tr.className = "silent";
    cell(tr, r.label);
    for (const path of ["pcm_reports", "skadnetwork", "adattributionkit", "apple_ads_tokens"]) {
      cell(tr, path in r.last ? when(r.last[path]) : "—");
    }
  });
}

const ago = (seconds) => seconds < 1 ? "—" : seconds < 120 ? `${Math.round(seconds)} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min`
  : seconds < 172800 ? `${Math.round(seconds / 3600)} h` : `${Math.round(seconds / 86400)} days`;

function renderRelays(relays) {
  const all = relays ? relays.destinations : [];
  empty("relays-empty", relays ? (all.length ? "" : "No relay destination. Register one with <code>POST /api/relays</code> or in the config file's <code>relays</code> (see the README).")
    : "The relays could not be read with this token.");
  $("relays").hidden = all.length === 0;
  fill("relays", all, (tr, r) => {
    const d = r.destination;
    if (r.warning) tr.className = "silent";
    cell(tr, named(d.name, d.url));
    const whose = d.app_id !== undefined && d.app_id !== null ? `app ${d.app_id}` : `site ${d.site}`;
    cell(tr, named(d.protocols.join(", "), whose + (d.copies === "all" ? " · quarantined too" : "") + (d.development ? " · development" : "")));
    const replay = r.replay ? ` · replaying ${r.replay.since.slice(0, 10)} to ${r.replay.until.slice(0, 10)}, ${Math.round(r.replay.progress * 100)} %` : "";
    cell(tr, r.state.replace("_", " ") + replay);
    cell(tr, r.delivered, "num"); cell(tr, r.refused, "num");
    cell(tr, ago(r.lag_seconds));
    cell(tr, r.last_error ? named(r.last_error + (r.last_status ? ` (HTTP ${r.last_status})` : ""), when(r.last_error_at)) : "—");
  });
}

async function loadTokenKeys() {
  const k = await (await api("/api/token-keys?" + params([["advertiser", "advertiser"]], false))).json();
  fill("token-keys", k.keys, (tr, key) => {
    cell(tr, key.site); cell(tr, key.key_id.slice(0, 12) + "…"); cell(tr, key.state);
    cell(tr, when(key.created_at)); cell(tr, when(key.serves_from));
  });
  const next = Object.entries(k.next_keys).filter(([, time]) => time).map(([site, time]) => `${site}: ${when(time)}`);
  text($("token-key-rotation"), (k.rotation_days ? `Each key is replaced ${k.rotation_days} days after it began to be served.` :
    "Keys are replaced only by hand (POST /api/token-keys, or --token-key-rotation-days).") +
    (next.length ? " Next key served: " + next.join("; ") + "." : ""));
}

/// The period the endpoint chose (the 30 days up to its today) when the address names none.
function adoptPeriod(answer) {
  if (!state.from) state.from = answer.from || answer.period.from;
  if (!state.to) state.to = answer.to || answer.period.to;
  $("from").value = state.from;
  $("to").value = state.to;
}

function describeStatus(answer) {
  const whose = answer.scope === "cluster" ? " Every node's numbers, counted in ClickHouse (refusals are each node's own)."
    : answer.cluster_available ? " This node's own numbers." : "";
  $("scope-choice").hidden = !answer.cluster_available;
  // A node that stopped exporting (down, or cut off from ClickHouse) is named: its numbers since
  // are missing from every total here, not zero.
  const stale = (answer.nodes || []).filter((n) => n.stale);
  const nodes = answer.nodes ? ` From ${counted(answer.nodes.length, "node")}.` + stale.map((n) =>
    ` Node ${n.node} has not exported for ${ago(n.seconds_since)} (since ${n.last_export.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC")}): is it down? What it received since is missing here.`).join("") : "";
  return `Showing ${state.from} to ${state.to}.` + whose + nodes +
    // Retention removed the oldest log segments: their records are counted here still, but the
    // record-by-record exports begin where the log now does.
    (answer.records_kept_from ? ` Records before ${answer.records_kept_from} were removed by retention: they are counted here, but the CSV exports start on that day.` : "");
}

/// Each load's number: an answer that comes after a newer load began is dropped, so a slow answer
/// for one advertiser never paints over the next's.
let loads = 0;

async function loadView() {
  // The forms are the admin token's: a viewer's link to them opens the overview.
  if (state.view === "register" && whoami && whoami.role !== "admin") state.view = "overview";
  const view = state.view, mine = ++loads;
  const current = () => mine === loads;
  // No view shows until its own numbers are painted: never another advertiser's, or another token's.
  hideViews();
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  $("status").textContent = "Loading…";
  const arrivals = api("/api/arrivals?" + params([["advertiser", "advertiser"]], false)).then((r) => r.json()).catch(() => null);
  const relays = api("/api/relays").then((r) => r.json()).catch(() => null);
  let status = "";
  if (view === "overview") {
    const o = await (await api("/api/overview?" + params(period))).json();
    if (!current()) return;
    adoptPeriod(o);
    renderOverview(o);
    status = describeStatus(o) + (o.advertiser ? ` ${o.advertiser.name}'s sites.` : " Every site.");
  } else if (view === "web") {
    const s = await (await api("/api/summary?" + params([...period, ["site", "site"], ["role", "role"]]))).json();
    if (!current()) return;
    adoptPeriod(s);
    renderWeb(s);
    status = describeStatus(s) + (s.site ? ` Site ${s.site}.` : "") + (s.role ? ` ${s.role} copies only.` : "");
  } else if (view === "apps") {
    const a = await (await api("/api/apps/summary?" + params([...period, ["site", "app_site"]]))).json();
    if (!current()) return;
    adoptPeriod(a);
    renderApps(a);
    status = describeStatus(a);
  } else if (view === "apple-ads") {
    // Apple Ads' postbacks are a column beside the attributions: without them (the Apps view
    // still being rebuilt) the view shows the rest.
    const apps = api("/api/apps/summary?" + params(period)).then((r) => r.json()).then(appleAdsPostbacks).catch(() => null);
    const a = await (await api("/api/apple-ads/summary?" + params(period))).json();
    const postbacks = await apps;
    if (!current()) return;
    adoptPeriod(a);
    renderAppleAds(a, postbacks);
    status = describeStatus(a);
  } else if (view === "register" && whoami.role === "admin") {
    await loadRegister();
    if (!current()) return;
    // The Info.plist check on the same screen as the app's registration: one form, shown where it is read.
    $("apps-register-card").insertAdjacentElement("afterend", $("plist"));
    status = "Register: campaigns, conversions and their pixels, apps and their schemas, advertisers, viewer tokens and names.";
  } else {
    await Promise.all([loadTokenKeys(), loadSetup()]);
    if (!current()) return;
    $("plist-home").insertAdjacentElement("afterend", $("plist"));
    status = "Tools: did the setup work, what arrives where, Info.plist checks, relays and token keys.";
  }
  const [arrived, relayed] = [await arrivals, await relays];
  if (!current()) return;
  if (arrived) {
    renderHealth(arrived, relayed);
    renderArrivals(arrived);
  }
  renderRelays(relayed);
  writeFragment(false);
  $("view-" + view).hidden = false;
  markWideTables();
  $("status").textContent = status;
}

/// Marks the tables wider than their box: their first column (and a crosstab's total) stays in
/// view and a line under them says that more columns are to the side.
function markWideTables() {
  for (const box of document.querySelectorAll(".view:not([hidden]) .scroll")) {
    const wide = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("overflowing", wide);
    let hint = box.nextElementSibling;
    if (!hint || !hint.classList.contains("more-columns")) {
      hint = document.createElement("p");
      hint.className = "more-columns";
      hint.textContent = "More columns to the side →";
      box.insertAdjacentElement("afterend", hint);
    }
  }
}
window.addEventListener("resize", () => setTimeout(markWideTables, 200));

function hideViews() {
  for (const node of document.querySelectorAll(".view")) node.hidden = true;
}

async function load() {
  if (!token()) return showLogin();
  try {
    if (!whoami) await loadRole();
    $("login").hidden = true;
    $("summary").hidden = false;
    $("nav").hidden = false;
    stateToControls();
    await loadView();
  } catch (error) {
    // Before the role is known the page has nothing to show the message on but the login form.
    if (error.login || !whoami) { whoami = null; return showLogin(error.message); }
    hideViews();
    $("health").hidden = true;
    $("status").textContent = error.message;
    if (error.retry) setTimeout(load, 2000);
  }
}

async function download(path, name) {
  try {
    const blob = await (await api(path)).blob();
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  } catch (error) {
    if (error.login) return showLogin(error.message);
    $("status").textContent = error.message;
  }
}

/** "1 row", "2 rows": a count with its noun in the number it takes (`plural` when not noun + "s"). */
function counted(n, noun, plural) {
  return `${n} ${n === 1 ? noun : plural || noun + "s"}`;
}

function describeSetting(setting, unit) {
  const value = setting.value === undefined ? "none" : setting.value + " " + (setting.value === 1 ? unit.slice(0, -1) : unit);
  return named(value, setting.source.replace("_", " "));
}

function renderPlist(r) {
  $("plist-result").hidden = false;
  text($("plist-verdict"), `${r.format.toUpperCase()} property list: ${counted(r.errors, "error")}, ${counted(r.warnings, "warning")}.`);
  $("plist-verdict").className = r.errors ? "error" : "";
  fill("plist-findings", r.findings, (tr, f) => {
    cell(tr, f.severity, f.severity);
    cell(tr, f.key);
    cell(tr, named(f.message, f.rule + (f.hint ? " · hint: " + f.hint : "")));
  });
  fill("plist-windows", r.windows, (tr, w) => {
    cell(tr, w.scope === "global" ? named("global", "every other ad network") : w.scope);
    cell(tr, describeSetting(w.click, "days"), "num");
    cell(tr, describeSetting(w.view, "days"), "num");
    cell(tr, w.ignore_interaction_type || "–");
  });
  const settings = [
    ["Install cooldown", describeSetting(r.cooldowns.install, "hours")],
    ["Re-engagement cooldown", describeSetting(r.cooldowns.re_engagement, "hours")],
    ...r.endpoints.map((e) => [e.key, named(e.site || e.url || "–", e.served === undefined ? "not checked" : e.served ? "served here" : "NOT served here")]),
    ["Re-engagement copies", r.reengagement_postback_copies ? "yes" : "no"],
    ["SKAdNetworkItems", String(r.skadnetwork_ids.length)],
  ];
  fill("plist-settings", settings, (tr, [name, value]) => { cell(tr, name); cell(tr, value); });
}

// MARK: - Did my setup work?

let setupApps = [];

/// The setup of every app the token may read; the chosen one shown. Asked again every 5 s while
/// the Tools view is open, so that a development postback shows up without a click.
async function loadSetup() {
  try {
    setupApps = (await (await api("/api/apps/setup")).json()).apps || [];
  } catch (error) {
    if (error.login) throw error;
    setupApps = [];
  }
  const select = $("setup-app");
  const chosen = select.value;
  select.replaceChildren(...setupApps.map((a) => {
    const option = document.createElement("option");
    option.value = String(a.app_id);
    option.textContent = `${a.name} (${a.app_id})`;
    return option;
  }));
  if (setupApps.some((a) => String(a.app_id) === chosen)) select.value = chosen;
  renderSetup();
}

/// The chosen app's setup asked again: one app's, not every app's, every 5 s.
async function refreshSetup() {
  const chosen = $("setup-app").value;
  if (!chosen) return loadSetup();
  const fresh = (await (await api("/api/apps/setup?app_id=" + encodeURIComponent(chosen))).json()).apps || [];
  setupApps = setupApps.map((a) => fresh.find((f) => f.app_id === a.app_id) || a);
  if ($("setup-app").value === chosen) renderSetup();
}

function renderSetup() {
  const app = setupApps.find((a) => String(a.app_id) === $("setup-app").value);
  empty("setup-empty", app ? "" : "No app is registered yet. Register one (POST /api/apps, see the README) and its setup shows here.");
  $("setup-body").hidden = !app;
  for (const id of ["setup-make-path", "setup-samples"]) $(id).disabled = !app;
  if (!app) return;
  const steps = $("setup-steps");
  steps.replaceChildren(...app.next_steps.map((step) => { const li = document.createElement("li"); li.textContent = step; return li; }));
  const path = app.development_path;
  fill("setup-facts", [
    ["Info.plist", `NSAdvertisingAttributionReportEndpoint and AttributionCopyEndpoint: ${app.info_plist.NSAdvertisingAttributionReportEndpoint} (check the file below)`],
    ["Last SKAdNetwork copy", when(app.production.skadnetwork.last_accepted)],
    ["Last AdAttributionKit copy", when(app.production.adattributionkit.last_accepted)],
    ["Development URL", path.enabled ? (path.url || "made " + when(path.created_at) + " (the admin token sees it)") : "none yet"],
    ["Apple Ads test answer", when(app.apple_ads_test_answer.last_at)],
  ], (tr, [what, value]) => { cell(tr, what); cell(tr, value); });
  const last = app.development_postbacks.last;
  const inspection = last && last.inspection;
  text($("setup-last"), last
    ? `${when(last.received_at)}, on the ${last.path} path (${last.protocol}): ${inspection ? inspection.signature.explanation : "no longer readable"}.`
    : "None yet.");
  $("setup-last").className = inspection && inspection.signature.outcome === "invalid" ? "error" : "";
  fill("setup-fields", inspection ? inspectionRows(inspection) : [], (tr, [name, value]) => { cell(tr, name); cell(tr, value); });
}

/// What an inspection says, as rows: the decoded parts first, then every field.
function inspectionRows(r) {
  const rows = [["Protocol", r.protocol + (r.version ? " " + r.version : "")], ["On the production paths", r.verdict + (r.reasons.length ? ": " + r.reasons.join(", ") : "")]];
  if (r.app) rows.push(["App", `${r.app.name || "not registered"} (${r.app.app_id})`]);
  if (r.ad_network) rows.push(["Ad network", `${r.ad_network.name || r.ad_network.id}, campaign ${r.ad_network.campaign_name || r.ad_network.campaign || "—"}`]);
  if (r.conversion_value) rows.push(["Conversion value", `${r.conversion_value.value} (${r.conversion_value.tier})${r.conversion_value.meaning ? ": " + r.conversion_value.meaning : ""}`]);
  rows.push(["In the production log", r.seen.stored ? `yes, postback ${r.seen.id}` : r.seen.other_content_ids.length ? `another postback under its key: ${r.seen.other_content_ids.join(", ")}` : "no"]);
  for (const [name, value] of Object.entries(r.fields)) rows.push([name, typeof value === "string" ? value : JSON.stringify(value)]);
  return rows;
}

async function setupAction(path, done) {
  const app = $("setup-app").value;
  if (!app) return;
  try {
    const answer = await (await api(`${path}?app_id=${encodeURIComponent(app)}`, "")).json();
    $("status").textContent = done(answer);
  } catch (error) {
    if (error.login) return showLogin(error.message);
    $("status").textContent = error.message;
  }
  await loadSetup();
}

async function verifyPostback(event) {
  event.preventDefault();
  $("verify-result").hidden = false;
  try {
    const r = await (await api("/api/postbacks/verify", $("verify-text").value)).json();
    text($("verify-verdict"), `${r.signature.outcome}: ${r.signature.explanation}.`);
    $("verify-verdict").className = r.signature.outcome === "invalid" ? "error" : "";
    fill("verify-fields", inspectionRows(r), (tr, [name, value]) => { cell(tr, name); cell(tr, value); });
  } catch (error) {
    if (error.login) return showLogin(error.message);
    text($("verify-verdict"), error.message);
    $("verify-verdict").className = "error";
    fill("verify-fields", [], () => {});
  }
}

async function checkPlist(event) {
  event.preventDefault();
  const file = $("plist-file").files[0];
  const body = file ? await file.arrayBuffer() : $("plist-text").value;
  try {
    renderPlist(await (await api("/api/plist-check", body)).json());
  } catch (error) {
    if (error.login) return showLogin(error.message);
    $("plist-result").hidden = false;
    text($("plist-verdict"), error.message);
    $("plist-verdict").className = "error";
    for (const id of ["plist-findings", "plist-windows", "plist-settings"]) fill(id, [], () => {});
  }
}

/// A control changed: the state follows, the address follows the state, the view is read again.
function update(event) {
  if (event) event.preventDefault();
  controlsToState();
  // Another advertiser's sites are another list: the site chosen before is not in it.
  if (event && event.target && event.target.id === "advertiser") state.site = state.app_site = "";
  writeFragment(false);
  load();
}

document.addEventListener("DOMContentLoaded", () => {
  $("health-details").addEventListener("toggle", (event) => {
    if (event.target.open) localStorage.removeItem(HEALTH_READ); else localStorage.setItem(HEALTH_READ, event.target.dataset.said || "");
  });
  readFragment();
  $("plist-form").addEventListener("submit", checkPlist);
  $("verify-form").addEventListener("submit", verifyPostback);
  $("setup-app").addEventListener("change", renderSetup);
  $("setup-make-path").addEventListener("click", () => {
    const app = setupApps.find((a) => String(a.app_id) === $("setup-app").value);
    // A new URL ends the old one, which a test device may still be configured with.
    if (app && app.development_path.enabled && !confirm("Make a new development URL? The current one stops taking postbacks at once.")) return;
    setupAction("/api/apps/development-path", (a) => `New development URL for app ${a.app_id}: ${a.url} (the old one no longer takes postbacks).`);
  });
  $("setup-samples").addEventListener("click", () => setupAction("/api/apps/development-path/samples",
    (a) => `Sent ${a.sent.length} of Apple's sample postbacks through app ${a.app_id}'s development URL.`));
  // While someone waits for a postback: the setup is asked again every 5 s, only while it is shown.
  setInterval(() => { if (state.view === "tools" && !document.hidden && token()) refreshSetup().catch(() => {}); }, 5000);
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    whoami = null;
    load();
  });
  $("filters").addEventListener("submit", update);
  $("web-filters").addEventListener("submit", update);
  for (const id of ["advertiser", "site", "role", "app-site", "scope"]) $(id).addEventListener("change", update);
  for (const link of document.querySelectorAll("#nav a")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      controlsToState();
      state.view = link.dataset.view;
      writeFragment(true);
      load();
    });
  }
  // Back and Forward, and an address edited or pasted into this tab.
  window.addEventListener("popstate", () => { readFragment(); load(); });
  $("copy-link").addEventListener("click", async () => {
    // The link is to what the page shows: a period typed but not applied is applied first.
    controlsToState();
    writeFragment(false);
    await load();
    try {
      await navigator.clipboard.writeText(location.href);
      $("status").textContent = "Link copied: it opens this view, advertiser and period. Whoever opens it needs a token of their own.";
    } catch (_) {
      $("status").textContent = "Copy this address: " + location.href;
    }
  });
  const exportPeriod = () => params(period, false).toString();
  $("csv-summary").addEventListener("click", () => download("/api/summary.csv?" + params([...period, ["site", "site"], ["role", "role"]]), "summary.csv"));
  $("csv-crosstab").addEventListener("click", () => download("/api/summary/crosstab.csv?" + params([...period, ["site", "site"], ["role", "role"]]), "crosstab.csv"));
  $("csv-reports").addEventListener("click", () => download("/api/reports.csv?" + exportPeriod(), "reports.csv"));
  $("csv-postbacks").addEventListener("click", () => download("/api/postbacks.csv?" + exportPeriod(), "postbacks.csv"));
  $("csv-apple-ads").addEventListener("click", () => download("/api/apple-ads.csv?" + exportPeriod(), "apple-ads.csv"));
  $("spend-form").addEventListener("submit", uploadSpend);
  $("csv-apps-crosstab").addEventListener("click", () => download("/api/apps/summary/crosstab.csv?" + params([...period, ["site", "app_site"]]), "apps-crosstab.csv"));
  $("logout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    whoami = null;
    hideViews();
    $("health").hidden = true;
    showLogin();
  });
  load();
});
