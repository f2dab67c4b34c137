//! The page's style sheet and its one script (the failing traces' filter),
//! inlined: the report fetches nothing.

pub(super) const CSS: &str = r#"
:root{--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--warn:#9a6700;
--warn-bg:#fff8c5;--code:#d1242f;--fg:#1f2328;--muted:#59636e;--border:#d1d9e0;--line:#e8ecf0;
--subtle:#f6f8fa;--track:#eef1f4;color-scheme:light}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
main{max-width:1200px;margin:0 auto;padding:32px 24px 48px}
.mono,code,.chip{font-family:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace}
code{font-size:.9em;background:var(--subtle);padding:1px 4px;border-radius:4px}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.muted{color:var(--muted)}.small{font-size:12px}.nowrap{white-space:nowrap}
header{margin-bottom:24px}
nav{margin-top:12px;font-size:13px;color:var(--muted);display:flex;flex-wrap:wrap;gap:4px 16px}
nav a{color:#0969da;text-decoration:none}nav a:hover{text-decoration:underline}
.eyebrow{font-size:12px;font-weight:600;letter-spacing:.08em;text-transform:uppercase;color:var(--muted)}
h1{margin:4px 0 20px;font-size:26px;line-height:1.25;font-weight:650;display:flex;flex-wrap:wrap;
align-items:center;gap:8px 12px}
.dataset{overflow-wrap:anywhere}
.pill{font-size:13px;font-weight:600;padding:2px 10px;border-radius:999px;white-space:nowrap}
.pill.pass{background:var(--pass-bg);color:var(--pass)}.pill.fail{background:var(--fail-bg);color:var(--fail)}
.pill.muted{background:var(--subtle)}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));border:1px solid var(--border);
border-radius:10px;overflow:hidden}
.stat{padding:14px 16px;box-shadow:1px 1px 0 var(--border)}
.stat .label{font-size:12px;color:var(--muted);font-weight:600}
.stat .value{font-size:26px;font-weight:650;font-variant-numeric:tabular-nums;line-height:1.3;white-space:nowrap}
.stat .value.pass{color:var(--pass)}.stat .value.fail{color:var(--fail)}.stat .value.warn{color:var(--warn)}
.stat .note{font-size:12px;color:var(--muted);min-height:1.5em}
.grid{display:grid;gap:16px}
.charts{grid-template-columns:repeat(auto-fit,minmax(min(100%,460px),1fr));margin-bottom:32px}
.card{border:1px solid var(--border);border-radius:10px;padding:16px 20px 18px;min-width:0;break-inside:avoid}
h2{font-size:16px;margin:0;font-weight:650}
.block h2{font-size:19px;margin:0 0 8px}
.count{font-size:13px;font-weight:600;color:var(--muted);background:var(--subtle);border:1px solid var(--line);
border-radius:999px;padding:0 8px;vertical-align:2px}
.caption{margin:2px 0 14px;color:var(--muted);font-size:13px}
.empty{color:var(--muted);font-style:italic;margin:12px 0}
.more{color:var(--muted);font-size:13px;margin:10px 0 0}
.notice{background:var(--warn-bg);border:1px solid #eed888;border-radius:8px;padding:8px 12px;font-size:14px}
.donut-row{display:flex;align-items:center;gap:28px;flex-wrap:wrap}
.donut{width:148px;height:148px;flex:none}
.donut circle{fill:none;stroke-width:16}
.ring-pass{stroke:var(--pass)}.ring-fail{stroke:var(--fail)}.ring-empty{stroke:var(--track)}
.donut-value{font-size:19px;font-weight:700;text-anchor:middle;fill:var(--fg);font-variant-numeric:tabular-nums}
.donut-label{font-size:11px;text-anchor:middle;fill:var(--muted)}
.legend{border-collapse:collapse;font-size:14px;width:auto;flex:1 1 200px;max-width:320px}
.legend td{padding:3px 8px 3px 0}.legend td.num{padding-left:16px}
.legend .total td{border-top:1px solid var(--line);padding-top:6px;color:var(--muted)}
.swatch{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:8px}
.swatch.pass{background:var(--pass)}.swatch.fail{background:var(--fail)}
.calls{margin-top:16px}.calls-label{font-size:13px;color:var(--muted);margin-bottom:6px}
.calls-label b{color:var(--fg);font-variant-numeric:tabular-nums}
.stack{height:10px;border-radius:5px;background:var(--pass);overflow:hidden;display:flex}
.stack.empty{background:var(--track)}
.fill{display:block;height:100%}.fill.fail{background:var(--fail)}.fill.code{background:var(--code)}
.hist{padding:4px 0 0}
.hist-plot{position:relative;height:190px;margin:22px 0 0 44px;display:flex;align-items:flex-end;gap:6px;
border-bottom:1px solid #8c959f}
.hist-grid{position:absolute;left:0;right:0;height:0;border-top:1px solid var(--line)}
.hist-grid span{position:absolute;right:calc(100% + 8px);top:-9px;font-size:11px;color:var(--muted);
font-variant-numeric:tabular-nums;white-space:nowrap}
.hist-col{flex:1 1 0;min-width:0;height:100%;display:flex;align-items:flex-end;justify-content:center;
position:relative}
.hist-col:hover .hist-bar{filter:brightness(.9)}
.hist-bar{width:78%;border-radius:3px 3px 0 0;position:relative}
.hist-bar.some{min-height:2px}
.hist-count{position:absolute;bottom:100%;left:50%;transform:translateX(-50%);padding-bottom:3px;
font-size:11px;font-weight:600;font-variant-numeric:tabular-nums;white-space:nowrap}
.hist-count .short{display:none}
.hist-x{display:flex;gap:6px;margin:6px 0 0 44px;font-size:12px;color:var(--muted);text-align:center}
.hist-x span{flex:1 1 0;min-width:0}
.perfect{margin-left:14px}.hist-x .perfect{color:var(--pass);font-weight:600}
.hist-axis{margin-left:44px;text-align:center;font-size:11px;color:var(--muted)}
.bars{display:grid;grid-template-columns:fit-content(13rem) minmax(60px,1fr) auto;gap:7px 12px;align-items:center}
.bar-name{font-size:13px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.track{height:14px;background:var(--track);border-radius:3px;overflow:hidden}
.track .fill{border-radius:3px}
.bar-value{font-size:13px;font-variant-numeric:tabular-nums;white-space:nowrap;text-align:right}
.block{margin:0 0 32px}
.scroll{overflow-x:auto;border:1px solid var(--border);border-radius:10px}
table{border-collapse:collapse;width:100%;font-size:14px}
th{font-size:12px;font-weight:600;color:var(--muted);text-align:left;background:var(--subtle);
border-bottom:1px solid var(--border);padding:8px 12px;white-space:nowrap}
td{padding:7px 12px;border-bottom:1px solid var(--line);vertical-align:top}
tbody tr:last-child td{border-bottom:0}
tbody tr:hover td{background:#fafbfc}
td.name{font-size:13px}
td.name div,td.tools div{max-width:18rem;overflow-wrap:break-word}
th.kind,td.kind{width:1%;white-space:nowrap}
td.bad{color:var(--fail);font-weight:600}
td.score.fail{color:var(--fail);font-weight:600}td.score.pass{color:var(--pass)}
td.tools{font-size:13px}
td.reasoning{min-width:18rem;overflow-wrap:anywhere}
.scroll.fit{display:inline-block;max-width:100%;vertical-align:top}
table.wide{min-width:640px}td.top{min-width:22rem}
table.narrow{width:auto;min-width:min(100%,640px)}
th.line,td.line{width:1%;min-width:4.5rem}
.chip{display:inline-block;font-size:12px;line-height:18px;background:var(--subtle);border:1px solid var(--line);
border-radius:6px;padding:0 6px;margin:1px 0;white-space:nowrap}
.chip b{font-weight:600;color:var(--muted)}
.chip.warn{background:var(--warn-bg);border-color:#eed888;color:var(--warn)}
.share{display:inline-flex;align-items:center;gap:8px;justify-content:flex-end}
.mini{display:inline-block;width:48px;height:6px;background:var(--track);border-radius:3px;overflow:hidden}
.mini span{display:block;height:100%;background:var(--fail)}
.filter{display:flex;align-items:center;gap:12px;margin:0 0 10px;flex-wrap:wrap}
.filter[hidden]{display:none}
.filter input{flex:1 1 260px;max-width:520px;font:inherit;padding:7px 12px;border:1px solid var(--border);
border-radius:8px;background:#fff;color:inherit}
.filter input:focus{outline:2px solid #0969da;outline-offset:-1px;border-color:#0969da}
.facts{display:grid;grid-template-columns:auto minmax(0,1fr);gap:6px 16px;margin:0;font-size:13px}
.facts dt{color:var(--muted);font-weight:600;white-space:nowrap}
.facts dd{margin:0;overflow-wrap:anywhere}
.trace-name{font-size:12px;color:var(--muted);min-width:7rem;max-width:12rem;overflow-wrap:anywhere}
table.changes td.name div{max-width:22rem}
td.better,h3.better{color:var(--pass)}td.worse,h3.worse{color:var(--fail)}
h3{font-size:15px;margin:18px 0 8px}
footer{color:var(--muted);font-size:13px;border-top:1px solid var(--line);padding-top:16px}
@media (max-width:640px){main{padding:20px 14px 32px}h1{font-size:21px}
.stat .value{font-size:22px}.card{padding:14px}
.hist-count .long{display:none}.hist-count .short{display:inline}.hist-count{font-size:10px}
.hist-plot,.hist-x,.hist-axis{margin-left:34px}.hist-plot,.hist-x{gap:3px}.perfect{margin-left:6px}
td.name div,td.tools div{max-width:11rem}td.top{min-width:16rem}
.facts{grid-template-columns:1fr;gap:0}.facts dd{margin-bottom:8px}
table.changes td{padding:7px 8px}.bars{grid-template-columns:fit-content(8rem) minmax(40px,1fr) auto}}
@media print{main{max-width:none;padding:0}.filter,nav{display:none}.scroll{overflow:visible;border:0}
tbody tr:hover td{background:none}.block{break-inside:auto}thead{display:table-header-group}
tr{break-inside:avoid}body{font-size:12px}
.stats{grid-template-columns:repeat(7,1fr)}.stat{padding:10px}.stat .value{font-size:20px}}
"#;

pub(super) const SCRIPT: &str = r#"
(function () {
  var input = document.getElementById("filter");
  var table = document.getElementById("failing-table");
  if (!input || !table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var none = table.querySelector("tr.no-match");
  rows = rows.filter(function (r) { return r !== none; });
  var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
  var count = document.getElementById("filter-count");
  var total = rows.length;
  input.parentNode.hidden = false;
  function apply() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = terms.every(function (t) { return texts[i].indexOf(t) !== -1; });
      rows[i].hidden = !ok;
      if (ok) shown++;
    }
    if (none) none.hidden = shown !== 0;
    var word = function (n) { return n.toLocaleString("en-US") + (n === 1 ? " trace" : " traces"); };
    count.textContent = terms.length ? shown.toLocaleString("en-US") + " of " + word(total) : word(total);
  }
  input.addEventListener("input", apply);
  apply();
})();
"#;
