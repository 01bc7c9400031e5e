/**
 * The dashboard's one script and one stylesheet, served from /assets with the page's nonce
 * allowing them. The script only swaps the `data-live` regions of the page with those of the
 * newest server render (HTML the server escaped), at the rate the user picked, and not while the
 * tab is hidden; and asks before a form marked `data-confirm` is sent.
 */
export const CLIENT_JS = `(() => {
  const rate = document.getElementById('ns-rate');
  const status = document.getElementById('ns-live-status');
  const body = document.body;
  const live = body.dataset.live === 'true';
  let source = null;
  const every = () => Number(localStorage.getItem('ns-rate') ?? '5000');
  if (rate) {
    rate.value = String(every());
    rate.addEventListener('change', () => { localStorage.setItem('ns-rate', rate.value); reconnect(); });
  }
  function close() { if (source) { source.close(); source = null; } if (status) status.textContent = 'paused'; }
  function reconnect() {
    close();
    if (!live || document.hidden || every() === 0) return;
    const url = body.dataset.liveUrl + '&every=' + every();
    source = new EventSource(url);
    if (status) status.textContent = 'connecting…';
    source.addEventListener('update', (ev) => {
      const doc = new DOMParser().parseFromString('<body>' + JSON.parse(ev.data).html + '</body>', 'text/html');
      for (const el of doc.querySelectorAll('[data-live]')) {
        const mine = document.querySelector('[data-live="' + CSS.escape(el.dataset.live) + '"]');
        if (mine) mine.replaceChildren(...el.childNodes);
      }
      if (status) status.textContent = 'live, updated ' + new Date().toLocaleTimeString();
      body.dataset.updates = String(Number(body.dataset.updates ?? '0') + 1);
    });
    source.addEventListener('error', () => { if (status) status.textContent = 'reconnecting…'; });
  }
  document.addEventListener('visibilitychange', reconnect);
  document.addEventListener('submit', (ev) => {
    const msg = ev.target.dataset && ev.target.dataset.confirm;
    if (msg && !confirm(msg)) ev.preventDefault();
  });
  reconnect();
})();
`;

export const CLIENT_CSS = `
:root { color-scheme: light dark; --fg:#1b1f24; --muted:#59636e; --bg:#fff; --line:#d1d9e0; --accent:#0969da; --bad:#cf222e; --warn:#9a6700; --ok:#1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --muted:#9198a1; --bg:#0d1117; --line:#3d444d; --accent:#4493f8; --bad:#f85149; --warn:#d29922; --ok:#3fb950; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:1rem; align-items:center; padding:.5rem 1rem; border-bottom:1px solid var(--line); flex-wrap:wrap; }
header nav a { margin-right:.75rem; color:var(--accent); text-decoration:none; }
header nav a.current { font-weight:700; color:var(--fg); }
header .who { margin-left:auto; color:var(--muted); } header .who label { display:inline-flex; flex-direction:row; gap:.3rem; align-items:center; }
main { padding:1rem; max-width:1400px; }
h1 { font-size:1.3rem; margin:.2rem 0 1rem; } h2 { font-size:1.05rem; margin:1.2rem 0 .5rem; }
table { border-collapse:collapse; width:100%; margin-bottom:1rem; }
th, td { text-align:left; padding:.3rem .5rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; }
pre { background:rgba(127,127,127,.12); padding:.6rem; overflow:auto; max-height:24rem; white-space:pre-wrap; word-break:break-all; }
.muted { color:var(--muted); } .bad { color:var(--bad); } .warn { color:var(--warn); } .ok { color:var(--ok); }
.state { padding:0 .4rem; border-radius:1rem; border:1px solid var(--line); font-size:.85em; }
.flash { padding:.5rem .8rem; border:1px solid var(--accent); border-radius:.3rem; margin-bottom:1rem; }
.error { border-color:var(--bad); }
form.inline { display:inline; }
form.filters { display:flex; gap:.5rem; flex-wrap:wrap; align-items:end; margin-bottom:1rem; }
label { display:flex; flex-direction:column; font-size:.85em; color:var(--muted); }
input, select, button { font:inherit; padding:.2rem .4rem; }
button { cursor:pointer; }
.cards { display:flex; gap:1rem; flex-wrap:wrap; } .card { border:1px solid var(--line); border-radius:.4rem; padding:.6rem .9rem; min-width:10rem; }
.card b { display:block; font-size:1.4rem; }
.chart img { max-width:100%; height:auto; }
progress { width:20rem; }
.step-graph { margin:0 0 1rem; overflow-x:auto; }
.step-graph rect { fill:var(--bg); stroke:var(--line); stroke-width:1.5; }
.step-graph .node:hover rect, .step-graph .node:focus rect { stroke:var(--accent); stroke-width:2.5; }
.step-graph text { fill:var(--fg); font-size:12px; } .step-graph text.name { font-weight:600; font-size:13px; } .step-graph text.sub { fill:var(--muted); }
.step-graph .edge { fill:none; stroke:var(--muted); stroke-width:1.5; } .step-graph .arrow { fill:var(--muted); }
.step-graph .step-succeeded rect { stroke:var(--ok); fill:rgba(26,127,55,.12); }
.step-graph .step-failed rect { stroke:var(--bad); fill:rgba(207,34,46,.12); }
.step-graph .step-running rect, .step-graph .step-ready rect { stroke:var(--accent); fill:rgba(9,105,218,.10); }
.step-graph .step-skipped rect, .step-graph .step-cancelled rect, .step-graph .step-blocked rect { stroke-dasharray:4 3; }
tr:target { background:rgba(9,105,218,.12); }
`;
