// Small DOM helpers shared by the viewer's files (no framework, no network).

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "html") el.innerHTML = v; // only for pygments output built in Python
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return el;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (typeof x !== "number") return String(x);
  return Number.isInteger(x) ? String(x) : x.toPrecision(digits).replace(/\.?0+$/, "");
}

function badge(text, kind) {
  return h("span", { class: `wb-badge wb-badge-${kind || "plain"}`, text });
}

function section(title, cls, ...body) {
  return h("div", { class: `wb-section wb-${cls}` }, h("div", { class: "wb-section-title", text: title }), ...body);
}

function pre(part, cls) {
  if (!part) return null;
  return h("div", { class: cls || "" },
    part.cut ? badge("cut for display", "warn") : null,
    h("pre", { class: "wb-pre", text: part.text }));
}

// Reward -> background: red (low) through yellow to green (high), over [0, 1].
function rewardColour(r) {
  if (r === null || r === undefined) return "transparent";
  const t = Math.max(0, Math.min(1, r));
  return `hsl(${Math.round(t * 120)}, 70%, 88%)`;
}
