// One trajectory's turns as the model saw them, and one turn's tokens.

function outputPart(p) {
  if (p.kind === "image") return h("img", { class: "wb-image", src: p.src, alt: "output image" });
  if (p.kind === "html") {
    // kernel HTML runs in a sandboxed frame: shown, never able to script the notebook
    return h("iframe", { class: "wb-html-frame", sandbox: "", srcdoc: p.html, title: "HTML output" });
  }
  return pre(p, `wb-out wb-out-${p.kind}`);
}

function toolCall(c) {
  return h("div", { class: "wb-tool" + (c.error ? " wb-tool-error" : "") },
    h("code", { class: "wb-tool-sig", text: `${c.name}(${c.args})` }),
    h("span", { class: "wb-muted", text: ` ${fmt(c.ms, 3)}\u00a0ms` }),  // a no-break space: "72.4 ms" never wraps
    c.error ? h("pre", { class: "wb-pre wb-err", text: c.error }) : h("pre", { class: "wb-pre wb-tool-result", text: c.result }));
}

function notepadTable(entries) {
  if (!entries.length) return h("i", { class: "wb-muted", text: "empty" });
  return h("table", { class: "wb-notepad" }, entries.map((e) =>
    h("tr", { class: `wb-note wb-${e.state}`, "data-key": e.key },
      h("td", { class: "wb-note-key", text: e.key }),
      h("td", {}, h("pre", { class: "wb-pre", text: e.text })),
      h("td", { class: "wb-muted", text: e.state === "same" ? "" : e.state }))));
}

function turnCard(s, current, onPick) {
  if (s.call) return gatewayTurnCard(s, current, onPick);  // a model-gateway call (viewer_calls.js)
  const stats = Object.entries(s.stats).map(([k, v]) => `${k} ${fmt(v)}`).join(" · ");
  const head = h("div", { class: "wb-turn-head", onclick: () => onPick(s.index) },
    h("b", { text: `turn ${s.index + 1}` }),
    s.reward !== null && s.reward !== undefined ? h("span", { class: "wb-turn-reward", style: { background: rewardColour(s.reward) }, text: `reward ${fmt(s.reward)}` }) : null,
    s.finish ? badge(s.finish, "plain") : null,
    s.version !== null && s.version !== undefined ? badge(`policy v${s.version}`, "plain") : null,
    s.flags.map((f) => badge(f, "bad")),
    s.timed_out ? badge("timed out", "bad") : null,
    h("span", { class: "wb-muted wb-turn-stats", text: stats }));
  return h("div", { class: "wb-turn" + (current ? " wb-current" : ""), "data-index": s.index },
    s.trimmed ? h("div", { class: "wb-trim", text: "✂ context trimmed before this turn: earlier turns were dropped; the model saw the task, its notepad and the last output" }) : null,
    head,
    s.think ? section("think", "think", pre(s.think)) : null,
    s.raw ? section("generated text (no think/code tags)", "raw", pre(s.raw)) : null,
    section("code", "code", s.code_html ? h("div", { class: "wb-code-src", html: s.code_html }) : h("i", { class: "wb-muted", text: "no code" })),
    s.tools.length ? section(`host calls (${s.tools.length})`, "tools", s.tools.map(toolCall)) : null,
    section("output", "output",
      s.output_cut ? badge("output truncated", "warn") : null,
      s.outputs.length ? s.outputs.map(outputPart) : h("i", { class: "wb-muted", text: "no output" }),
      s.shown ? h("details", { class: "wb-shown" }, h("summary", { text: "shown to the model" }), pre(s.shown)) : null,
      s.budget ? h("div", { class: "wb-budget", text: `budget notice: ${s.budget}` }) : null),
    section("notepad (tinted: what this turn changed)", "notepad", notepadTable(s.notepad)));
}

function turnsView(d, step, onPick) {
  const strip = h("div", { class: "wb-strip" }, d.steps.map((s) =>
    h("button", { class: "wb-strip-btn" + (s.index === step ? " wb-on" : "") + (s.trimmed && !s.call ? " wb-strip-trim" : "")
        + (s.call && s.call.fork ? " wb-strip-fork" : ""),
      style: { background: s.index === step ? null : rewardColour(s.reward) },
      title: `turn ${s.index + 1}` + (s.reward !== null ? ` · reward ${fmt(s.reward)}` : "") + (s.call && s.call.fork ? ` · fork: ${s.call.fork}` : ""),
      onclick: () => onPick(s.index), text: String(s.index + 1) })));
  const task = h("details", { class: "wb-turn wb-task", open: !d.prompt },
    h("summary", {}, h("b", { text: d.prompt ? "proposer prompt (the instructions it was given)" : "task" })),
    h("pre", { class: "wb-pre", text: d.prompt || d.question }));
  if (!d.steps.length) return h("div", {}, task, h("i", { class: "wb-muted", text: "this trajectory has no turns yet" }));
  return h("div", { class: "wb-turns" }, strip, task, d.steps.map((s) => turnCard(s, s.index === step, onPick)), auxiliaryCard(d.gateway));
}

