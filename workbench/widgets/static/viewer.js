// TrajectoryViewer's front end: the list, the filters, keys, and the selected trajectory.
// `model` is the anywidget model in a notebook, or a stand-in over embedded data in a report.

const TABS = [["turns", "turns"], ["tokens", "tokens"], ["rewards", "rewards"], ["group", "group"], ["links", "links"]];

function readTable(v) {
  if (!v) return {};
  if (v instanceof DataView || ArrayBuffer.isView(v)) return JSON.parse(new TextDecoder().decode(v));
  if (v instanceof ArrayBuffer) return JSON.parse(new TextDecoder().decode(new Uint8Array(v)));
  return v; // the offline report embeds it as an object
}

function renderViewer({ model, el }) {
  const state = { rows: decodeTable(readTable(model.get("table_json"))), visible: [], query: model.get("query") || {}, tab: "turns" };
  const root = h("div", { class: "wb-viewer", tabindex: "0", "data-lm-suppress-shortcuts": "true" });
  const toolbar = h("div", { class: "wb-toolbar" });
  const headBox = h("div", {});
  const detailBox = h("div", { class: "wb-detail" });
  const compareBox = h("div", { class: "wb-compare-box" });
  const send = (action, id) => model.send({ action, id: id || null });
  // details of the selection's neighbours, sent ahead by Python, so j/k draw without a round trip
  const cache = new Map();
  model.on("msg:custom", (msg) => {
    if (!msg || msg.type !== "details") return;
    for (const [id, d] of Object.entries(msg.items)) cache.set(id, d);
    while (cache.size > 64) cache.delete(cache.keys().next().value);
  });
  const current = () => {
    const d = model.get("detail"), sel = model.get("selected");
    return d && d.id === sel ? d : cache.get(sel) || d;
  };
  const prefetch = (pos) => {
    const ids = [pos + 1, pos - 1, pos + 2].filter((p) => p >= 0 && p < state.visible.length)
      .map((p) => state.rows.id[state.visible[p]]).filter((id) => !cache.has(id));
    if (ids.length) model.send({ action: "prefetch", ids });
  };

  const list = makeList((id) => { pick(id); root.focus({ preventScroll: true }); });
  root.append(toolbar, headBox, list.box, compareBox, detailBox);
  el.appendChild(root);

  function setQuery(patch) {
    const q = Object.assign({}, state.query, patch);
    for (const k of Object.keys(q)) if (q[k] === null || q[k] === undefined || q[k] === "") delete q[k];
    state.query = q;
    model.set("query", q);
    model.save_changes();
    refilter(true);
  }

  function refilter(pickFirst) {
    state.visible = applyQuery(state.rows, state.query);
    list.rows = state.rows;
    list.visible = state.visible;
    list.selected = model.get("selected");
    root.dataset.rows = String(state.visible.length);
    root.dataset.partial = state.rows.partial ? "1" : "";
    headBox.replaceChildren(listHeader(state, (sort) => setQuery({ sort })));
    drawToolbar();
    list.draw();
    if (pickFirst && state.visible.length && !state.visible.some((i) => state.rows.id[i] === list.selected)) {
      pick(state.rows.id[state.visible[0]]);
    }
  }

  function drawToolbar() {
    const keep = document.activeElement && toolbar.contains(document.activeElement) ? document.activeElement.className : null;
    const label = model.get("link_label");
    const notice = model.get("notice");
    toolbar.replaceChildren(...[
      filterBar(state, model.get("choices") || {}, setQuery),
      h("span", { class: "wb-count" }, h("b", { text: String(state.visible.length) }), ` of ${state.rows.total} trajectories`,
        state.rows.partial ? h("span", { class: "wb-muted", text: " (reading the rest…)" }) : null),
      label ? h("span", { class: "wb-link-label" }, label, h("button", { class: "wb-btn", title: "show all", onclick: () => send("clear_link") }, "✕")) : null,
      notice ? h("div", { class: "wb-notice", text: notice }) : null].filter(Boolean));
    if (keep) {
      const again = toolbar.getElementsByClassName(keep.split(" ")[0])[0];
      if (again) { again.focus(); if (again.setSelectionRange && again.type === "search") again.setSelectionRange(again.value.length, again.value.length); }
    }
  }

  function pick(id) {
    if (!id) return;
    list.selected = id;
    list.draw();
    const pos = state.visible.findIndex((i) => state.rows.id[i] === id);
    if (pos >= 0) list.scrollTo(pos);
    if (model.get("selected") !== id) {
      model.set("selected", id);
      model.save_changes();
    }
    drawDetail();
    if (pos >= 0) prefetch(pos);
  }

  function move(delta) {
    if (!state.visible.length) return;
    const pos = state.visible.findIndex((i) => state.rows.id[i] === model.get("selected"));
    const next = Math.max(0, Math.min(state.visible.length - 1, pos < 0 ? 0 : pos + delta));
    pick(state.rows.id[state.visible[next]]);
  }

  function setStep(i) {
    const d = current();
    if (!d || !d.steps) return;
    const s = Math.max(0, Math.min(d.steps.length - 1, i));
    model.set("step", s);
    model.save_changes();
    drawStep(true);
  }

  function drawDetail() {
    const d = current();
    const selected = model.get("selected");
    const key = d && d.id === selected ? JSON.stringify(d) : null;
    if (key && key === state.drawn && state.drawnTab === state.tab) return; // already on screen
    state.drawn = key;
    state.drawnTab = state.tab;
    root.dataset.loading = d && d.id === selected ? "" : "1";
    if (!d || !d.id) { detailBox.replaceChildren(h("i", { class: "wb-muted", text: "no trajectory selected" })); return; }
    const tabs = h("div", { class: "wb-tabs" }, TABS.map(([key, label]) =>
      h("button", { class: "wb-tab" + (state.tab === key ? " wb-on" : ""), "data-tab": key, onclick: () => { state.tab = key; drawDetail(); } }, label)),
      h("span", { class: "wb-muted wb-keys", text: "j/k trajectories · h/l turns · / search · t tokens" }));
    const body = h("div", { class: "wb-tab-body" });
    detailBox.replaceChildren(header(d, send), tabs, body);
    detailBox.classList.toggle("wb-stale", d.id !== selected);
    state.body = body;
    drawStep(false);
    root.dataset.renderedId = d.id;
  }

  function drawStep(scroll) {
    const d = current();
    const step = model.get("step");
    const body = state.body;
    if (!d || !body) return;
    root.dataset.step = String(step);
    if (state.tab === "turns") {
      if (!body.firstChild || body.dataset.for !== d.id) {
        body.replaceChildren(turnsView(d, step, setStep));
        body.dataset.for = d.id;
      }
      for (const card of body.querySelectorAll(".wb-turns > .wb-turn[data-index]")) card.classList.toggle("wb-current", Number(card.dataset.index) === step);
      body.querySelectorAll(".wb-strip-btn").forEach((b, i) => {
        b.classList.toggle("wb-on", i === step);
        b.style.background = i === step ? "" : rewardColour(d.steps[i].reward);
      });
      const cur = body.querySelector(".wb-turn.wb-current");
      if (scroll && cur) cur.scrollIntoView({ block: "nearest" });
    } else {
      body.dataset.for = "";
      body.replaceChildren(state.tab === "tokens" ? tokensView(d, step)
        : state.tab === "rewards" ? rewardsView(d, (i) => { state.tab = "turns"; drawDetail(); setStep(i); })
        : state.tab === "group" ? groupView(d, pick)
        : linksView(d, state.rows, send, pick));
    }
  }

  function drawCompare() {
    const c = model.get("compare_state");
    compareBox.replaceChildren(c && c.left ? compareView(c, send) : "");
  }

  root.addEventListener("keydown", (ev) => {
    const tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") {
      if (ev.key === "Escape") { ev.target.blur(); root.focus(); }
      return;
    }
    const keys = { j: () => move(1), ArrowDown: () => move(1), k: () => move(-1), ArrowUp: () => move(-1),
      l: () => setStep(model.get("step") + 1), ArrowRight: () => setStep(model.get("step") + 1),
      h: () => setStep(model.get("step") - 1), ArrowLeft: () => setStep(model.get("step") - 1),
      "/": () => toolbar.querySelector(".wb-search").focus(),
      t: () => { state.tab = state.tab === "tokens" ? "turns" : "tokens"; drawDetail(); } };
    if (keys[ev.key] && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      ev.stopPropagation();
      keys[ev.key]();
    }
  });

  model.on("change:table_json", () => { state.rows = decodeTable(readTable(model.get("table_json"))); refilter(false); });
  model.on("change:choices", drawToolbar);
  model.on("change:query", () => { state.query = model.get("query") || {}; refilter(false); });
  model.on("change:link_label", drawToolbar);
  model.on("change:notice", drawToolbar);
  model.on("change:selected", () => pick(model.get("selected")));
  model.on("change:detail", () => { const d = model.get("detail"); if (d && d.id) cache.set(d.id, d); drawDetail(); });
  model.on("change:step", () => drawStep(true));
  model.on("change:compare_state", drawCompare);
  model.on("change:pinned", () => { list.pinned = model.get("pinned"); list.draw(); });

  refilter(false);
  drawDetail();
  drawCompare();
  // a big run opens with its first page; the rest is read once this one is drawn
  if (state.rows.partial) send("table");
  requestAnimationFrame(() => { list.draw(); const pos = state.visible.findIndex((i) => state.rows.id[i] === model.get("selected")); if (pos >= 0) list.scrollTo(pos); });
  return () => {};
}

export default { render: renderViewer };
