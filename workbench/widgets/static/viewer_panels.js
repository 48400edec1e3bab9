// The selected trajectory's header, rewards, links and the side-by-side compare.

function header(d, act) {
  const rewards = Object.entries(d.rewards || {}).sort(([a], [b]) => (a === "total") - (b === "total") || a.localeCompare(b));
  return h("div", { class: "wb-header" },
    h("div", { class: "wb-header-top" },
      badge(d.role, "role"), badge(d.termination, d.termination === "submitted" ? "ok" : "plain"),
      d.hops !== null ? badge(`${d.hops} hop${d.hops === 1 ? "" : "s"}`, "hops") : null,
      d.policy ? badge(String(d.policy), "plain") : null,
      h("code", { class: "wb-id", text: d.id }),
      h("span", { class: "wb-actions" },
        d.origin ? h("button", { class: "wb-btn wb-origin", title: "the trajectory this one came from", onclick: () => act("origin") }, "↖ origin") : null,
        h("button", { class: "wb-btn wb-back", onclick: () => act("back") }, "↩ back"),
        h("button", { class: "wb-btn wb-pin", title: "remember this one to compare with", onclick: () => act("pin", d.id) }, "pin"),
        h("button", { class: "wb-btn wb-compare-btn", title: "side by side with the pinned one", onclick: () => act("compare") }, "compare with pinned"))),
    h("div", { class: "wb-q" }, h("b", { text: d.role === "proposer" ? "question written: " : "Q: " }), d.question),
    h("div", {}, h("b", { text: "answer: " }), d.final_answer ?? "—", h("b", { text: "  gold: " }), (d.golden || []).join(", ") || "—"),
    h("div", { class: "wb-reward-line" }, h("b", { text: "rewards: " }),
      rewards.length ? rewards.map(([k, v]) => h("span", { class: "wb-reward", "data-name": k, style: { background: k === "total" ? rewardColour(v) : null } }, `${k} = ${fmt(v)}`)) : h("i", { class: "wb-muted", text: "none stored" }),
      d.reward_spec ? h("span", { class: "wb-muted", text: ` (spec ${d.reward_spec})` }) : null),
    gatewayLine(d.gateway),
    d.error ? h("div", { class: "wb-err", text: d.error }) : null);
}

function rewardsView(d, onPick) {
  const perTurn = d.steps.map((s) => s.reward);
  const scale = Math.max(1e-9, ...perTurn.filter((r) => r !== null).map(Math.abs));
  return h("div", { class: "wb-rewards-view" },
    section(`components (spec ${d.reward_spec || "—"})`, "components",
      h("table", { class: "wb-table" }, h("tr", {}, h("th", { text: "component" }), h("th", { text: "value" })),
        Object.entries(d.rewards || {}).map(([k, v]) => h("tr", {}, h("td", { text: k }), h("td", { text: fmt(v, 4) }))))),
    section("per turn (Step.reward)", "per-turn",
      perTurn.some((r) => r !== null)
        ? h("div", { class: "wb-bars" }, perTurn.map((r, i) => h("div", { class: "wb-bar-col", title: `turn ${i + 1}: ${fmt(r, 4)}`, onclick: () => onPick(i) },
            h("div", { class: "wb-bar" + (r < 0 ? " wb-neg" : ""), style: { height: `${r === null ? 0 : Math.round(40 * Math.abs(r) / scale)}px` } }),
            h("div", { class: "wb-muted", text: String(i + 1) }))))
        : h("i", { class: "wb-muted", text: "not scored per turn" })),
    section("history (oldest first)", "history",
      d.history.length ? h("table", { class: "wb-table" },
        h("tr", {}, ["when", "spec", "total", "by", "reason", "components"].map((t) => h("th", { text: t }))),
        d.history.map((r) => h("tr", {},
          h("td", { text: r.at ? new Date(r.at * 1000).toISOString().replace("T", " ").slice(0, 19) : "—" }),
          h("td", { text: r.spec || "—" }), h("td", { text: fmt(r.total, 4) }), h("td", { text: r.author || "—" }),
          h("td", { text: r.reason || "" }),
          h("td", { text: Object.entries(r.rewards || {}).map(([k, v]) => `${k}=${fmt(v)}`).join(", ") }))))
        : h("i", { class: "wb-muted", text: "no rewards recorded" })));
}

