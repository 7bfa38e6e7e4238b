// The layoutproof playground: reads the form, asks the JSON API, draws the answers.
// The whole view lives in the URL's fragment (#expr=...&tab=...), so a link reproduces it.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const FIELDS = ["expr", "assume", "values", "tv", "thr_id", "color", "bytes", "other"];
  const state = { tab: "verdicts", check: "", analysis: "", afields: {}, value: "", seq: 0, drawn: "" };
  const latest = { check: 0, explain: 0, analyze: 0, export: 0 };
  let analyses = [];
  let timer = null;
  let applying = false;

  // ------------------------------------------------------------------ URL state
  function toHash() {
    const p = new URLSearchParams();
    for (const f of FIELDS) {
      const v = $(f).value;
      if (v !== "" && !(f === "bytes" && v === "4")) p.set(f, v);
    }
    if (state.tab && state.tab !== "verdicts") p.set("tab", state.tab);
    if (state.check) p.set("check", state.check);
    if (state.tab === "analyses" && state.analysis) {
      p.set("analysis", state.analysis);
      for (const [k, v] of Object.entries(state.afields)) if (v !== "") p.set("a." + k, v);
    }
    return "#" + p.toString();
  }

  function saveHash() {
    const h = toHash();
    if (location.hash !== h) history.replaceState(null, "", h);
  }

  function fromHash() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ""));
    applying = true;
    for (const f of FIELDS) {
      if (p.has(f)) $(f).value = p.get(f);
      else if (f !== "expr") $(f).value = f === "bytes" ? "4" : "";
    }
    state.tab = p.get("tab") || (p.get("check") ? "verdicts" : state.tab);
    state.check = p.get("check") || "";
    state.analysis = p.get("analysis") || "";
    state.afields = {};
    for (const [k, v] of p.entries()) if (k.startsWith("a.")) state.afields[k.slice(2)] = v;
    applying = false;
    return p;
  }

  // ------------------------------------------------------------------ requests
  async function api(route, body) {
    let res;
    try {
      res = await fetch("/api/" + route, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (e) {
      return { ok: false, status: 0, body: { error: { type: "NetworkError", message: String(e) } } };
    }
    let data;
    try {
      data = await res.json();
    } catch (e) {
      data = { error: { type: "BadAnswer", message: "the server's answer is not JSON" } };
    }
    return { ok: res.ok, status: res.status, body: data };
  }

  function common() {
    return { expr: $("expr").value, assume: $("assume").value };
  }

  // ------------------------------------------------------------------ drawing
  function putSvg(container, svgText) {
    container.replaceChildren();
    if (!svgText) return null;
    const doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
    const root = doc.documentElement;
    if (!root || root.nodeName.toLowerCase() !== "svg") return null;
    for (const s of root.querySelectorAll("script, foreignObject")) s.remove();
    const svg = document.importNode(root, true);
    container.appendChild(svg);
    return svg;
  }

  function errorText(err) {
    if (!err) return "";
    let t = (err.type || "Error") + ": " + (err.message || "");
    if (err.condition) t += "\ncondition: " + err.condition;
    if (err.witness !== undefined && err.witness !== null) t += "\nwitness: " + JSON.stringify(err.witness);
    return t;
  }

  function showError(err) {
    const box = $("error");
    if (!err) {
      box.hidden = true;
      box.textContent = "";
      return;
    }
    box.hidden = false;
    box.textContent = errorText(err);
    if (err.condition) box.dataset.condition = err.condition;
    else delete box.dataset.condition;
  }

  function rowsOf(svg) {
    let m = 0;
    for (const c of svg.querySelectorAll("g.cell")) m = Math.max(m, Number(c.dataset.row) + 1);
    return m;
  }

  function hoverText(cell, rows) {
    const d = cell.dataset;
    const r = Number(d.row), c = Number(d.col);
    if (d.thread !== undefined) {
      return `tile (${r},${c}) = index ${d.index}  \u2194  thread ${d.thread}, value ${d.value}`;
    }
    const coord = r + c * rows;
    let t = `coordinate (${r},${c}) = ${coord}  \u2194  offset ${d.offset}`;
    if (d.bank !== undefined) t += `, bank ${d.bank}`;
    return t;
  }

  function attachHover(container) {
    const svg = container.querySelector("svg");
    if (!svg) return;
    const rows = rowsOf(svg);
    svg.addEventListener("mouseover", (ev) => {
      const cell = ev.target.closest && ev.target.closest("g.cell");
      if (!cell) return;
      for (const c of svg.querySelectorAll("g.cell.hot")) c.classList.remove("hot");
      cell.classList.add("hot");
      $("hover").textContent = hoverText(cell, rows);
    });
  }

  function markWitness(container, cell) {
    for (const c of container.querySelectorAll("g.cell.witness")) c.classList.remove("witness");
    if (!cell) return false;
    const g = container.querySelector(`g.cell[data-row="${cell[0]}"][data-col="${cell[1]}"]`);
    if (!g) return false;
    g.classList.add("witness");
    return true;
  }

  // ------------------------------------------------------------------ evaluate and draw
  async function runEval() {
    clearTimeout(timer);
    saveHash();
    const body = Object.assign(common(), {
      values: $("values").value,
      tv: $("tv").value,
      thr_id: $("thr_id").value,
      color: $("color").value,
      bytes: Number($("bytes").value) || 4,
    });
    const key = JSON.stringify(body);
    if (key === state.drawn) return null; // this view is drawn already
    state.drawn = key;
    const seq = ++state.seq;
    document.body.classList.add("busy");
    const r = await api("eval", body);
    if (seq !== state.seq) return r;
    document.body.classList.remove("busy");
    const d = r.body;
    $("notes").replaceChildren();
    if (!r.ok) {
      if (r.status === 0 || r.status >= 500) state.drawn = "";
      showError(d.error);
      $("value").textContent = "";
      $("timing").textContent = "";
      putSvg($("picture"), null);
      $("before-fig").hidden = true;
      $("picture-fig").hidden = true;
      $("picture-fig").dataset.state = "error";
      state.value = "";
      state.drawnLayout = "";
      return r;
    }
    showError(null);
    state.value = d.value;
    state.drawnLayout = d.drawn || "";
    $("value").textContent = d.value;
    $("timing").textContent = d.seconds !== undefined ? `${(d.seconds * 1000).toFixed(1)} ms` : "";
    for (const n of d.notes || []) {
      const li = document.createElement("li");
      li.textContent = n;
      $("notes").appendChild(li);
    }
    if (d.native) {
      const li = document.createElement("li");
      li.textContent = "read as " + d.native + (d.facts && d.facts.length ? " (assuming " + d.facts.join(", ") + ")" : "");
      $("notes").appendChild(li);
    }
    putSvg($("picture"), d.svg || null);
    attachHover($("picture"));
    $("picture-caption").textContent = d.picture === "tv" ? "thread-value layout" : d.kind === "composed" ? "after the swizzle" : "offsets";
    $("picture-fig").dataset.state = d.svg ? "drawn" : "empty";
    $("picture-fig").hidden = !d.svg;
    if (d.before_svg) {
      $("before-fig").hidden = false;
      putSvg($("before"), d.before_svg);
      attachHover($("before"));
    } else {
      $("before-fig").hidden = true;
      $("before").replaceChildren();
    }
    $("btn-post").disabled = !d.postcondition;
    $("btn-admissible").disabled = !d.operation;
    if (state.tab === "export") runExport();
    return r;
  }

  // ------------------------------------------------------------------ verdicts
  function setStatus(el, status) {
    el.textContent = status;
    el.className = "status status-" + status;
  }

  async function runCheck(kind) {
    state.check = kind;
    saveHash();
    const body = Object.assign(common(), { kind: kind, other: $("other").value });
    const box = $("verdict");
    box.hidden = false;
    setStatus($("verdict-status"), "checking");
    $("verdict-text").textContent = "";
    $("witness-picture").replaceChildren();
    const mine = ++latest.check;
    const r = await api("check", body);
    if (mine !== latest.check) return r; // a newer check was asked for
    const d = r.body;
    markWitness($("picture"), null);
    if (!r.ok) {
      setStatus($("verdict-status"), "error");
      $("verdict-text").textContent = errorText(d.error);
      box.dataset.status = "error";
      return r;
    }
    setStatus($("verdict-status"), d.status);
    box.dataset.status = d.status;
    $("verdict-text").textContent = d.explain || d.text || "";
    if (d.witness_svg) putSvg($("witness-picture"), d.witness_svg);
    if (d.witness_cell && (d.witness_layout === state.value || d.witness_layout === state.drawnLayout)) {
      markWitness($("picture"), d.witness_cell);
    }
    return r;
  }

  // ------------------------------------------------------------------ explain
  async function runExplain() {
    const mine = ++latest.explain;
    const r = await api("explain", common());
    if (mine !== latest.explain) return r;
    const d = r.body;
    $("explain-out").hidden = false;
    $("repairs").replaceChildren();
    $("explain-code").replaceChildren();
    $("explain-picture").replaceChildren();
    $("repairs-head").hidden = true;
    if (!r.ok) {
      setStatus($("explain-status"), "error");
      $("explain-text").textContent = errorText(d.error);
      return r;
    }
    setStatus($("explain-status"), d.status);
    $("explain-text").textContent = d.text || "";
    if (d.svg) putSvg($("explain-picture"), d.svg);
    for (const rep of d.repairs || []) {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = "#" + new URLSearchParams({ expr: rep.expression }).toString();
      a.textContent = rep.expression;
      li.append(rep.text + " \u2192 ", a, ` = ${rep.result} (post-condition ${rep.check})`);
      $("repairs").appendChild(li);
    }
    $("repairs-head").hidden = !(d.repairs && d.repairs.length);
    if (d.code) {
      for (const [k, v] of Object.entries(d.code)) {
        const h = document.createElement("h4");
        h.textContent = "assumptions as " + k;
        const pre = document.createElement("pre");
        pre.textContent = v;
        $("explain-code").append(h, pre);
      }
    }
    return r;
  }

  // ------------------------------------------------------------------ analyses
  function buildAnalysisForm() {
    const a = analyses.find((x) => x.name === $("analysis").value) || analyses[0];
    if (!a) return;
    state.analysis = a.name;
    $("analysis-doc").textContent = a.title + ": " + a.doc;
    const form = $("analysis-form");
    form.replaceChildren();
    for (const f of a.fields) {
      const label = document.createElement("label");
      label.textContent = f.label + " ";
      label.title = f.help || "";
      let input;
      if (f.kind === "choice") {
        input = document.createElement("select");
        for (const c of f.choices) {
          const o = document.createElement("option");
          o.value = o.textContent = c;
          input.appendChild(o);
        }
      } else {
        input = document.createElement("input");
        input.type = f.kind === "int" ? "number" : "text";
        input.spellcheck = false;
        if (f.kind === "layout") input.size = 34;
      }
      input.name = f.name;
      input.id = "a-" + f.name;
      const given = state.afields[f.name];
      input.value = given !== undefined ? given : f.default === null ? "" : String(f.default);
      input.addEventListener("change", () => {
        state.afields[f.name] = input.value;
        saveHash();
      });
      label.appendChild(input);
      form.appendChild(label);
    }
  }

  async function loadAnalyses() {
    try {
      const res = await fetch("/api/analyses");
      analyses = (await res.json()).analyses || [];
    } catch (e) {
      analyses = [];
    }
    const sel = $("analysis");
    sel.replaceChildren();
    for (const a of analyses) {
      const o = document.createElement("option");
      o.value = a.name;
      o.textContent = a.title;
      sel.appendChild(o);
    }
    if (state.analysis) sel.value = state.analysis;
    buildAnalysisForm();
  }

  async function runAnalysis() {
    const a = analyses.find((x) => x.name === $("analysis").value);
    if (!a) return null;
    const fields = {};
    state.afields = {};
    for (const f of a.fields) {
      const v = $("a-" + f.name).value;
      state.afields[f.name] = v;
      if (v === "") continue;
      fields[f.name] = f.kind === "int" ? Number(v) : v;
    }
    state.analysis = a.name;
    saveHash();
    const mine = ++latest.analyze;
    const r = await api("analyze", { analysis: a.name, fields: fields, assume: $("assume").value });
    if (mine !== latest.analyze) return r;
    const d = r.body;
    $("analysis-out").hidden = false;
    $("analysis-picture").replaceChildren();
    if (!r.ok) {
      setStatus($("analysis-status"), "error");
      $("analysis-text").textContent = errorText(d.error);
      return r;
    }
    setStatus($("analysis-status"), d.status);
    $("analysis-text").textContent = [d.text || d.line, d.summary, d.pattern, d.cpp, d.dsl]
      .filter(Boolean)
      .join("\n\n");
    if (d.svg) putSvg($("analysis-picture"), d.svg);
    return r;
  }

  // ------------------------------------------------------------------ export
  async function runExport() {
    const mine = ++latest.export;
    const r = await api("export", common());
    if (mine !== latest.export) return r;
    for (const k of ["cpp", "dsl", "pycute", "triton"]) {
      const pre = $("export-" + k);
      if (!r.ok) {
        pre.textContent = errorText(r.body.error);
        pre.className = "unavailable";
        continue;
      }
      const e = r.body[k] || {};
      pre.textContent = e.code !== undefined ? e.code : "not available: " + (e.error || "");
      pre.className = e.code !== undefined ? "" : "unavailable";
    }
    return r;
  }

  // ------------------------------------------------------------------ tabs
  function showTab(name) {
    state.tab = name;
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const p of document.querySelectorAll(".panel")) p.hidden = p.dataset.panel !== name;
    if (name !== "verdicts") state.check = "";
    saveHash();
    if (name === "export") runExport();
  }

  // ------------------------------------------------------------------ wiring
  function soon() {
    if (applying) return;
    clearTimeout(timer);
    timer = setTimeout(runEval, 350);
  }

  async function applyHash() {
    fromHash();
    showTab(state.tab);
    if (state.analysis && analyses.length) {
      $("analysis").value = state.analysis;
      buildAnalysisForm();
    }
    const check = state.check;
    await runEval();
    if (check && state.tab === "verdicts") await runCheck(check);
    if (state.tab === "explain") await runExplain();
    if (state.tab === "analyses" && state.analysis) await runAnalysis();
  }

  async function copyLink() {
    saveHash();
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      $("share-status").textContent = "link copied";
    } catch (e) {
      $("share-status").textContent = url;
    }
    $("share").dataset.url = url;
  }

  document.addEventListener("DOMContentLoaded", async () => {
    $("run").addEventListener("click", runEval);
    for (const f of ["expr", "assume", "values", "tv", "thr_id", "color", "bytes"]) $(f).addEventListener("input", soon);
    $("other").addEventListener("change", saveHash);
    $("expr").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        runEval();
      }
    });
    $("btn-admissible").addEventListener("click", () => runCheck("admissible"));
    $("btn-post").addEventListener("click", () => runCheck("post"));
    $("btn-equal").addEventListener("click", () => runCheck("equal"));
    $("btn-explain").addEventListener("click", runExplain);
    $("btn-analyze").addEventListener("click", runAnalysis);
    $("analysis").addEventListener("change", () => {
      state.afields = {};
      buildAnalysisForm();
      saveHash();
    });
    $("share").addEventListener("click", copyLink);
    for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
    window.addEventListener("hashchange", () => {
      if (location.hash !== toHash()) applyHash();
    });
    await loadAnalyses();
    await applyHash();
    document.body.dataset.ready = "1";
  });
})();
