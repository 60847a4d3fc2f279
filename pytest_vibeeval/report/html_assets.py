"""The HTML report's stylesheet and script, inlined into every page (the report is one
self-contained file)."""

CSS = """
:root { --fg: #1f2328; --muted: #656d76; --bg: #fff; --line: #d0d7de; --soft: #f6f8fa;
  --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9; --warn: #9a6700;
  --warn-bg: #fff8c5; --bar: #0969da; --neg: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117; --line: #30363d; --soft: #161b22;
    --pass: #3fb950; --pass-bg: #12261e; --fail: #f85149; --fail-bg: #2d1517; --warn: #d29922;
    --warn-bg: #272115; --bar: #2f81f7; --neg: #f85149; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 16px 24px 48px; color: var(--fg);
  background: var(--bg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 32px 0 2px; padding-top: 12px; border-top: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.muted { color: var(--muted); }
.meta { margin: 0; color: var(--muted); }
.banner { padding: 6px 10px; border-radius: 6px; margin: 8px 0; }
.banner.warn { background: var(--warn-bg); color: var(--warn); }
.banner.bad { background: var(--fail-bg); color: var(--fail); }
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
thead th { background: var(--soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.good { color: var(--pass); } .bad { color: var(--fail); } .warn { color: var(--warn); }
.overview { display: flex; flex-wrap: wrap; gap: 8px 32px; align-items: flex-start; }
.chart { display: grid; grid-template-columns: minmax(80px, max-content) minmax(160px, 1fr) max-content;
  gap: 4px 10px; align-items: center; margin: 4px 0; flex: 1 1 380px; max-width: 640px; padding-top: 8px; }
.track { position: relative; height: 14px; background: var(--soft); border-radius: 3px; }
.bar { position: absolute; top: 0; bottom: 0; background: var(--bar); border-radius: 3px; }
.bar.neg { background: var(--neg); }
.zero { position: absolute; top: -2px; bottom: -2px; width: 1px; background: var(--muted); }
.vibe-grid td.cell { text-align: center; min-width: 56px; font-weight: 600; }
.vibe-grid td.cell a { color: inherit; text-decoration: none; display: block; }
.vibe-grid th[scope=row] { font-weight: normal; max-width: 360px; overflow-wrap: anywhere; }
.cell.passed { background: var(--pass-bg); color: var(--pass); }
.cell.failed, .cell.error { background: var(--fail-bg); color: var(--fail); }
.cell.mixed { background: var(--warn-bg); color: var(--warn); }
.cell.skipped, .cell.absent { color: var(--muted); }
.cell.xfail { opacity: 0.7; font-style: italic; }
details.failure { border: 1px solid var(--line); border-radius: 6px; margin: 4px 0; padding: 0 10px; }
details.failure > summary { cursor: pointer; padding: 5px 0; overflow-wrap: anywhere; }
details.failure[open] > summary { border-bottom: 1px solid var(--line); margin-bottom: 6px; }
details.failure:target { outline: 2px solid var(--bar); }
pre { background: var(--soft); padding: 8px; border-radius: 4px; overflow: auto; max-height: 320px;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0 8px; }
.label { font-weight: 600; margin: 6px 0 0; }
ul.notes { margin: 4px 0; padding-left: 20px; color: var(--muted); }
"""

# Opens the failure block a grid cell links to (a fragment alone does not open a <details>).
JS = """
(function () {
  function openTarget() {
    var id = location.hash.slice(1);
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
"""
