// The summary page: asks once for the admin token (kept in sessionStorage for this tab), reads
// /api/summary and /api/apps/summary and draws them. No framework, no build step, nothing loaded from elsewhere.
"use strict";

const TOKEN_KEY = "attribution-endpoint-token";
const $ = (id) => document.getElementById(id);

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function showLogin(message) {
  $("summary").hidden = true;
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
    throw Object.assign(new Error("That token was not accepted. Check data/admin-token (or --token) and try again."), { login: true });
  }
  if (!response.ok) {
    let problem = {};
    try { problem = await response.json(); } catch (_) { /* not JSON */ }
    const error = new Error("The endpoint answered " + response.status + ": " + (problem.detail || response.statusText));
    // Right after a restart the summary (or the Apps view) is rebuilt from the log: try again shortly.
    error.retry = problem.rule === "summary_rebuilding" || problem.rule === "postbacks_rebuilding";
    throw error;
  }
  return response;
}

// The cluster's numbers (counted in ClickHouse) when chosen; a node that exports nowhere has only its own.
function scope(params) {
  if (!$("scope-choice").hidden && $("scope").value === "cluster") params.set("scope", "cluster");
  return params;
}

function query() {
  const params = new URLSearchParams();
  for (const name of ["site", "from", "to", "role"]) {
    const value = $(name).value;
    if (value) params.set(name, value);
  }
  return scope(params).toString();
}

function text(node, value) { node.textContent = String(value); }

function cell(row, content, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  if (content instanceof Node) td.appendChild(content); else td.textContent = content;
  row.appendChild(td);
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

function drawDays(days) {
  const width = 800, height = 200, left = 36, bottom = 22, top = 8;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Accepted reports per day" });
  const max = Math.max(1, ...days.map((d) => Math.max(d.source, d.destination)));
  const plotH = height - top - bottom, slot = (width - left) / Math.max(1, days.length), bar = Math.max(1, slot / 2 - 1);
  svg("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, class: "axis" }, root);
  for (const tick of [0, max]) {
    const t = svg("text", { x: left - 4, y: height - bottom - (tick / max) * plotH + 3, "text-anchor": "end" }, root);
    t.textContent = tick;
  }
  days.forEach((d, i) => {
    const x = left + i * slot;
    for (const [role, offset] of [["source", 0], ["destination", bar]]) {
      const h = (d[role] / max) * plotH;
      const rect = svg("rect", { x: x + offset, y: height - bottom - h, width: bar, height: h, class: "bar-" + role }, root);
      const title = svg("title", {}, rect);
      title.textContent = `${d.day}: ${d[role]} ${role} copies`;
    }
    if (days.length <= 14 || i % Math.ceil(days.length / 7) === 0) {
      const label = svg("text", { x: x + bar, y: height - 6, "text-anchor": "middle" }, root);
      label.textContent = d.day.slice(5);
    }
  });
  $("chart").replaceChildren(root);
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
    const label = svg("text", { x: i * slot + slot / 2, y: height - 6, "text-anchor": "middle" }, root);
    label.textContent = `${name} (${b.count})`;
  });
  $("delays").replaceChildren(root);
}

