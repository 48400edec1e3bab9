// The trajectory list: decode the compact table, apply the query, draw only the visible rows.
// applyQuery is the same rule as workbench/widgets/_table.py:apply_query.

const ROW_H = 24;
const CHOICES = { run: "run_id", role: "role", termination: "termination", hops: "hops", policy: "policy",
  iteration: "iteration", train_step: "train_step", phase: "phase" };
const NUMBER_CHOICES = new Set(["hops", "iteration", "train_step"]);
const CHOICE_LABELS = { train_step: "training step" };
const CHOICE_TITLES = {
  iteration: "evolve iteration: the lineage's, else the one running when the rollout started",
  train_step: "the trainer's step that trained on the rollout",
  phase: "the phase that ran it (propose, proposer_update, solver_update…)",
};

function decodeTable(t) {
  const col = (name) => {
    const c = t[name];
    return c.codes.map((k) => (k < 0 ? null : c.levels[k]));
  };
  const n = t.n || 0;
  const rows = {
    n, total: t.total ?? n, partial: !!t.partial, id: t.id || [], question: t.question || [], answer: t.answer || [], reward: t.reward || [],
    hops: t.hops || [], num_steps: t.num_steps || [], num_host_calls: t.num_host_calls || [],
    started_at: t.started_at || [], iteration: t.iteration || new Array(n).fill(null), train_step: t.train_step || new Array(n).fill(null),
    forks: t.forks || new Array(n).fill(null),  // a harness rollout's fork count (null: no model gateway)
  };
  rows.harness = rows.forks.some((f) => f !== null);
  for (const c of ["role", "run_id", "termination", "policy", "task_id", "origin_id", "phase"]) rows[c] = t[c] ? col(c) : new Array(n).fill(null);
  rows.index = new Map(rows.id.map((id, i) => [id, i]));
  rows.hay = rows.id.map((id, i) => `${id}\n${rows.question[i]}\n${rows.answer[i] || ""}\n${rows.policy[i] || ""}`.toLowerCase());
  return rows;
}

