// The offline report's stand-in for an anywidget model: the same get/set/on/save_changes/send
// over data embedded in the page, so the viewer's code runs unchanged without a kernel.

function staticModel(state, details, links) {
  const listeners = {};
  const dirty = new Set();
  const history = [];
  const emit = (...keys) => keys.forEach((k) => (listeners["change:" + k] || []).forEach((f) => f()));
  const detailOf = (id) => details[id] || { id, role: "", termination: "", question: "(not included in this report)",
    golden: [], rewards: {}, history: [], children: [], steps: [], hops: null, origin: null };
  const show = (id) => {
    state.selected = id; state.detail = detailOf(id); state.step = 0;
    emit("selected", "detail", "step");
  };
  const model = {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; dirty.add(k); },
    on: (ev, f) => { (listeners[ev] = listeners[ev] || []).push(f); },
    off: () => {},
    save_changes: () => {
      if (dirty.has("selected") && (!state.detail || state.detail.id !== state.selected)) show(state.selected);
      dirty.clear();
    },
    send: (msg) => {
      const cur = state.selected;
      const act = {
        pin: () => { state.pinned = msg.id || cur; emit("pinned"); },
        compare: () => {
          const other = msg.id || state.pinned;
          if (!other) { state.notice = "nothing pinned to compare with; pin one first"; emit("notice"); return; }
          const left = detailOf(other), right = detailOf(cur);
          state.compare_state = { left, right, same_task: left.task_id === right.task_id };
          emit("compare_state");
        },
        close_compare: () => { state.compare_state = {}; emit("compare_state"); },
        child: () => { history.push(cur); show(msg.id); },
        origin: () => { const o = state.detail && state.detail.origin; if (o && o.stored) { history.push(cur); show(o.id); } },
        back: () => { if (history.length) show(history.pop()); },
        clear_link: () => { state.link_label = ""; delete state.query.ids; state.query = Object.assign({}, state.query); emit("link_label", "query"); },
        link: () => { state.link_label = msg.label; state.query = { ids: links[msg.key] || [] }; emit("link_label", "query");
          const first = (links[msg.key] || [])[0]; if (first) show(first); },
      }[msg.action];
      if (act) act();
    },
  };
  return model;
}