function render(s) {
  const select = $("site"), chosen = select.value;
  select.replaceChildren(new Option("All sites", ""));
  for (const site of s.sites) select.appendChild(new Option(site, site));
  select.value = s.sites.includes(chosen) ? chosen : "";

  text($("accepted-source"), s.accepted.source);
  text($("accepted-destination"), s.accepted.destination);
  text($("quarantined-total"), s.quarantined.source + s.quarantined.destination);
  text($("late-total"), s.late.source + s.late.destination);
  drawDays(s.per_day);
  const anything = s.accepted.source + s.accepted.destination + s.quarantined.source + s.quarantined.destination;
  empty("empty-reports", anything ? "" :
    "No reports in this period yet. Browsers send them 24 to 48 hours after a conversion. Advertisers: register a conversion with " +
    "<code>POST /api/conversions</code> and embed the pixel <code>&lt;img src=\"https://your-site/conversion-pixel?conversion=purchase&amp;source=https://publisher\"&gt;</code>; " +
    "publishers: put <code>attributionsourceid</code> on ad links and register campaigns with <code>POST /api/campaigns</code>.");

  fill("campaigns", s.by_campaign, (tr, r) => {
    cell(tr, named(r.campaign || "No campaign registered", `${r.source_site} · source id ${r.source_id}`));
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

  fill("quarantine", s.quarantined_by_reason, (tr, r) => { cell(tr, r.reason); cell(tr, r.source, "num"); cell(tr, r.destination, "num"); });
  fill("rejections", s.rejected_by_rule, (tr, r) => { cell(tr, r.rule); cell(tr, r.count, "num"); });
  drawDelays(s.delay_hours);
  const withTokens = s.tokens.with_tokens.source + s.tokens.with_tokens.destination;
  const verified = s.tokens.verified.source + s.tokens.verified.destination;
  const total = s.accepted.source + s.accepted.destination + s.quarantined.source + s.quarantined.destination;
  text($("tokens"), `Reports carrying fraud-prevention tokens: ${withTokens} of ${total}` +
    (total ? ` (${percent(withTokens, total)})` : "") + `; with a token that verified: ${verified}` +
    (withTokens ? ` (${percent(verified, withTokens)} of those)` : "") +
    ". Forged and replayed tokens are quarantined (…_token_invalid, …_token_replayed above); a token from a site whose key this endpoint does not know is kept as …_token_unverifiable.");
}

const percent = (part, whole) => `${Math.round((100 * part) / whole)} %`;

/// "12 (40 %)": accepted reports of the row whose token verified, and their share of the row.
function verifiedShare(r) {
  const n = r.verified_tokens.source + r.verified_tokens.destination, all = r.source + r.destination;
  return all ? `${n} (${percent(n, all)})` : "0";
}

const sum = (rows, key) => rows.reduce((n, r) => n + r[key], 0);
const entries = (object) => Object.entries(object).map(([name, count]) => ({ name, count }));

function renderApps(a) {
  const select = $("app-site"), chosen = select.value;
  select.replaceChildren(new Option("All app sites", ""));
  for (const site of a.sites) select.appendChild(new Option(site, site));
  select.value = a.sites.includes(chosen) ? chosen : "";
  text($("apps-installs"), sum(a.conversions, "installs"));
  text($("apps-redownloads"), sum(a.conversions, "redownloads"));
  text($("apps-reengagements"), sum(a.conversions, "re_engagements"));
  text($("apps-quarantined"), a.postbacks.quarantined);
  text($("apps-retries"), a.postbacks.duplicates_received);
  empty("empty-apps", a.postbacks.stored ? "" :
    "No postback copies in this period. App developers: name this endpoint's site in the app's Info.plist " +
    "(<code>NSAdvertisingAttributionReportEndpoint</code> for SKAdNetwork, <code>AttributionCopyEndpoint</code> for AdAttributionKit) " +
    "and register the app's conversion values with <code>POST /api/apps</code>.");
  fill("apps-campaigns", a.conversions, (tr, r) => {
    cell(tr, named(r.ad_network_name || r.ad_network, r.ad_network_name ? r.ad_network : "not registered"));
    cell(tr, named(r.campaign_name || "No campaign registered", r.campaign));
    cell(tr, named(r.app_name || "App " + r.app_id, r.app_name ? "app " + r.app_id : "not registered"));
    cell(tr, r.installs, "num"); cell(tr, r.redownloads, "num"); cell(tr, r.re_engagements, "num");
  });
  fill("apps-fine", a.fine_values, (tr, r) => { cell(tr, r.value); cell(tr, r.meaning || "—"); cell(tr, r.count, "num"); });
  fill("apps-coarse", a.coarse_values, (tr, r) => { cell(tr, r.value); cell(tr, r.meaning || "—"); cell(tr, r.count, "num"); });
  fill("apps-windows", a.postback_windows, (tr, r) => { cell(tr, ["first (days 0–2)", "second (days 3–7)", "third (days 8–35)"][r.index] || r.index); cell(tr, r.count, "num"); });
  const tiers = entries(a.privacy_tiers.source_identifier_digits).map((e) => ({ name: e.name + "-digit source identifier", count: e.count }))
    .concat(entries(a.privacy_tiers.conversion_value).map((e) => ({ name: { fine: "fine value", coarse: "coarse value", none: "no value" }[e.name] || e.name, count: e.count })));
  // Shares of the accepted postbacks: how many got through each privacy tier's filter.
  const share = (n) => a.postbacks.accepted ? ` (${Math.round((100 * n) / a.postbacks.accepted)} %)` : "";
  fill("apps-tiers", tiers, (tr, r) => { cell(tr, r.name); cell(tr, r.count + share(r.count), "num"); });
  fill("apps-fidelity", entries(a.fidelity), (tr, r) => { cell(tr, r.name.replaceAll("_", " ")); cell(tr, r.count, "num"); });
  fill("apps-signatures", entries(a.signatures), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
  fill("apps-reasons", entries(a.quarantine_reasons), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
}

function appsQuery() {
  const params = new URLSearchParams();
  for (const [name, id] of [["site", "app-site"], ["from", "from"], ["to", "to"]]) {
    const value = $(id).value;
    if (value) params.set(name, value);
  }
  return scope(params).toString();
}

function period() {
  const from = $("from").value, to = $("to").value;
  const params = new URLSearchParams();
  if (from) params.set("since", from + "T00:00:00Z");
  if (to) params.set("until", new Date(Date.parse(to + "T00:00:00Z") + 86400000).toISOString());
  return params.toString();
}

function renderAppleAds(a) {
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
    cell(tr, r.downloads, "num"); cell(tr, r.redownloads, "num");
  });
  fill("apple-ads-statuses", entries(a.by_status).filter((e) => e.count), (tr, r) => { cell(tr, r.name); cell(tr, r.count, "num"); });
}

async function loadTokenKeys() {
  const k = await (await api("/api/token-keys")).json();
  const day = (time) => time.slice(0, 16).replace("T", " ") + " UTC";
  fill("token-keys", k.keys, (tr, key) => {
    cell(tr, key.site); cell(tr, key.key_id.slice(0, 12) + "…"); cell(tr, key.state);
    cell(tr, day(key.created_at)); cell(tr, day(key.serves_from));
  });
  const next = Object.entries(k.next_keys).filter(([, time]) => time).map(([site, time]) => `${site}: ${day(time)}`);
  text($("token-key-rotation"), (k.rotation_days ? `Each key is replaced ${k.rotation_days} days after it began to be served.` :
    "Keys are replaced only by hand (POST /api/token-keys, or --token-key-rotation-days).") +
    (next.length ? " Next key served: " + next.join("; ") + "." : ""));
}

async function loadApps() {
  try {
    const apps = await (await api("/api/apps/summary?" + appsQuery())).json();
    renderApps(apps);
    $("apps-retention").hidden = !apps.records_kept_from;
    $("apps-retention").textContent = apps.records_kept_from
      ? `Postbacks and Apple Ads tokens received before ${apps.records_kept_from} were removed by retention: they are counted here, but /api/postbacks and /api/apple-ads start on that day.` : "";
    renderAppleAds(await (await api("/api/apple-ads/summary?" + appsQuery())).json());
  } catch (error) {
    if (error.login) return showLogin(error.message);
    $("status").textContent = error.message;
  }
}

async function load() {
  if (!token()) return showLogin();
  $("status").textContent = "Loading…";
  try {
    const summary = await (await api("/api/summary?" + query())).json();
    $("login").hidden = true;
    $("summary").hidden = false;
    // The period defaults to the 30 days up to the endpoint's today (its clock may be a test's).
    $("from").value = summary.from;
    $("to").value = summary.to;
    $("scope-choice").hidden = !summary.cluster_available;
    render(summary);
    const copies = summary.role ? ` (${summary.role} copies only)` : "";
    const whose = summary.scope === "cluster" ? " Every node's numbers, counted in ClickHouse (refusals are each node's own)." : " This node's own numbers.";
    $("status").textContent = `Showing ${summary.from} to ${summary.to}` + (summary.site ? ` for ${summary.site}` : " for all sites") + copies + "." +
      (summary.cluster_available ? whose : "") +
      // Retention removed the oldest log segments: their reports are counted here still, but the
      // record-by-record exports begin where the log now does.
      (summary.records_kept_from ? ` Records before ${summary.records_kept_from} were removed by retention: they are counted here, but the CSV exports start on that day.` : "");
    await loadApps();
    await loadTokenKeys();
  } catch (error) {
    if (error.login) return showLogin(error.message);
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

function describeSetting(setting, unit) {
  const value = setting.value === undefined ? "none" : setting.value + " " + (setting.value === 1 ? unit.slice(0, -1) : unit);
  return named(value, setting.source.replace("_", " "));
}

function renderPlist(r) {
  $("plist-result").hidden = false;
  const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
  text($("plist-verdict"), `${r.format.toUpperCase()} property list: ${plural(r.errors, "error")}, ${plural(r.warnings, "warning")}.`);
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

document.addEventListener("DOMContentLoaded", () => {
  $("plist-form").addEventListener("submit", checkPlist);
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    load();
  });
  $("filters").addEventListener("submit", (event) => { event.preventDefault(); load(); });
  $("csv-summary").addEventListener("click", () => download("/api/summary.csv?" + query(), "summary.csv"));
  $("csv-reports").addEventListener("click", () => download("/api/reports.csv?" + period(), "reports.csv"));
  $("csv-postbacks").addEventListener("click", () => download("/api/postbacks.csv?" + period(), "postbacks.csv"));
  $("csv-apple-ads").addEventListener("click", () => download("/api/apple-ads.csv?" + period(), "apple-ads.csv"));
  $("app-site").addEventListener("change", loadApps);
  $("scope").addEventListener("change", load);
  $("logout").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); showLogin(); });
  load();
});
