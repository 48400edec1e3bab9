// A harness rollout's model-gateway calls (d.gateway, s.call: workbench/widgets/_calls.py): each trained call
// is a turn; a segment boundary shows its fork reason; auxiliary calls are listed as never trained on.

function gatewayLine(g) {
  if (!g) return null;
  const forks = Object.entries(g.forks || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  const aux = g.auxiliary.length;
  return h("div", { class: "wb-gateway-line" },
    badge("model gateway", "role"),
    ` ${g.calls} call${g.calls === 1 ? "" : "s"}: ${g.trained_calls} trained` + (aux ? `, ${aux} auxiliary (not trained)` : ""),
    ` · ${g.segments.length} segment${g.segments.length === 1 ? "" : "s"} · `,
    g.fork_count ? badge(`${g.fork_count} fork${g.fork_count === 1 ? "" : "s"} (${forks})`, "warn") : "no forks",
    ` · tools: ${g.tool_protocol || "—"} protocol`,
    ` · policy version${g.versions.length === 1 ? "" : "s"}: ${g.versions.length ? g.versions.join(", ") : "none recorded"}`);
}

function segmentBanner(c) {
  if (!c.segment_start) return null;
  const where = `segment ${c.segment + 1} of ${c.segments}`;
  if (!c.fork) return h("div", { class: "wb-segment", text: `▶ ${where} begins: the rollout's first call` });
  return h("div", { class: "wb-fork", "data-fork": c.fork },
    h("b", { text: `↳ fork: ${c.fork}` }),
    ` — ${where} begins here. ${c.fork_note}; so its prompt was rendered anew and trains as a row of its own ` +
    "(same advantage); no token id below the divergence is reused.");
}

function samplingText(sp) {
  const applied = Object.entries(sp.applied).map(([k, v]) => `${k} ${Array.isArray(v) ? JSON.stringify(v) : fmt(v)}`);
  return `sampling: ${applied.join(" · ") || "the policy's defaults"}` +
    (sp.overridden.length ? ` (set by the gateway, not as asked: ${sp.overridden.join(", ")})` : "");
}

function gatewayTurnCard(s, current, onPick) {
  const c = s.call;
  const sampled = s.tokens.mask.filter((m) => m === 1).length;
  const added = s.tokens.mask.length - sampled;
  const head = h("div", { class: "wb-turn-head", onclick: () => onPick(s.index) },
    h("b", { text: `call ${c.number} · turn ${s.index + 1}` }),
    c.model ? badge(`model ${c.model}`, "plain") : null,
    badge(s.version === null || s.version === undefined ? "policy version —" : `policy v${s.version}`, "plain"),
    s.finish ? badge(s.finish, "plain") : null,
    c.streamed ? badge("streamed", "plain") : null,
    c.delivered ? null : badge("not delivered", "warn"),
    h("span", { class: "wb-muted wb-turn-stats", text: `${fmt(c.latency_ms)} ms · ${c.endpoint}` }));
  const calls = c.tool_calls.map((t) => h("div", { class: "wb-tool wb-model-tool" }, h("code", { class: "wb-tool-sig", text: `${t.name}(${t.args})` })));
  return h("div", { class: "wb-turn wb-call" + (current ? " wb-current" : ""), "data-index": s.index },
    segmentBanner(c),
    head,
    s.think ? section("reasoning", "think", pre(s.think)) : null,
    section("sampled reply (mask 1: trained)", "raw", pre(s.raw || { text: "" })),
    calls.length ? section(`tool calls (${calls.length})`, "tools", calls) : null,
    section("then the harness sent (mask 0: not trained)", "output",
      c.added ? h("pre", { class: "wb-pre wb-added", text: c.added })
        : h("i", { class: "wb-muted", text: added ? `${added} tokens (no tokenizer on disk to decode them)` : "nothing: the rollout's last call in this segment" })),
    h("div", { class: "wb-muted wb-mask-line",
      text: `mask: ${sampled} sampled ids trained (1) · ${added} tokens the harness sent, not trained (0)` +
        (s.tokens.prompt !== null ? ` · segment prompt ${s.tokens.prompt} tokens` : "") }),
    h("div", { class: "wb-muted wb-sampling", text: samplingText(c.sampling) }));
}

function auxiliaryCard(g) {
  if (!g || !g.auxiliary.length) return null;
  return h("div", { class: "wb-turn wb-auxiliary" },
    h("b", { text: `auxiliary calls (${g.auxiliary.length}): recorded, never trained on` }),
    g.auxiliary.map((a) => h("div", { class: "wb-aux-call" },
      badge("not trained", "warn"),
      ` call ${a.number}` + (a.model ? ` · model ${a.model}` : "") +
        ` · ${a.prompt_tokens} prompt + ${a.sampled_tokens} sampled tokens · ${a.finish || "—"}`,
      a.text ? h("pre", { class: "wb-pre", text: a.text }) : null)));
}