// Background for a trained token: its probability exp(logprob), from red (unlikely) to white.
function heat(lp) {
  if (lp === null || lp === undefined) return "hsl(210, 80%, 90%)";
  const p = Math.exp(Math.max(-20, Math.min(0, lp)));
  return `hsl(${Math.round(p * 60)}, 90%, ${Math.round(62 + p * 33)}%)`;
}

// `raw`: the value is the model's own logprob, so 0 means the model was certain; `processed`: the
// sampled distribution's logprob of the same token, shown beside a raw one (null when not stored).
function tokenTitle(id, i, m, lp, raw, processed) {
  const what = m ? "mask 1 (trained)" : "mask 0 (observation, not trained)";
  const kind = raw ? "raw logprob" : "logprob";
  const value = !m ? "" : lp === null || lp === undefined ? " · no logprob"
    : lp === 0 && !raw ? " · logprob exactly 0 (p = 1: certain, or one candidate left by a filter)"
    : ` · ${kind} ${lp.toFixed(3)} (p ${Math.exp(lp).toFixed(3)})`;
  const beside = m && raw && processed !== null && processed !== undefined ? ` · processed ${processed.toFixed(3)}` : "";
  return `id ${id} · position ${i} · ${what}${value}${beside}`;
}

function tokenClass(m, lp, raw) {
  if (!m) return "wb-tok wb-tok-obs";
  return "wb-tok wb-tok-trained" + (lp === null || lp === undefined ? " wb-tok-nolp" : lp === 0 && !raw ? " wb-tok-zero" : "");
}

function tokensView(d, step) {
  const s = d.steps[step];
  if (!s) return h("i", { class: "wb-muted", text: "no turn selected" });
  const t = s.tokens;
  const raw = t.showing === "raw";
  const valued = t.logprobs.filter((lp, i) => t.mask[i] === 1 && lp !== null && (raw || lp !== 0));
  const mean = valued.length ? valued.reduce((a, b) => a + b, 0) / valued.length : null;
  const spans = t.ids.map((id, i) => {
    const m = t.mask[i], lp = t.logprobs[i];
    const label = t.pieces ? t.pieces[i].replace(/\n/g, "⏎") || "∅" : String(id);
    const heated = m && lp !== null && lp !== undefined && (raw || lp !== 0);
    return h("span", { class: tokenClass(m, lp, raw), "data-mask": m, "data-id": id, style: heated ? { background: heat(lp) } : null,
      title: tokenTitle(id, i, m, lp, raw, t.processed ? t.processed[i] : null) }, label);
  });
  const n1 = t.mask.filter((m) => m === 1).length;
  return h("div", { class: "wb-tokens-view" },
    h("div", { class: "wb-legend" },
      h("span", { class: "wb-tok wb-tok-trained", style: { background: heat(-0.01) }, text: "trained, p near 1" }),
      h("span", { class: "wb-tok wb-tok-trained", style: { background: heat(-3) }, text: "trained, unlikely" }),
      h("span", { class: "wb-tok wb-tok-trained wb-tok-zero", text: "logprob exactly 0 (ambiguous)" }),
      h("span", { class: "wb-tok wb-tok-trained wb-tok-nolp", text: "no logprob" }),
      h("span", { class: "wb-tok wb-tok-obs", text: "observation (not trained)" })),
    h("div", { class: "wb-muted wb-lp-note" }, h("b", { text: `showing: ${t.logprob_kind} logprobs. ` }), t.logprob_note + "."),
    h("div", { class: "wb-muted", text: `turn ${step + 1}: ${n1} trained + ${t.ids.length - n1} observation tokens` +
        (mean !== null ? ` · mean ${raw ? "raw " : ""}logprob ${mean.toFixed(3)} over the ${valued.length} tokens with ${raw ? "one" : "a non-zero value"}` : "") +
        (t.prompt !== null ? ` · context rebuilt here (${t.prompt} prompt tokens)` : "") +
        (t.decoded_with ? ` · decoded with ${t.decoded_with} (hover for id, position, mask, logprob)` : " · token ids (no tokenizer found on disk)") }),
    s.call ? h("div", { class: "wb-muted wb-call-mask", text: `model-gateway call ${s.call.number}: mask 1 exactly on the ids the model sampled, ` +
      "0 on what the harness sent next (tool results and new messages, framed by the chat template)" +
      (s.call.segment_start ? ` · segment ${s.call.segment + 1} of ${s.call.segments} starts here` + (s.call.fork ? ` (fork: ${s.call.fork})` : "") : "") }) : null,
    t.ids.length ? h("div", { class: "wb-token-ids" + (t.pieces ? " wb-decoded" : "") }, spans) : h("i", { class: "wb-muted", text: "no token ids stored for this turn (scripted or text-only policy)" }));
}
