// SPDX-License-Identifier: GPL-2.0-or-later
//
// armprofd's HTML pages in a real browser: Chromium, driven by playwright-core.
//
//   node pages.mjs BASE_URL SCREENSHOT_DIR EXPECT_JSON
//
// run with the directory holding node_modules/playwright-core as the working
// directory (test-browser.py runs it from $ARMPROFD_BUILD_DIR/tests/browser-node).
// EXPECT_JSON is what the driver read from the daemon's JSON answers:
//   { "address": top line of /hotlines?window=all,
//     "symbol_cell": its first offset's symbol as the page shows it ("[.] name"),
//     "hostile": the symbol name planted in the ELF, "counters": whether /counters counts }
//
// One line per check with its figures; the first failure ends the run with a
// message and exit status 1. Anything the page does that a user would not want
// fails: a request to another host, a console error (a CSP violation is one), an
// uncaught exception, a dialog, a link that does not answer 200.

import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'pages.cjs'));
const { chromium } = require('playwright-core');

class Failure extends Error {}

function fail(msg) {
  throw new Failure(msg);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

const [baseArg, shotDir, expectPath] = process.argv.slice(2);
if (!baseArg || !shotDir || !expectPath) {
  console.error('usage: node pages.mjs BASE_URL SCREENSHOT_DIR EXPECT_JSON');
  process.exit(2);
}
const base = new URL(baseArg);
const expect = JSON.parse(fs.readFileSync(expectPath, 'utf8'));
for (const k of ['address', 'symbol_cell', 'hostile'])
  check(typeof expect[k] === 'string' && expect[k], `${expectPath}: no "${k}"`);
fs.mkdirSync(shotDir, { recursive: true });

const SCRIPT_SRC = '/static/armprofd.js';
// Pages a click would wait seconds for (a profile collected over the next N seconds).
const SKIP = new Set(['/debug/pprof/profile']);
// Each view page, saved as a screenshot; "/" is the index.
const VIEWS = ['/hotlines', '/hotpcs', '/latency', '/counters'];
// The views over a window of the store, and the windows page.c's selector offers.
const WINDOWED = ['/hotlines', '/hotpcs', '/latency'];
const WINDOWS = ['10s', '1m', '10m', '1h', 'all'];

// What the page did that it should not have, since the last look.
const problems = [];
let dialogs = 0;

function url(p) {
  return new URL(p, base).href;
}

function short(u) {
  const x = new URL(u);
  return x.pathname + x.search;
}

function noProblems(where) {
  if (problems.length)
    fail(`${where}: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
}

let browser;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  // A CSP violation is a console error already; this names the directive and what it blocked.
  // (An init script runs through the DevTools protocol: the page's CSP does not apply to it.)
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} ` +
                    `at ${e.sourceFile || '?'}:${e.lineNumber}`);
    });
  });
  const page = await context.newPage();
  const requests = [];
  const downloading = new Set();
  page.on('request', (r) => {
    requests.push(r.url());
    const u = new URL(r.url());
    if (u.host !== base.host || u.protocol !== base.protocol)
      problems.push(`request to another origin: ${r.url()} (from ${page.url()})`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error')
      problems.push(`console error on ${short(page.url())}: ${m.text()} (${m.location().url || '?'})`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught exception on ${short(page.url())}: ${e.message}`));
  page.on('dialog', async (d) => {
    dialogs++;
    problems.push(`a ${d.type()} dialog opened on ${short(page.url())}: ${JSON.stringify(d.message())}`);
    await d.dismiss().catch(() => {});
  });
  page.on('requestfailed', (r) => {
    // A download (a protobuf profile) is aborted by the browser: not the daemon's failure.
    if (!downloading.has(r.url()))
      problems.push(`request failed: ${r.url()}: ${r.failure()?.errorText}`);
  });
  page.on('download', (d) => {
    downloading.add(d.url());
    d.cancel().catch(() => {});
  });

  // An HTML page of the daemon: loaded, 200, styled, exactly the daemon's one script.
  async function open(p) {
    const r = await page.goto(url(p), { waitUntil: 'load' });
    check(r, `${p}: no response`);
    check(r.status() === 200, `${p}: status ${r.status()}`);
    check((r.headers()['content-type'] || '').startsWith('text/html'),
          `${p}: content-type ${r.headers()['content-type']}`);
    return loaded(p, r);
  }

  // The page just loaded, r its answer: the policy sent, nothing wrong, the style applied.
  async function loaded(p, r) {
    const csp = r.headers()['content-security-policy'] || '';
    check(/script-src 'self'/.test(csp) && /style-src 'self'/.test(csp), `${p}: Content-Security-Policy ${csp}`);
    await page.waitForLoadState('networkidle');
    noProblems(p);
    const doc = await page.evaluate(() => ({
      scripts: Array.from(document.querySelectorAll('script'), (s) => s.getAttribute('src')),
      // page.c's style sheet: body{margin:0} and the header's background.
      margin: getComputedStyle(document.body).marginTop,
      sheets: document.styleSheets.length,
      rules: Array.from(document.styleSheets).reduce((n, s) => n + s.cssRules.length, 0),
      header: !!document.querySelector('header nav a[href="/"]'),
    }));
    check(doc.scripts.length === 1 && doc.scripts[0] === SCRIPT_SRC,
          `${p}: script elements ${JSON.stringify(doc.scripts)}, want exactly [${SCRIPT_SRC}]`);
    check(doc.sheets === 1 && doc.rules > 10 && doc.margin === '0px',
          `${p}: the style sheet is not applied (${doc.sheets} sheets, ${doc.rules} rules, body margin ${doc.margin})`);
    check(doc.header, `${p}: no nav bar`);
    return r;
  }

  async function links() {
    return page.evaluate(() => Array.from(document.querySelectorAll('a[href]'), (a) => a.href));
  }

  async function screenshot(name) {
    const file = path.join(shotDir, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    const size = fs.statSync(file).size;
    check(size > 5000, `${file}: only ${size} bytes`);
    return `${path.basename(file)} ${size} bytes`;
  }

  // The column of the header named `name` in the last header row of `table`.
  async function column(table, name) {
    const heads = await page.$$eval(`${table} thead tr:last-child th`, (ths) => ths.map((th) => th.textContent.trim()));
    const i = heads.indexOf(name);
    check(i >= 0, `${table}: no column ${JSON.stringify(name)} in ${JSON.stringify(heads)}`);
    return i;
  }

  // ---- the index and every link from it, from the view pages it reaches ----
  {
    await open('/');
    const shot = await screenshot('index');
    const queue = [], seen = new Set();
    const enqueue = (hrefs) => {
      for (const h of hrefs) {
        const u = new URL(h);
        u.hash = '';
        if (u.origin !== base.origin || seen.has(u.href))
          continue;
        seen.add(u.href);
        queue.push(u.href);
      }
    };
    enqueue(await links());
    const fromIndex = queue.length;
    const reached = new Set();
    let html = 0, other = 0, skipped = 0, downloads = 0;
    while (queue.length) {
      const u = queue.shift();
      if (SKIP.has(new URL(u).pathname)) {
        skipped++;
        continue;
      }
      let r;
      try {
        r = await page.goto(u, { waitUntil: 'load' });
      } catch (e) {
        if (!/Download is starting/.test(e.message))
          fail(`${short(u)}: ${e.message.split('\n')[0]}`);
        // A download (a pprof profile): the browser aborts its navigation, and playwright
        // cancels it. Its status through the same context.
        downloading.add(u);
        for (let i = problems.length - 1; i >= 0; i--)
          if (problems[i] === `request failed: ${u}: net::ERR_ABORTED`)
            problems.splice(i, 1);
        const d = await context.request.get(u);
        check(d.status() === 200, `${short(u)}: status ${d.status()} (a download)`);
        downloads++;
        continue;
      }
      check(r, `${short(u)}: no response`);
      check(r.status() === 200, `${short(u)}: status ${r.status()}`);
      reached.add(short(u));
      if ((r.headers()['content-type'] || '').startsWith('text/html')) {
        await loaded(short(u), r);
        html++;
        // The view pages' links: the nav bar, the window selector, the text and JSON forms.
        enqueue(await links());
      } else {
        other++;
      }
      noProblems(short(u));
    }
    // Each view page, each windowed view in each window, each view's text and JSON forms.
    const want = ['/', ...VIEWS, ...VIEWS.map((v) => `${v}?format=text`), '/counters?format=json',
                  ...WINDOWED.flatMap((v) => WINDOWS.flatMap((w) => ['', '&format=text', '&format=json']
                    .map((f) => `${v}?window=${w}${f}`)))];
    const missing = want.filter((p) => !reached.has(p));
    check(!missing.length, `not reached by a link: ${missing.join(' ')}`);
    console.log(`index: ${fromIndex} links on it; ${seen.size - skipped} distinct links followed (${html} HTML pages, ` +
                `${other} other answers, ${downloads} downloads), all 200; ${skipped} skipped ` +
                `(/debug/pprof/profile); ${shot}`);
  }

  // ---- /hotlines: the top line and its symbol as the JSON gives them ----
  {
    await open('/hotlines?window=all');
    const col = await column('#table-0', 'Address');
    const rows = await page.$$('#table-0 tbody tr');
    check(rows.length > 0, '/hotlines?window=all: #table-0 has no rows');
    const addr = await page.$eval(`#table-0 tbody tr:first-child td:nth-child(${col + 1})`, (td) => td.textContent);
    check(addr === expect.address, `/hotlines: first row's Address is ${JSON.stringify(addr)}, want ${expect.address}`);
    const symCol = await column('#table-1', 'Symbol');
    const symbols = await page.$$eval(`#table-1 tbody tr td:nth-child(${symCol + 1})`, (tds) => tds.map((td) => td.textContent));
    const n = symbols.filter((s) => s === expect.symbol_cell).length;
    check(n > 0, `/hotlines: no Symbol cell of #table-1 is ${JSON.stringify(expect.symbol_cell)}`);
    console.log(`hotlines: ${rows.length} lines, the first ${addr}; the Pareto table's Symbol column ` +
                `holds ${JSON.stringify(expect.symbol_cell)} in ${n} of ${symbols.length} rows; ${await screenshot('hotlines')}`);
  }

  // ---- the hostile symbol: text in a cell, nothing injected, no dialog ----
  for (const p of ['/hotlines?window=all', '/hotpcs?window=all']) {
    await open(p);
    const want = expect.symbol_cell;
    const r = await page.evaluate((want) => ({
      cells: Array.from(document.querySelectorAll('td')).filter((td) => td.textContent === want).length,
      // No element under a cell: the name was not parsed as markup.
      elementsInCells: document.querySelectorAll('td *').length,
      scripts: Array.from(document.querySelectorAll('script'), (s) => s.outerHTML),
      inBody: document.body.innerHTML.includes(want.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')),
    }), want);
    check(r.cells > 0, `${p}: no cell's text is ${JSON.stringify(want)}`);
    check(r.elementsInCells === 0, `${p}: ${r.elementsInCells} elements inside table cells`);
    check(r.scripts.length === 1 && r.scripts[0] === `<script src="${SCRIPT_SRC}" defer=""></script>`,
          `${p}: script elements ${JSON.stringify(r.scripts)}`);
    check(r.inBody, `${p}: the serialized DOM does not hold the name as text`);
    check(dialogs === 0, `${p}: ${dialogs} dialogs opened`);
    noProblems(p);
    console.log(`hostile symbol ${JSON.stringify(expect.hostile)} on ${p}: the text of ${r.cells} cells, ` +
                `no element in any cell, the one script ${SCRIPT_SRC}, no dialog`);
  }

  // ---- sorting /hotpcs by a number and by text ----
  {
    await open('/hotpcs?window=all');
    const t = '#table-0';
    const samples = await column(t, 'Samples'), symbol = await column(t, 'Symbol'), pc = await column(t, 'PC');
    const state = () => page.evaluate(([t, samples, symbol, pc]) => {
      const table = document.querySelector(t);
      const rows = Array.from(table.tBodies).flatMap((b) => Array.from(b.rows));
      const ths = Array.from(table.tHead.rows[table.tHead.rows.length - 1].cells);
      return {
        v: rows.map((r) => r.cells[samples].dataset.v),
        sym: rows.map((r) => r.cells[symbol].textContent),
        key: rows.map((r) => r.cells[pc].textContent + ' ' + r.cells[symbol].textContent),
        sorts: ths.map((th) => th.getAttribute('aria-sort')),
      };
    }, [t, samples, symbol, pc]);
    const click = (col) => page.click(`${t} thead tr:last-child th:nth-child(${col + 1}) button`);
    const sortedSet = (a) => JSON.stringify([...a].sort());
    const collator = new Intl.Collator(undefined, { numeric: true });
    const only = (s, col, want) => s.sorts.every((x, i) => x === (i === col ? want : 'none'));

    const s0 = await state();
    check(s0.v.length > 1, `/hotpcs: ${s0.v.length} rows`);
    check(s0.sorts.every((x) => x === 'none'), `/hotpcs: aria-sort before a click: ${s0.sorts}`);
    check(s0.v.every((x) => x !== undefined && !Number.isNaN(parseFloat(x))), '/hotpcs: a Samples cell without data-v');

    // Text first: it moves the rows away from the daemon's order by samples.
    const byText = [];
    for (const dir of ['descending', 'ascending']) {
      await click(symbol);
      const s = await state();
      check(only(s, symbol, dir), `/hotpcs: Symbol clicked for ${dir}: aria-sort ${s.sorts}`);
      const bad = s.sym.findIndex((x, i) => i > 0 &&
        (dir === 'descending' ? collator.compare(s.sym[i - 1], x) < 0 : collator.compare(s.sym[i - 1], x) > 0));
      check(bad < 0, `/hotpcs: Symbol ${dir}: row ${bad} ${JSON.stringify(s.sym[bad])} after ` +
                     `${JSON.stringify(s.sym[bad - 1])}`);
      check(sortedSet(s.key) === sortedSet(s0.key), `/hotpcs: sorting by Symbol lost or duplicated rows`);
      byText.push(s);
      console.log(`sorted Symbol ${dir}: ${s.sym.length} rows, ${new Set(s.sym).size} distinct symbols, ` +
                  `first ${JSON.stringify(s.sym[0])}, last ${JSON.stringify(s.sym[s.sym.length - 1])}`);
    }
    for (const dir of ['descending', 'ascending']) {
      await click(samples);
      const s = await state();
      check(only(s, samples, dir), `/hotpcs: Samples clicked for ${dir}: aria-sort ${s.sorts}`);
      const v = s.v.map(parseFloat);
      const bad = v.findIndex((x, i) => i > 0 && (dir === 'descending' ? v[i - 1] < x : v[i - 1] > x));
      check(bad < 0, `/hotpcs: Samples ${dir}: row ${bad} has ${v[bad]} after ${v[bad - 1]}`);
      check(sortedSet(s.key) === sortedSet(s0.key), `/hotpcs: sorting by Samples lost or duplicated rows`);
      const moved = s.key.filter((k, i) => k !== byText[1].key[i]).length;
      if (dir === 'descending')
        check(moved > 0, '/hotpcs: the Samples click moved no row from the Symbol order');
      console.log(`sorted Samples ${dir}: ${v.length} rows, ${v[0]} .. ${v[v.length - 1]}` +
                  (dir === 'descending' ? `, ${moved} rows moved from the Symbol order` : ''));
      byText[1] = s;
    }
    noProblems('/hotpcs sorting');
    console.log(`hotpcs: ${await screenshot('hotpcs')}`);
  }

  // ---- /latency: histograms drawn ----
  {
    await open('/latency?window=all');
    const h = await page.evaluate(() => Array.from(document.querySelectorAll('svg.histogram'), (svg) => ({
      id: svg.id,
      width: svg.getBoundingClientRect().width,
      bars: svg.querySelectorAll('rect.bar').length,
      drawn: Array.from(svg.querySelectorAll('rect.bar')).filter((r) => r.getBoundingClientRect().height > 0).length,
    })));
    check(h.length > 0, '/latency?window=all: no svg.histogram');
    check(h.every((x) => x.width > 0), `/latency: a histogram of no width: ${JSON.stringify(h)}`);
    const drawn = h.reduce((n, x) => n + x.drawn, 0), bars = h.reduce((n, x) => n + x.bars, 0);
    check(h.some((x) => x.drawn > 0), `/latency: no bar of non-zero height: ${JSON.stringify(h)}`);
    const rows = await page.$$eval('#table-0 tbody tr', (r) => r.length);
    console.log(`latency: ${rows} quantile rows, ${h.length} histograms, ${drawn} of ${bars} bars drawn ` +
                `with a height; ${await screenshot('latency')}`);
  }

  // ---- /counters: perf stat's table ----
  {
    await open('/counters');
    if (!expect.counters) {
      console.log(`counters: SKIP the table (the daemon counts nothing here); ${await screenshot('counters')}`);
    } else {
      const c = await page.evaluate(() => {
        const h2 = Array.from(document.querySelectorAll('section h2'))
          .find((h) => h.textContent === 'Performance counter stats');
        const table = h2 && h2.closest('section').querySelector('table.sortable');
        return {
          found: !!h2,
          rows: table ? table.tBodies[0].rows.length : 0,
          counted: table ? table.querySelectorAll('tbody td[data-v]').length : 0,
          strips: document.querySelectorAll('svg.heatstrip').length,
        };
      });
      check(c.found, '/counters: no "Performance counter stats" section');
      check(c.rows > 0 && c.counted > 0, `/counters: the table has ${c.rows} rows, ${c.counted} counts`);
      check(c.strips > 0, '/counters: no heat strip');
      console.log(`counters: "Performance counter stats" with ${c.rows} rows, ${c.counted} numbers; ` +
                  `${c.strips} heat strips; ${await screenshot('counters')}`);
    }
  }

  noProblems('the end');
  const hosts = new Set(requests.map((u) => new URL(u).host));
  console.log(`browser: ${requests.length} requests, all to ${[...hosts].join(', ')}; no console error, ` +
              `no CSP violation, no page error, no dialog`);
} catch (e) {
  if (e instanceof Failure)
    console.error(`FAIL: ${e.message}`);
  else
    console.error(`FAIL: ${e.stack || e}`);
  process.exitCode = 1;
} finally {
  if (browser)
    await browser.close();
}
