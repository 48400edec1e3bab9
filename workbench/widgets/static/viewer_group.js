// The group tab: the selected trajectory's group at its training step (rewards, spread, the
// advantages as trained, which rollouts stayed in the loss) and how many groups that step dropped.

function advantageText(a) {
  if (a === null || a === undefined) return "—";
  return Array.isArray(a) ? a.map((x) => fmt(x, 3)).join(" · ") : fmt(a, 4);
}

function groupView(d, pick) {
  const g = d.group;
  if (!g) return h("i", { class: "wb-muted wb-group-none", text: "no training step used this trajectory (lineage has no train_step)" });
  const per = g.advantages && g.advantages.some((a) => Array.isArray(a));
  const head = `step ${g.step}` + (g.iteration !== null && g.iteration !== undefined ? ` of iteration ${g.iteration}` : "")
    + ` · ${g.rollouts} rollout${g.rollouts === 1 ? "" : "s"} · mean ${fmt(g.mean, 3)} · spread (std) ${fmt(g.spread, 3)}`;
  return h("div", { class: "wb-group-view" },
    section(head, "group",
      h("table", { class: "wb-table wb-group-table" },
        h("tr", {}, ["rollout", "reward", per ? "advantage per turn" : "advantage", "in loss", "answer"].map((t) => h("th", { text: t }))),
        g.trajectory_ids.map((id, i) => h("tr", { class: id === g.me ? "wb-group-me" : "", "data-id": id },
          h("td", {}, id === g.me ? h("b", { text: `${id.slice(0, 8)} (this)` }) : h("button", { class: "wb-link", onclick: () => pick(id) }, id.slice(0, 8))),
          h("td", { style: { background: rewardColour(g.rewards[i]) }, text: fmt(g.rewards[i]) }),
          h("td", { class: "wb-group-adv", text: g.advantages ? advantageText(g.advantages[i]) : "not recorded" }),
          h("td", { text: g.kept ? (g.kept[i] ? "yes" : "dropped") : "yes" }),
          h("td", { text: g.answers[i] ?? "—" })))),
      g.note ? h("div", { class: "wb-muted", text: g.note }) : null,
      h("div", { class: "wb-muted", text: `${g.dropped_groups} group${g.dropped_groups === 1 ? "" : "s"} dropped by dynamic sampling at this step · viewer.groups(step=${g.step}) lists them all` })),
    section("this prompt at each training step that drew it", "across",
      h("table", { class: "wb-table wb-across-table" },
        h("tr", {}, ["iteration", "step", "rollouts", "mean reward", "answers"].map((t) => h("th", { text: t }))),
        (g.across_steps || []).map((r) => h("tr", { class: r.step === g.step && r.trajectory_ids.includes(g.me) ? "wb-group-me" : "" },
          h("td", { text: r.iteration ?? "—" }), h("td", { text: r.step }), h("td", { text: r.rollouts }),
          h("td", { style: { background: rewardColour(r.mean) }, text: fmt(r.mean, 3) }),
          h("td", { text: r.answers.map((a, i) => `${a ?? "—"} (${fmt(r.rewards[i])})`).join(" · ") }))))));
}