function linksView(d, rows, act, pick) {
  const siblings = [];
  if (rows && d.task_id) for (let i = 0; i < rows.n; i++) if (rows.task_id[i] === d.task_id && rows.id[i] !== d.id) siblings.push(i);
  const link = (id, text) => h("button", { class: "wb-link", "data-id": id, onclick: () => act("child", id) }, text);
  return h("div", { class: "wb-links-view" },
    section("came from", "origin", d.origin
      ? h("div", {}, d.origin.stored ? h("button", { class: "wb-link wb-origin-link", onclick: () => act("origin") }, `${d.origin.role} ${d.origin.id.slice(0, 8)}`) : `${d.origin.id} (not in this run)`,
          d.origin.question ? h("span", { class: "wb-muted", text: ` ${d.origin.question}` }) : null)
      : h("i", { class: "wb-muted", text: "no origin" })),
    section(`attempts on its question (${d.children.length})`, "children", d.children.length
      ? h("div", {},
          d.difficulty_from ? h("div", { class: "wb-muted wb-difficulty-from", text: `★ ${d.difficulty_from}` }) : null,
          h("table", { class: "wb-table wb-attempts" },
            h("tr", {}, ["attempt", "phase", "iter", "step", "spec", "reward", "end", "answer"].map((t) => h("th", { text: t }))),
            d.children.map((c) => h("tr", { "data-phase": c.phase || "" },
              h("td", {}, link(c.id, c.id.slice(0, 8)), c.difficulty ? h("span", { title: "a difficulty probe: the proposer's difficulty reads its verdict", text: " ★" }) : null),
              h("td", { text: c.phase || "—" }), h("td", { text: c.iteration ?? "—" }), h("td", { text: c.step ?? "—" }),
              h("td", { text: c.spec || "—" }),
              h("td", { style: { background: rewardColour(c.reward) }, text: fmt(c.reward) }),
              h("td", { text: c.termination || "" }), h("td", { text: c.answer || "—" })))))
      : h("i", { class: "wb-muted", text: "none" })),
    section(`same task, other trajectories (${siblings.length})`, "siblings", siblings.length
      ? h("table", { class: "wb-table" }, siblings.slice(0, 50).map((i) => h("tr", {},
          h("td", {}, h("button", { class: "wb-link", onclick: () => pick(rows.id[i]) }, rows.id[i].slice(0, 8))),
          h("td", { text: rows.policy[i] || "" }), h("td", { style: { background: rewardColour(rows.reward[i]) }, text: fmt(rows.reward[i]) }),
          h("td", {}, h("button", { class: "wb-btn wb-compare-sibling", onclick: () => act("compare", rows.id[i]) }, "compare")))))
      : h("i", { class: "wb-muted", text: "none" })));
}

function divergenceOf(a, b) {
  const sig = (s) => `${s.code ? s.code.text : (s.raw ? s.raw.text : "")}\u0000${s.shown ? s.shown.text : ""}`.trim();
  const n = Math.min(a.steps.length, b.steps.length);
  for (let i = 0; i < n; i++) if (sig(a.steps[i]) !== sig(b.steps[i])) return i;
  return a.steps.length === b.steps.length ? null : n;
}

function compareView(c, act) {
  const { left, right } = c;
  const div = c.divergence === undefined ? divergenceOf(left, right) : c.divergence;
  const side = (d) => h("div", { class: "wb-cmp-head" }, header(d, () => {}));
  const n = Math.max(left.steps.length, right.steps.length);
  const rowsEl = [];
  for (let i = 0; i < n; i++) {
    const cls = "wb-cmp-row" + (i === div ? " wb-diverge" : i < (div ?? n) ? " wb-same" : "");
    rowsEl.push(h("div", { class: cls, "data-index": i },
      i === div ? h("div", { class: "wb-diverge-mark", text: `▼ first divergent turn: ${i + 1}` }) : null,
      h("div", { class: "wb-cmp-cols" },
        h("div", { class: "wb-cmp-col" }, left.steps[i] ? turnCard(left.steps[i], false, () => {}) : h("i", { class: "wb-muted", text: "(ended)" })),
        h("div", { class: "wb-cmp-col" }, right.steps[i] ? turnCard(right.steps[i], false, () => {}) : h("i", { class: "wb-muted", text: "(ended)" })))));
  }
  return h("div", { class: "wb-compare" },
    h("div", { class: "wb-cmp-bar" },
      h("b", { text: div === null ? "the two trajectories are identical turn by turn" : `they diverge at turn ${div + 1}` }),
      c.same_task === false ? badge("different tasks", "warn") : null,
      h("button", { class: "wb-btn wb-close-compare", onclick: () => act("close_compare") }, "✕ close compare")),
    h("div", { class: "wb-cmp-cols" }, h("div", { class: "wb-cmp-col" }, side(left)), h("div", { class: "wb-cmp-col" }, side(right))),
    rowsEl);
}
