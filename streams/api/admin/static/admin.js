// The memstream admin page: the registry API with the key the admin enters (kept in
// sessionStorage, so it leaves with the tab). Memory text is only ever set as textContent.
"use strict";

const KEY = "memstream.apiKey";
const $ = (id) => document.getElementById(id);
const seenCategories = new Set();

function apiKey() { return sessionStorage.getItem(KEY) || ""; }

function say(text, ok = false) {
  $("message").textContent = text;
  $("message").className = ok ? "ok" : "";
}

function userPath(suffix = "") {
  return `/v1/users/${encodeURIComponent($("user-id").value.trim())}${suffix}`;
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${apiKey()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(`${response.status}: ${data.error || data.status || response.statusText}`);
  }
  return data;
}

function showKeyState() {
  $("key-state").textContent = apiKey() ? "key set for this tab" : "no key";
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
  return td;
}

function button(parent, label, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", action);
  parent.appendChild(b);
  return b;
}

async function change(method, suffix, body, done) {
  try {
    const result = await api(method, userPath(suffix) + "?wait=1", body);
    say(`${done} (${result.status})`, true);
  } catch (error) {
    say(`Failed: ${error.message}`);
  }
  await load();
}

function editRow(td, memory) {
  td.textContent = "";
  const input = document.createElement("input");
  input.value = memory.summary;
  input.maxLength = 280;
  input.className = "edit-text";
  td.appendChild(input);
  button(td, "Save", () => change("PATCH", `/memories/${memory.id}`, { text: input.value }, "Edited"));
  input.focus();
}

function renderRow(memory) {
  const row = document.createElement("tr");
  row.dataset.id = memory.id;
  row.className = `state-${memory.state}`;
  const summary = cell(row, memory.summary);
  summary.className = "summary";
  cell(row, memory.category).className = "category";
  cell(row, memory.state).className = "state";
  cell(row, memory.pinned ? "yes" : "no").className = "pinned";
  cell(row, memory.updated_at);
  const actions = cell(row, "");
  actions.className = "actions";
  button(actions, "Edit", () => editRow(summary, memory));
  if (memory.state === "soft_deleted") {
    button(actions, "Restore", () => change("POST", `/memories/${memory.id}/restore`, undefined, "Restored"));
  } else {
    button(actions, "Delete", () => {
      if (confirm("Delete this memory? It can be restored.")) {
        change("DELETE", `/memories/${memory.id}`, undefined, "Deleted");
      }
    });
  }
  const pin = memory.pinned ? "unpin" : "pin";
  button(actions, memory.pinned ? "Unpin" : "Pin",
    () => change("POST", `/memories/${memory.id}/${pin}`, undefined, memory.pinned ? "Unpinned" : "Pinned"));
  button(actions, "History", () => showDetail(memory));
  return row;
}

function updateCategories(items) {
  items.forEach((m) => seenCategories.add(m.category));
  const select = $("category");
  const chosen = select.value;
  [...select.options].slice(1).forEach((o) => o.remove());
  [...seenCategories].sort().forEach((name) => select.add(new Option(name, name)));
  select.value = chosen;
}

async function load() {
  if (!apiKey()) { say("Enter an API key first."); return; }
  const params = new URLSearchParams();
  for (const [name, id] of [["q", "search"], ["category", "category"], ["state", "state"]]) {
    if ($(id).value) params.set(name, $(id).value);
  }
  try {
    const data = await api("GET", userPath("/memories") + "?" + params);
    if (!$("category").value) updateCategories(data.items);
    const body = $("memories").querySelector("tbody");
    body.replaceChildren(...data.items.map(renderRow));
    $("memories").hidden = false;
    if (!data.items.length) say("No memories match.", true);
  } catch (error) {
    $("memories").hidden = true;
    say(`Failed: ${error.message}`);
  }
}

async function showDetail(memory) {
  $("detail-id").textContent = memory.id;
  const provenance = $("provenance");
  provenance.replaceChildren();
  const fields = [["source turns", (memory.source_turn_ids || []).join(", ")],
    ["source", memory.source], ["agent", memory.agent_id], ["thread", memory.thread_id],
    ["created", memory.created_at], ["updated", memory.updated_at],
    ["valid from", memory.valid_from], ["valid to", memory.valid_to],
    ["superseded by", memory.superseded_by]];
  for (const [name, value] of fields) {
    if (!value) continue;
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    provenance.append(dt, dd);
  }
  try {
    const data = await api("GET", userPath(`/memories/${memory.id}/history`));
    $("history").replaceChildren(...data.history.map((entry) => {
      const li = document.createElement("li");
      const after = entry.new ? ` → ${entry.new.summary} [${entry.new.state}${entry.new.pinned ? ", pinned" : ""}]` : "";
      li.textContent = `${entry.ts} ${entry.verb} by ${entry.actor}${after}`;
      li.dataset.verb = entry.verb;
      return li;
    }));
    $("detail").hidden = false;
  } catch (error) {
    say(`Failed: ${error.message}`);
  }
}

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY, $("api-key").value.trim());
  $("api-key").value = "";
  showKeyState();
});
$("forget-key").addEventListener("click", () => { sessionStorage.removeItem(KEY); showKeyState(); });
$("user-form").addEventListener("submit", (event) => { event.preventDefault(); load(); });
$("category").addEventListener("change", load);
$("close-detail").addEventListener("click", () => { $("detail").hidden = true; });
showKeyState();
