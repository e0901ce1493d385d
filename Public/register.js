// The Register view: the admin token's forms for what `curl` did before: publishers' campaigns
// (with the source-id picker), advertisers' conversions (with the pixel tag and its test), apps
// and their conversion-value schemas (with a preview), advertisers, viewer tokens, and names for
// ad networks and Apple Ads. Every form goes through the same admin API and checks as `curl`; a
// refusal is shown at the field its problem+json names. In a cluster each form shows the change
// to make in the shared config file instead of sending it. Viewer tokens never see this view.
// Uses app.js's helpers ($, api, token, fill, cell, named, whoami, state, loadView).
"use strict";

const register = { campaigns: [], conversions: [], apps: [], advertisers: [], sites: [], editing: null, editingApp: null, pixelFor: null };

/// JSON to the admin API. A refusal is shown at its field (or at the form's foot) and thrown;
/// in a cluster nothing is sent: the file change is shown instead (`key`: the config file's list).
async function send(form, method, path, body, key) {
  clearErrors(form);
  if (whoami && whoami.cluster && key) {
    showPaste(key, body);
    throw Object.assign(new Error("shown as a file change"), { shown: true });
  }
  const response = await fetch(path, {
    method, cache: "no-store",
    headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = response.status === 204 ? {} : await response.json().catch(() => ({}));
  if (response.ok) return answer;
  showError(form, answer.field, answer.detail || `The endpoint answered ${response.status}.`);
  throw Object.assign(new Error(answer.detail || String(response.status)), { shown: true });
}

function clearErrors(form) {
  if (!form) return;
  for (const node of form.querySelectorAll(".field-error")) node.remove();
  for (const node of form.querySelectorAll("[aria-invalid]")) { node.removeAttribute("aria-invalid"); node.removeAttribute("aria-describedby"); }
  const foot = form.querySelector(".form-error");
  if (foot) { foot.hidden = true; foot.textContent = ""; }
}

/// The problem's `field` ("schema.fine[1].revenue.currency", "source_id") names an input's
/// `data-field`; the nearest one that names a prefix of it takes the message, else the form's foot.
function showError(form, field, detail) {
  let input = null;
  for (let name = field || ""; name; ) {
    input = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (input) break;
    const cut = name.search(/(\.[^.\[]+|\[\d+\])$/);
    if (cut <= 0) break;
    name = name.slice(0, cut);
  }
  if (!input) {
    const foot = form.querySelector(".form-error");
    foot.textContent = detail;
    foot.hidden = false;
    return;
  }
  const message = document.createElement("p");
  message.className = "field-error";
  message.id = (input.id || "field") + "-error";
  message.textContent = detail;
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", message.id);
  input.insertAdjacentElement("afterend", message);
  input.focus();
}

function showPaste(key, body) {
  $("paste").hidden = false;
  text($("paste-note"), `Add this to "${key}" in the config file (an entry with the same key replaces the old one), give the file to every node and restart them one at a time.`);
  text($("paste-text"), JSON.stringify({ [key]: [body] }, null, 2));
  $("paste").scrollIntoView({ block: "nearest" });
}

async function copyText(textValue, button) {
  try { await navigator.clipboard.writeText(textValue); button.textContent = "Copied"; } catch { button.textContent = "Select and copy it"; }
}

function options(select, values, chosen) {
  select.replaceChildren(...values.map(([value, label]) => new Option(label, value)));
  if (chosen !== undefined) select.value = chosen;
}

/// "2026-11-20T10:00" (a datetime-local, read as UTC) ⇄ RFC 3339.
const fromLocal = (value) => value ? value + ":00Z" : undefined;
const toLocal = (time) => time ? time.slice(0, 16) : "";

function actionButton(label, handler) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "secondary";
  button.textContent = label;
  button.addEventListener("click", handler);
  return button;
}

async function loadRegister() {
  const get = (path) => api(path).then((r) => r.json());
  const [campaigns, conversions, apps, advertisers, tokens, networks, appleAds, arrivals] = await Promise.all([
    get("/api/campaigns"), get("/api/conversions"), get("/api/apps"), get("/api/advertisers"), get("/api/viewer-tokens"),
    get("/api/ad-networks"), get("/api/apple-ads/campaigns"), get("/api/arrivals"),
  ]);
  Object.assign(register, { campaigns, conversions, apps, advertisers, sites: arrivals.sites.map((s) => s.site) });
  $("register-cluster").hidden = !whoami.cluster;
  $("served-sites").replaceChildren(...register.sites.map((site) => new Option(site)));
  for (const id of ["campaign-site", "conversion-site", "app-site-input"]) {
    const select = $(id), chosen = select.value;
    options(select, register.sites.map((s) => [s, s]), register.sites.includes(chosen) ? chosen : undefined);
  }
  options($("viewer-advertiser"), [["", "every advertiser"], ...advertisers.map((a) => [a.id, a.name])]);
  renderCampaigns();
  renderConversions();
  renderAppRegistrations();
  fill("advertisers-table", advertisers, (tr, a) => {
    cell(tr, named(a.name, a.id)); cell(tr, a.sites.join(", "));
    cell(tr, actionButton("Remove", () => remove(`/api/advertisers?id=${encodeURIComponent(a.id)}`, `advertiser ${a.name}`)));
  });
  fill("viewer-tokens-table", tokens, (tr, t) => {
    cell(tr, named(t.label, t.id));
    cell(tr, t.advertiser ? (advertisers.find((a) => a.id === t.advertiser) || { name: t.advertiser }).name : "every advertiser");
    cell(tr, when(t.created_at));
    cell(tr, actionButton("Revoke", () => remove(`/api/viewer-tokens?id=${encodeURIComponent(t.id)}`, `the token "${t.label}"`)));
  });
  fill("networks-table", networks, (tr, n) => {
    cell(tr, named(n.name, n.id));
    cell(tr, n.campaigns.map((c) => `${c.source_identifier || "#" + c.campaign_id} ${c.name}`).join("; ") || "—");
    cell(tr, actionButton("Remove", () => remove(`/api/ad-networks?id=${encodeURIComponent(n.id)}`, `ad network ${n.name}`)));
  });
  fill("apple-names-table", appleAds, (tr, c) => {
    const more = [...(c.ad_groups || []).map((g) => `ad group ${g.name}`), ...(c.keywords || []).map((k) => `keyword ${k.name}`)];
    cell(tr, named(c.name, "campaign " + c.campaign_id + (more.length ? " · " + more.join(", ") : "")));
    cell(tr, actionButton("Remove", () => remove(`/api/apple-ads/campaigns?campaign_id=${c.campaign_id}`, `the name of campaign ${c.campaign_id}`)));
  });
  await loadPicker();
}

async function remove(path, what) {
  if (!window.confirm(`Remove ${what}?`)) return;
  const response = await fetch(path, { method: "DELETE", headers: { Authorization: "Bearer " + token() } });
  if (!response.ok) {
    const answer = await response.json().catch(() => ({}));
    window.alert(answer.detail || `The endpoint answered ${response.status}.`);
  }
  await loadRegister();
}

// ---- Campaigns ---------------------------------------------------------------------------------

function renderCampaigns() {
  fill("campaigns-table", register.campaigns, (tr, c) => {
    cell(tr, named(c.name, c.source_site));
    cell(tr, c.source_id, "num");
    cell(tr, c.destination);
    cell(tr, `${c.starts_at.slice(0, 16).replace("T", " ")} – ${c.ends_at ? c.ends_at.slice(0, 16).replace("T", " ") : "no end"}`);
    const actions = document.createElement("span");
    actions.append(actionButton("Edit", () => editCampaign(c)));
    if (!c.ends_at) actions.append(" ", actionButton("End now", () => endCampaign(c)));
    actions.append(" ", actionButton("Remove", () => remove(`/api/campaigns?source_site=${encodeURIComponent(c.source_site)}&name=${encodeURIComponent(c.name)}`, `campaign ${c.name}`)));
    cell(tr, actions);
  });
}

function campaignBody() {
  const body = {
    source_site: $("campaign-site").value, source_id: Number($("campaign-id").value === "" ? NaN : $("campaign-id").value),
    destination: $("campaign-destination").value.trim(), name: $("campaign-name").value.trim(), starts_at: fromLocal($("campaign-start").value),
  };
  if ($("campaign-end").value) body.ends_at = fromLocal($("campaign-end").value);
  if (Number.isNaN(body.source_id)) body.source_id = $("campaign-id").value;
  return body;
}

/// Editing: a new name or end; the fields that say which reports are the campaign's are fixed.
function editCampaign(c) {
  register.editing = c;
  $("campaign-site").value = c.source_site;
  $("campaign-id").value = c.source_id;
  $("campaign-destination").value = c.destination;
  $("campaign-name").value = c.name;
  $("campaign-start").value = toLocal(c.starts_at);
  $("campaign-end").value = toLocal(c.ends_at);
  for (const id of ["campaign-site", "campaign-id", "campaign-destination", "campaign-start"]) $(id).disabled = true;
  $("campaign-submit").textContent = "Save campaign";
  $("campaign-cancel").hidden = false;
  $("campaign-name").focus();
}

function stopEditingCampaign() {
  register.editing = null;
  for (const id of ["campaign-site", "campaign-id", "campaign-destination", "campaign-start"]) $(id).disabled = false;
  $("campaign-submit").textContent = "Register campaign";
  $("campaign-cancel").hidden = true;
  const site = $("campaign-site").value;
  $("campaign-form").reset();
  $("campaign-site").value = site;
  clearErrors($("campaign-form"));
}

async function endCampaign(c) {
  const body = { ...c, ends_at: new Date().toISOString() };
  try {
    await send($("campaign-form"), "PUT", `/api/campaigns?source_site=${encodeURIComponent(c.source_site)}&name=${encodeURIComponent(c.name)}`, body, "campaigns");
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

async function submitCampaign(event) {
  event.preventDefault();
  const form = $("campaign-form"), body = campaignBody(), editing = register.editing;
  try {
    if (editing) {
      await send(form, "PUT", `/api/campaigns?source_site=${encodeURIComponent(editing.source_site)}&name=${encodeURIComponent(editing.name)}`, body, "campaigns");
      stopEditingCampaign();
    } else {
      await send(form, "POST", "/api/campaigns", body, "campaigns");
      // The next campaign is most likely the same publisher's.
      form.reset();
      $("campaign-site").value = body.source_site;
    }
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

/// The picker: the chosen source site's 256 ids, free or whose and until when; a free one fills the form.
async function loadPicker() {
  const site = $("campaign-site").value;
  if (!site) return;
  const ids = await (await api("/api/campaigns/source-ids?source_site=" + encodeURIComponent(site))).json();
  text($("picker-site"), site);
  text($("picker-free"), ids.free);
  $("picker-grid").replaceChildren(...ids.source_ids.map((s) => {
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("role", "listitem");
    button.textContent = s.source_id;
    button.className = s.free ? "free" : "busy";
    button.title = s.free ? `free${s.next_campaign ? `; ${s.next_campaign} takes it from ${s.next_starts_at.slice(0, 10)}` : ""}`
      : `${s.campaign}, busy ${s.busy_until ? "until " + s.busy_until.slice(0, 16).replace("T", " ") : "while it has no end"}`;
    button.setAttribute("aria-label", `Source id ${s.source_id}: ${button.title}`);
    button.addEventListener("click", () => { if (!register.editing) { $("campaign-id").value = s.source_id; $("campaign-id").focus(); } });
    return button;
  }));
}

// ---- Conversions and the pixel -----------------------------------------------------------------

function renderConversions() {
  const site = $("conversion-site").value;
  const taken = new Map(register.conversions.filter((c) => c.site === site).map((c) => [c.trigger_data, c.name]));
  const chosen = $("conversion-data").value;
  options($("conversion-data"), [...Array(16).keys()].map((n) => [String(n), taken.has(n) ? `${n} (taken: ${taken.get(n)})` : String(n)]),
    chosen || String([...Array(16).keys()].find((n) => !taken.has(n)) ?? 0));
  fill("conversions-table", register.conversions, (tr, c) => {
    cell(tr, named(c.name, c.site)); cell(tr, c.trigger_data, "num"); cell(tr, c.priority, "num");
    const actions = document.createElement("span");
    actions.append(actionButton("Pixel", () => showPixel(c)), " ",
      actionButton("Remove", () => remove(`/api/conversions?site=${encodeURIComponent(c.site)}&name=${encodeURIComponent(c.name)}`, `conversion ${c.name}`)));
    cell(tr, actions);
  });
}

async function submitConversion(event) {
  event.preventDefault();
  const form = $("conversion-form");
  const priority = $("conversion-priority").value;
  const body = { site: $("conversion-site").value, name: $("conversion-name").value.trim(), trigger_data: Number($("conversion-data").value),
    priority: priority === "" ? 0 : Number.isNaN(Number(priority)) ? priority : Number(priority) };
  try {
    await send(form, "POST", "/api/conversions", body, "conversions");
    form.reset();
    await loadRegister();
    showPixel(register.conversions.find((c) => c.site === body.site && c.name === body.name));
  } catch (error) { if (!error.shown) throw error; }
}

/// The tag in the form chosen: on the advertiser's own site (same-site), or served by a publisher
/// (cross-site, naming the advertiser's site).
function showPixel(conversion) {
  if (!conversion) return;
  register.pixelFor = conversion;
  $("pixel").hidden = false;
  text($("pixel-name"), `${conversion.name} (${conversion.site})`);
  const publisher = $("pixel-publisher"), chosen = publisher.value;
  options(publisher, [["", `${conversion.site} itself (same-site)`], ...register.sites.filter((s) => s !== conversion.site).map((s) => [s, `${s} (cross-site)`])],
    chosen && chosen !== conversion.site ? chosen : "");
  renderPixelTag();
}

function pixelURL() {
  const c = register.pixelFor, publisher = $("pixel-publisher").value;
  const query = "conversion=" + encodeURIComponent(c.name) + (publisher ? "&site=" + encodeURIComponent(c.site) : "");
  return `https://${publisher || c.site}/conversion-pixel?${query}`;
}

function renderPixelTag() {
  const publisher = $("pixel-publisher").value;
  text($("pixel-form-note"), publisher
    ? `Cross-site: ${publisher} serves the pixel and the browser takes ${publisher} as the click's source; put it on ${register.pixelFor.site}'s page where the conversion happens.`
    : `Same-site: put it on ${register.pixelFor.site}'s page where the conversion happens; add &source=https://PUBLISHER when the page knows where the click came from.`);
  text($("pixel-tag"), `<img src="${pixelURL()}" width="1" height="1" alt="">`);
  text($("pixel-result"), "");
}

async function testPixel() {
  const c = register.pixelFor, publisher = $("pixel-publisher").value;
  const query = new URLSearchParams({ site: c.site, conversion: c.name });
  if (publisher) query.set("publisher", publisher);
  const answer = await (await api("/api/conversions/pixel-test?" + query)).json();
  text($("pixel-result"), answer.status === 302
    ? `It answers 302: the browser follows the redirect to ${answer.location} (trigger data ${c.trigger_data}, priority ${c.priority}). Nothing was recorded by this test.`
    : `It answers ${answer.status}: ${answer.problem ? answer.problem.detail : "no redirect"}.`);
}

// ---- Apps and the schema editor ----------------------------------------------------------------

function renderAppRegistrations() {
  fill("apps-table", register.apps, (tr, a) => {
    cell(tr, named(a.name, "app " + a.app_id)); cell(tr, a.site); cell(tr, (a.schema_versions || []).length, "num");
    cell(tr, actionButton("Edit", () => editApp(a)));
  });
}

/// One row of the fine values' table; its inputs name the fields the API's refusals name.
function addRange(range = {}) {
  const body = $("schema-fine").tBodies[0], i = body.rows.length, tr = body.insertRow();
  const input = (key, value, attrs = {}) => {
    const node = document.createElement("input");
    node.dataset.key = key;
    node.dataset.field = `schema.fine[${i}]` + (key === "from" || key === "to" ? "" : "." + key);
    node.value = value === undefined || value === null ? "" : value;
    node.setAttribute("aria-label", `Range ${i + 1}: ${key.replace("revenue.", "revenue ")}`);
    Object.assign(node, attrs);
    node.addEventListener("input", previewValue);
    tr.insertCell().appendChild(node);
  };
  input("from", range.from, { inputMode: "numeric" });
  input("to", range.to, { inputMode: "numeric" });
  input("meaning", range.meaning, { className: "wide" });
  input("events", (range.events || []).join(", "), { className: "wide" });
  input("revenue.min", range.revenue && range.revenue.min, { inputMode: "decimal" });
  input("revenue.max", range.revenue && range.revenue.max, { inputMode: "decimal" });
  input("revenue.currency", range.revenue && range.revenue.currency, { maxLength: 3, placeholder: "USD" });
  tr.insertCell().appendChild(actionButton("Remove", () => { tr.remove(); renumberRanges(); previewValue(); }));
}

function renumberRanges() {
  [...$("schema-fine").tBodies[0].rows].forEach((tr, i) => {
    for (const node of tr.querySelectorAll("input")) {
      const key = node.dataset.key;
      node.dataset.field = `schema.fine[${i}]` + (key === "from" || key === "to" ? "" : "." + key);
      node.setAttribute("aria-label", `Range ${i + 1}: ${key.replace("revenue.", "revenue ")}`);
    }
  });
}

/// A number as typed, or the text itself so that the API names what is wrong with it.
const numberOrText = (value) => value.trim() === "" ? undefined : Number.isNaN(Number(value)) ? value : Number(value);

function schemaFromEditor() {
  const fine = [...$("schema-fine").tBodies[0].rows].map((tr) => {
    const v = (key) => tr.querySelector(`[data-key="${key}"]`).value;
    const range = { from: numberOrText(v("from")), to: numberOrText(v("to")), meaning: v("meaning").trim() };
    const events = v("events").split(",").map((e) => e.trim()).filter(Boolean);
    if (events.length) range.events = events;
    if (v("revenue.min") || v("revenue.max") || v("revenue.currency")) {
      range.revenue = { min: numberOrText(v("revenue.min")), max: numberOrText(v("revenue.max")), currency: v("revenue.currency").trim() };
    }
    return range;
  });
  const schema = { fine, coarse: {} };
  for (const level of ["low", "medium", "high"]) if ($("coarse-" + level).value.trim()) schema.coarse[level] = $("coarse-" + level).value.trim();
  if ($("coarse-from-medium").value || $("coarse-from-high").value) {
    schema.coarse_from_fine = { medium: numberOrText($("coarse-from-medium").value), high: numberOrText($("coarse-from-high").value) };
  }
  // When the app locks a window (the conversion-value API's lock_window): kept through an edit.
  if ($("lock-fine").value !== "" || $("lock-coarse").value) {
    schema.lock_at = {};
    if ($("lock-fine").value !== "") schema.lock_at.fine = numberOrText($("lock-fine").value);
    if ($("lock-coarse").value) schema.lock_at.coarse = $("lock-coarse").value;
  }
  return schema;
}

/// What a value decodes to under the schema in the editor, as the Apps view will read it.
function previewValue() {
  const typed = $("schema-preview-value").value.trim().toLowerCase(), schema = schemaFromEditor();
  if (!typed) return text($("schema-preview"), "");
  if (["low", "medium", "high"].includes(typed)) {
    return text($("schema-preview"), `Coarse ${typed}: ${schema.coarse[typed] || "no meaning given; shown as the word"}.`);
  }
  const value = Number(typed);
  if (!Number.isInteger(value) || value < 0 || value > 63) return text($("schema-preview"), "A fine value is 0–63; a coarse one low, medium or high.");
  const range = schema.fine.find((r) => typeof r.from === "number" && typeof r.to === "number" && r.from <= value && value <= r.to);
  if (!range) return text($("schema-preview"), `${value}: no range names it; shown as its number.`);
  const revenue = range.revenue && typeof range.revenue.min === "number" && typeof range.revenue.max === "number"
    ? ` Revenue ${money(range.revenue.min, range.revenue.currency || "")} – ${money(range.revenue.max, range.revenue.currency || "")} (an estimate from this range).` : "";
  const level = schema.coarse_from_fine && typeof schema.coarse_from_fine.medium === "number"
    ? (value >= schema.coarse_from_fine.high ? "high" : value >= schema.coarse_from_fine.medium ? "medium" : "low") : null;
  text($("schema-preview"), `${value}: ${range.meaning || "(no meaning yet)"}${range.events ? ` · events ${range.events.join(", ")}` : ""}.${revenue}` +
    (level ? ` Coarse: ${level}.` : ""));
}

function editApp(a) {
  register.editingApp = a;
  $("app-id").value = a.app_id;
  $("app-id").disabled = true;
  $("app-site-input").value = a.site;
  $("app-name").value = a.name;
  $("schema-fine").tBodies[0].replaceChildren();
  for (const range of a.schema.fine || []) addRange(range);
  for (const level of ["low", "medium", "high"]) $("coarse-" + level).value = (a.schema.coarse || {})[level] || "";
  $("coarse-from-medium").value = a.schema.coarse_from_fine ? a.schema.coarse_from_fine.medium : "";
  $("coarse-from-high").value = a.schema.coarse_from_fine ? a.schema.coarse_from_fine.high : "";
  $("lock-fine").value = a.schema.lock_at && a.schema.lock_at.fine !== undefined ? a.schema.lock_at.fine : "";
  $("lock-coarse").value = (a.schema.lock_at && a.schema.lock_at.coarse) || "";
  $("app-submit").textContent = "Save app (a changed schema becomes a new version)";
  $("app-cancel").hidden = false;
  $("app-name").focus();
}

function stopEditingApp() {
  register.editingApp = null;
  $("app-id").disabled = false;
  $("app-form").reset();
  $("schema-fine").tBodies[0].replaceChildren();
  addRange();
  $("app-submit").textContent = "Register app";
  $("app-cancel").hidden = true;
  clearErrors($("app-form"));
  text($("schema-preview"), "");
}

async function submitApp(event) {
  event.preventDefault();
  const form = $("app-form");
  const body = { app_id: numberOrText($("app-id").value), site: $("app-site-input").value, name: $("app-name").value.trim(), schema: schemaFromEditor() };
  try {
    await send(form, register.editingApp ? "PUT" : "POST", "/api/apps", body, "apps");
    stopEditingApp();
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

// ---- Advertisers, viewer tokens, names ---------------------------------------------------------

async function submitAdvertiser(event) {
  event.preventDefault();
  const form = $("advertiser-form");
  const body = { id: $("advertiser-id").value.trim(), name: $("advertiser-name").value.trim(),
    sites: $("advertiser-sites").value.split(",").map((s) => s.trim()).filter(Boolean) };
  try {
    await send(form, "POST", "/api/advertisers", body, "advertisers");
    form.reset();
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

async function submitViewerToken(event) {
  event.preventDefault();
  const form = $("viewer-token-form");
  const body = { label: $("viewer-label").value.trim(), advertiser: $("viewer-advertiser").value || null };
  try {
    // Tokens are each node's own until issue 46: made on the node, never in the shared file.
    const made = await send(form, "POST", "/api/viewer-tokens", body);
    form.reset();
    $("new-token").hidden = false;
    text($("new-token-value"), made.token);
    $("new-token-copy").textContent = "Copy token";
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

/// "4210 = Holiday video" and "#12 = Legacy", one a line.
function campaignsFromText(value) {
  return value.split("\n").map((line) => line.trim()).filter(Boolean).map((line) => {
    const [id, ...rest] = line.split("=");
    const name = rest.join("=").trim(), key = id.trim();
    return key.startsWith("#") ? { campaign_id: numberOrText(key.slice(1)), name } : { source_identifier: key, name };
  });
}

async function submitNetwork(event) {
  event.preventDefault();
  const form = $("network-form");
  const body = { id: $("network-id").value.trim(), name: $("network-name").value.trim(), campaigns: campaignsFromText($("network-campaigns").value) };
  try {
    await send(form, "POST", "/api/ad-networks", body, "ad_networks");
    form.reset();
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

async function submitAppleAdsName(event) {
  event.preventDefault();
  const form = $("apple-ads-name-form");
  // "542317095 = Puzzle lovers", one a line.
  const named = (value) => value.split("\n").map((line) => line.trim()).filter(Boolean).map((line) => {
    const [id, ...rest] = line.split("=");
    return { id: numberOrText(id.trim()), name: rest.join("=").trim() };
  });
  const body = { campaign_id: numberOrText($("apple-campaign-id").value), name: $("apple-campaign-name").value.trim(),
    ad_groups: named($("apple-ad-groups").value), keywords: named($("apple-keywords").value) };
  try {
    await send(form, "POST", "/api/apple-ads/campaigns", body, "apple_ads_campaigns");
    form.reset();
    await loadRegister();
  } catch (error) { if (!error.shown) throw error; }
}

document.addEventListener("DOMContentLoaded", () => {
  $("campaign-form").addEventListener("submit", submitCampaign);
  $("campaign-cancel").addEventListener("click", stopEditingCampaign);
  $("campaign-site").addEventListener("change", () => loadPicker());
  $("conversion-form").addEventListener("submit", submitConversion);
  $("conversion-site").addEventListener("change", renderConversions);
  $("pixel-publisher").addEventListener("change", renderPixelTag);
  $("pixel-copy").addEventListener("click", (event) => copyText($("pixel-tag").textContent, event.target));
  $("pixel-test").addEventListener("click", testPixel);
  $("app-form").addEventListener("submit", submitApp);
  $("app-cancel").addEventListener("click", stopEditingApp);
  $("schema-add").addEventListener("click", () => { addRange(); previewValue(); });
  $("schema-preview-value").addEventListener("input", previewValue);
  for (const id of ["coarse-low", "coarse-medium", "coarse-high", "coarse-from-medium", "coarse-from-high"]) $(id).addEventListener("input", previewValue);
  $("advertiser-form").addEventListener("submit", submitAdvertiser);
  $("viewer-token-form").addEventListener("submit", submitViewerToken);
  $("new-token-copy").addEventListener("click", (event) => copyText($("new-token-value").textContent, event.target));
  $("network-form").addEventListener("submit", submitNetwork);
  $("apple-ads-name-form").addEventListener("submit", submitAppleAdsName);
  $("paste-copy").addEventListener("click", (event) => copyText($("paste-text").textContent, event.target));
  addRange();
});