function applyQuery(rows, q) {
  const out = [];
  const ids = q.ids ? new Set(q.ids) : null;
  const needle = (q.search || "").trim().toLowerCase();
  // the store's full-text matches (Python fills `found`); the offline report has only substrings
  const found = needle && q.found ? new Set(q.found) : null;
  const min = q.min_reward ?? null, max = q.max_reward ?? null;
  for (let i = 0; i < rows.n; i++) {
    let ok = true;
    for (const [name, column] of Object.entries(CHOICES)) {
      const v = q[name];
      if (v !== undefined && v !== null && rows[column][i] !== v) { ok = false; break; }
    }
    if (!ok) continue;
    const r = rows.reward[i];
    if (min !== null && (r === null || r < min)) continue;
    if (max !== null && (r === null || r > max)) continue;
    if (ids && !ids.has(rows.id[i])) continue;
    if (found ? !found.has(rows.id[i]) : needle && !rows.hay[i].includes(needle)) continue;
    out.push(i);
  }
  if (q.sort) {
    const desc = q.sort.startsWith("-");
    const key = desc ? q.sort.slice(1) : q.sort;
    const col = rows[key] || rows.started_at;
    out.sort((a, b) => {
      const x = col[a], y = col[b];
      if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;
      if (y === null || y === undefined) return -1;
      const c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
  }
  return out;
}

const COLUMNS = [
  ["id", "id", "wb-c-id"], ["role", "role", "wb-c-role"], ["hops", "hops", "wb-c-num"],
  ["reward", "reward", "wb-c-num"], ["num_steps", "turns", "wb-c-num"],
  ["termination", "end", "wb-c-term"], ["question", "question", "wb-c-q"],
];
const FORKS_COLUMN = ["forks", "forks", "wb-c-num"];  // drawn when the run holds harness rollouts

function listColumns(rows) {
  return rows && rows.harness ? [...COLUMNS.slice(0, 5), FORKS_COLUMN, ...COLUMNS.slice(5)] : COLUMNS;
}

function listHeader(state, onSort) {
  const sort = state.query.sort || "";
  return h("div", { class: "wb-list-head" }, listColumns(state.rows).map(([key, label, cls]) => {
    const mark = sort === key ? " ▲" : sort === "-" + key ? " ▼" : "";
    return h("button", { class: `wb-cell ${cls}`, title: `sort by ${label}`, "data-sort": key,
      onclick: () => onSort(sort === key ? "-" + key : sort === "-" + key ? null : key) }, label + mark);
  }));
}

function rowElement(rows, i, selected, pinned) {
  const id = rows.id[i];
  const r = rows.reward[i];
  const cls = "wb-row" + (id === selected ? " wb-selected" : "") + (id === pinned ? " wb-pinned" : "");
  return h("div", { class: cls, "data-id": id, role: "row" },
    h("span", { class: "wb-cell wb-c-id", text: id.slice(0, 8) }),
    h("span", { class: "wb-cell wb-c-role", text: rows.role[i] || "" }),
    h("span", { class: "wb-cell wb-c-num", text: rows.hops[i] === null ? "—" : String(rows.hops[i]) }),
    h("span", { class: "wb-cell wb-c-num wb-c-reward", style: { background: rewardColour(r) }, text: fmt(r, 3) }),
    h("span", { class: "wb-cell wb-c-num", text: String(rows.num_steps[i]) }),
    rows.harness ? h("span", { class: "wb-cell wb-c-num wb-c-forks", title: "forks: segments begun anew (model gateway)",
      text: rows.forks[i] === null ? "—" : String(rows.forks[i]) }) : null,
    h("span", { class: "wb-cell wb-c-term", text: rows.termination[i] || "running" }),
    h("span", { class: "wb-cell wb-c-q", title: rows.question[i], text: rows.question[i] }));
}

// A scrolling box of fixed-height rows; only the rows in view (plus a margin) exist in the DOM.
function makeList(onPick) {
  const body = h("div", { class: "wb-list-body" });
  const spacer = h("div", { class: "wb-list-spacer" });
  const box = h("div", { class: "wb-list", role: "grid" }, spacer, body);
  const list = { box, visible: [], rows: null, selected: "", pinned: "" };
  list.draw = () => {
    const { visible, rows } = list;
    spacer.style.height = `${visible.length * ROW_H}px`;
    const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - 5);
    const last = Math.min(visible.length, first + Math.ceil((box.clientHeight || 320) / ROW_H) + 10);
    body.style.transform = `translateY(${first * ROW_H}px)`;
    body.replaceChildren(...visible.slice(first, last).map((i) => rowElement(rows, i, list.selected, list.pinned)));
  };
  list.scrollTo = (pos) => {
    const top = pos * ROW_H, bottom = top + ROW_H;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (bottom > box.scrollTop + box.clientHeight) box.scrollTop = bottom - box.clientHeight;
  };
  box.addEventListener("scroll", () => requestAnimationFrame(list.draw));
  body.addEventListener("click", (ev) => {
    const row = ev.target.closest(".wb-row");
    if (row) onPick(row.dataset.id);
  });
  return list;
}

function filterBar(state, choices, set) {
  const q = state.query;
  // applied on Enter (change) or when cleared (search), not on every key
  const apply = (e) => { if ((e.target.value || null) !== (q.search || null)) set({ search: e.target.value || null, found: null }); };
  const search = h("input", { class: "wb-search", type: "search", placeholder: "search think, code, output, answers…  ( / , Enter)",
    title: "every word, in any order, in the question, think, code, output or answer; 8+ characters also match an id's start",
    value: q.search || "", onchange: apply, onsearch: apply, onkeydown: (e) => { if (e.key === "Enter") apply(e); } });
  // a stage filter with no values in this run (a run that trained nothing) is not drawn
  const drawn = (name) => !(name in CHOICE_TITLES) || (choices[name] || []).length || q[name] != null;
  const selects = Object.keys(CHOICES).filter(drawn).map((name) => {
    const values = choices[name] || [];
    const sel = h("select", { class: `wb-filter wb-filter-${name}`, title: CHOICE_TITLES[name] || name,
      onchange: (e) => set({ [name]: e.target.value === "" ? null : (NUMBER_CHOICES.has(name) ? Number(e.target.value) : e.target.value) }) },
      h("option", { value: "", text: `${CHOICE_LABELS[name] || name}: all` }),
      values.map((v) => h("option", { value: String(v), text: String(v), selected: q[name] === v })));
    return sel;
  });
  const num = (key, label) => h("input", { class: `wb-num wb-${key}`, type: "number", step: "0.05", placeholder: label,
    title: label, value: q[key] ?? "", onchange: (e) => set({ [key]: e.target.value === "" ? null : Number(e.target.value) }) });
  return h("div", { class: "wb-filters" }, search, selects, num("min_reward", "reward ≥"), num("max_reward", "reward ≤"));
}
