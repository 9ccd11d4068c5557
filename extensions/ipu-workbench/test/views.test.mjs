// The views in a DOM without a browser (jsdom): IR strings stay text, and the controls work.
// Extra documents to check for markup injection can be passed as file paths in IPU_WB_DOCUMENTS
// (separated by the platform's path delimiter); the Python tests pass real exports this way.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { renderIr } from '../lib/view.js';
import { EVIL, EVIL_SCRIPT, oneGraphDocument, sampleDocument } from './documents.mjs';
import { settled } from './settle.mjs';

/** The view of `value`, once its graph is drawn. */
async function render(value, options = {}) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>', { runScripts: 'outside-only' });
  const root = renderIr(dom.window.document.body, value, options);
  await settled(root);
  return { window: dom.window, root };
}

/** Clicks `node` (a button, or anything with a click listener) and waits for the drawing it asks for. */
async function click(node) {
  node.dispatchEvent(new node.ownerDocument.defaultView.MouseEvent('click', { bubbles: true }));
  await settled(node.ownerDocument.body);
}

function hoverEverything(window, root) {
  for (const node of root.querySelectorAll('*')) {
    node.dispatchEvent(new window.MouseEvent('mouseenter'));
  }
}

/** No element made from markup, no event-handler attribute, and no script ran. */
function assertInert(window, root) {
  assert.equal(root.querySelectorAll('img, script, iframe, object, embed, foreignObject').length, 0);
  for (const node of root.querySelectorAll('*')) {
    for (const attribute of node.attributes) {
      assert.ok(!attribute.name.toLowerCase().startsWith('on'), `${node.tagName} has ${attribute.name}`);
      assert.ok(!/^\s*javascript:/i.test(attribute.value), `${node.tagName} ${attribute.name}=${attribute.value}`);
    }
  }
  assert.equal(window.__wbXss, undefined);
}

function openAllViews(root) {
  for (const tab of root.querySelectorAll('.ipu-wb-tab')) {
    tab.click();
  }
}

test('names that look like HTML are shown as text in every view', async () => {
  const { window, root } = await render(sampleDocument());
  await click(root.querySelector('.ipu-wb-expand-all'));
  openAllViews(root);
  hoverEverything(window, root);
  assertInert(window, root);
  const text = root.textContent;
  assert.ok(text.includes(EVIL), 'the graph name is shown verbatim');
  assert.ok(root.querySelector('.ipu-wb-call-tree').textContent.includes(EVIL));
  const labels = [...root.querySelectorAll('.ipu-wb-label')].map(n => n.textContent);
  assert.ok(labels.includes(EVIL), 'the variable node is labelled with its name');
  const titles = [...root.querySelectorAll('.ipu-wb-op > title')].map(n => n.textContent);
  assert.ok(titles.includes(`add ${EVIL_SCRIPT}.2`), 'the op named with a script tag has it in its title');
  assert.ok(labels.includes('▾ repeat ×3 <img src=x onerror="__wbXss…'), 'the loop is named (cut short) in its call');
});

test('hover details show attributes holding markup as text', async () => {
  const { window, root } = await render(sampleDocument());
  await click(root.querySelector('.ipu-wb-expand-all'));
  const evilOp = [...root.querySelectorAll('.ipu-wb-op')].find(n => n.getAttribute('data-key').endsWith(`${EVIL_SCRIPT}.2`));
  evilOp.dispatchEvent(new window.MouseEvent('mouseenter'));
  const details = root.querySelector('.ipu-wb-details').textContent;
  assert.ok(details.includes(`add ${EVIL_SCRIPT}.2`));
  assert.ok(details.includes(JSON.stringify(EVIL)));
  assertInert(window, root);
});

test('a search for markup only highlights', async () => {
  const { window, root } = await render(sampleDocument());
  const box = root.querySelector('.ipu-wb-search');
  box.value = EVIL;
  box.dispatchEvent(new window.Event('input'));
  assertInert(window, root);
  assert.equal(root.querySelectorAll('.ipu-wb-match').length, 1, 'the variable node matches');
});

for (const path of (process.env.IPU_WB_DOCUMENTS ?? '').split(delimiter).filter(Boolean)) {
  test(`exported document ${path} renders as inert text`, async () => {
    const value = JSON.parse(readFileSync(path, 'utf8'));
    const expected = JSON.parse(process.env.IPU_WB_EXPECT_TEXT ?? '[]');
    const { window, root } = await render(value);
    await click(root.querySelector('.ipu-wb-expand-all'));
    openAllViews(root);
    hoverEverything(window, root);
    assertInert(window, root);
    assert.ok(!root.classList.contains('ipu-wb-error'), root.textContent);
    for (const text of expected) {
      assert.ok(root.textContent.includes(text), `${JSON.stringify(text)} is shown`);
    }
  });
}

test('a call op expands into the graph it calls and collapses again', async () => {
  const { root } = await render(sampleDocument());
  const call = () => [...root.querySelectorAll('.ipu-wb-callable')].find(n => n.textContent.includes('call.3'));
  assert.ok(call().classList.contains('ipu-wb-closed'));
  assert.equal(root.querySelectorAll('.ipu-wb-frame').length, 0);
  await click(call());
  assert.ok(call().classList.contains('ipu-wb-open'));
  const frame = call().querySelector('.ipu-wb-frame-label');
  assert.equal(frame.textContent, 'call: body');
  assert.ok(call().textContent.includes('mul.1'));
  await click(call().querySelector('.ipu-wb-label'));
  assert.ok(call().classList.contains('ipu-wb-closed'));
  assert.ok(!call().textContent.includes('mul.1'));
});

test('search counts matches inside collapsed calls and expands to them', async () => {
  const { window, root } = await render(sampleDocument());
  const box = root.querySelector('.ipu-wb-search');
  box.value = 'MUL';
  box.dispatchEvent(new window.Event('input'));
  assert.equal(root.querySelectorAll('.ipu-wb-match').length, 0);
  assert.equal(root.querySelector('.ipu-wb-search-status').textContent, '0 shown, 1 inside collapsed calls');
  const expand = root.querySelector('.ipu-wb-expand-matches');
  assert.equal(expand.hidden, false);
  await click(expand);
  const matches = [...root.querySelectorAll('.ipu-wb-match')].map(n => n.getAttribute('data-key'));
  assert.deepEqual(matches, ['|call.3>body|body/mul.1']);
  assert.equal(root.querySelector('.ipu-wb-search-status').textContent, '1 shown');
  assert.equal(expand.hidden, true);
  assert.ok(root.querySelector('[data-key="|repeat.5"]').classList.contains('ipu-wb-closed'), 'calls without matches stay closed');
});

test('while a layout is on its way the drawing stays, and only the latest layout asked for is drawn', async () => {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  const root = renderIr(dom.window.document.body, sampleDocument());
  const canvas = root.querySelector('.ipu-wb-canvas');
  assert.equal(canvas.getAttribute('aria-busy'), 'true');
  assert.equal(canvas.textContent, 'Laying out 4 nodes…', 'the first drawing says it is coming');
  await settled(root);
  const before = canvas.querySelector('.ipu-wb-graph-svg');
  const call = () => canvas.querySelector('[data-key="|call.3"]');
  call().dispatchEvent(new dom.window.MouseEvent('click', { bubbles: true }));
  assert.equal(canvas.getAttribute('aria-busy'), 'true');
  assert.equal(canvas.querySelector('.ipu-wb-graph-svg'), before, 'the old drawing stays meanwhile');
  call().dispatchEvent(new dom.window.MouseEvent('click', { bubbles: true }));
  await settled(root);
  assert.notEqual(canvas.querySelector('.ipu-wb-graph-svg'), before);
  assert.equal(canvas.children.length, 1);
  assert.ok(call().classList.contains('ipu-wb-closed'), 'opened then closed: the second layout is the one drawn');
  await new Promise(resolve => setTimeout(resolve, 50));
  assert.ok(call().classList.contains('ipu-wb-closed'), 'and the first one, arriving late, is dropped');
});

test('the graph view lays out data flow top to bottom', async () => {
  const { root } = await render(sampleDocument());
  const y = key => {
    const node = [...root.querySelectorAll('.ipu-wb-node')].find(n => n.getAttribute('data-key') === key);
    const match = /translate\(([-\d.]+),([-\d.]+)\)/.exec(node.getAttribute('transform'));
    return Number(match[2]);
  };
  assert.ok(y(`|${EVIL}`) < y('|call.3'));
  assert.ok(y('|call.3') < y('|repeat.5'));
  assert.ok(y('|repeat.5') < y('|host_store.6'));
  assert.equal(root.querySelectorAll('.ipu-wb-edge').length, 3);
});

test('the graph picker and the call tree choose the graph drawn', async () => {
  const { window, root } = await render(sampleDocument(), { graph: 'body' });
  const drawn = () => [...root.querySelectorAll('.ipu-wb-graph-svg .ipu-wb-op')].map(n => n.getAttribute('data-key'));
  assert.deepEqual(drawn(), ['|body/mul.1', `|body/${EVIL_SCRIPT}.2`]);
  assert.ok(drawn().length === 2 && root.querySelectorAll('.ipu-wb-output').length === 1, 'a subgraph shows its output');
  const select = root.querySelector('.ipu-wb-graph-select');
  select.value = 'main_graph';
  select.dispatchEvent(new window.Event('change'));
  await settled(root);
  assert.deepEqual(drawn(), ['|call.3', '|repeat.5', '|host_store.6']);
  root.querySelector('.ipu-wb-tab-calls').click();
  const loop = [...root.querySelectorAll('.ipu-wb-tree-graph')].find(n => n.textContent === EVIL);
  await click(loop);
  assert.deepEqual(drawn(), [`|${EVIL}/neg.4`]);
  assert.ok(!root.querySelector('.ipu-wb-graph-view').classList.contains('ipu-wb-hidden'));
});

test('the call tree of a program of one graph is a card naming it, its ops and its IPU', async () => {
  const { root } = await render(oneGraphDocument());
  const card = root.querySelector('.ipu-wb-call-tree');
  assert.ok(card.classList.contains('ipu-wb-tree-card'));
  assert.equal(card.querySelectorAll('li').length, 0, 'no tree of one entry');
  assert.equal(card.querySelector('.ipu-wb-tree-graph').textContent, 'main');
  assert.equal(card.querySelector('.ipu-wb-tree-count').textContent, ' 3 ops on IPU 1');
  assert.equal(card.querySelector('.ipu-wb-tree-note').textContent, 'the whole program: one graph, calling no other');
  const trees = (await render(sampleDocument())).root.querySelectorAll('.ipu-wb-call-tree .ipu-wb-tree-card');
  assert.equal(trees.length, 0, 'a program of several graphs keeps its tree');
});

test('the call tree shows call kinds and repeat counts', async () => {
  const { root } = await render(sampleDocument(), { view: 'calls' });
  const tree = root.querySelector('.ipu-wb-call-tree');
  assert.ok(!tree.classList.contains('ipu-wb-hidden'));
  const items = [...tree.querySelectorAll('.ipu-wb-tree-children > li')].map(li => li.textContent.trim());
  assert.deepEqual(items, ['call body 2 ops', `repeat ×3 ${EVIL} 1 op`]);
});

test('the liveness chart stacks four series and marks the peak', async () => {
  const { window, root } = await render(sampleDocument(), { view: 'memory', device: { kind: 'ipu_model', tile_bytes_per_ipu: 1480 } });
  const chart = root.querySelector('.ipu-wb-liveness');
  // 100 B of code against 48 B of tensors: code starts left out, and the chart says so.
  assert.equal(chart.querySelectorAll('.ipu-wb-area').length, 3);
  assert.equal(chart.querySelector('.ipu-wb-liveness-note').textContent,
    'code left out: it would dwarf the tensors (tick it below to stack it)');
  const code = [...chart.querySelectorAll('.ipu-wb-series-toggle')].find(box => box.value === 'code');
  assert.equal(code.checked, false);
  code.checked = true;
  code.dispatchEvent(new window.Event('change'));
  assert.equal(chart.querySelectorAll('.ipu-wb-area').length, 4);
  assert.equal(chart.querySelectorAll('.ipu-wb-step').length, 6);
  assert.equal(chart.querySelector('.ipu-wb-liveness-summary').textContent,
    'IPU 0: peak 148 B at step 2 of 1.45 KiB (10.00%) on ipu_model');
  chart.querySelectorAll('.ipu-wb-step')[2].dispatchEvent(new window.MouseEvent('mouseenter'));
  const details = root.querySelector('.ipu-wb-details').textContent;
  assert.ok(details.startsWith(`step 2: add ${EVIL_SCRIPT}.2`), details);
  assert.ok(details.includes('intermediates 32 B'));
});

test('ticking and unticking a series in the legend adds and removes its area and rescales the chart', async () => {
  const { window, root } = await render(sampleDocument(), { view: 'memory' });
  const chart = root.querySelector('.ipu-wb-liveness');
  const ticks = () => [...chart.querySelectorAll('.ipu-wb-axis-label')].map(n => n.textContent).filter(t => t.endsWith(' B'));
  const code = [...chart.querySelectorAll('.ipu-wb-series-toggle')].find(box => box.value === 'code');
  code.checked = true;
  code.dispatchEvent(new window.Event('change'));
  assert.deepEqual(ticks(), ['0 B', '32 B', '64 B', '96 B', '128 B'], 'a power of two apart, up to the top of 148 B');
  code.checked = false;
  code.dispatchEvent(new window.Event('change'));
  const areas = [...chart.querySelectorAll('.ipu-wb-area')].map(n => n.getAttribute('class'));
  assert.deepEqual(areas, ['ipu-wb-area ipu-wb-series-variable', 'ipu-wb-area ipu-wb-series-constant',
    'ipu-wb-area ipu-wb-series-intermediate']);
  assert.deepEqual(ticks(), ['0 B', '8 B', '16 B', '24 B', '32 B', '40 B', '48 B'],
    'the largest stack without code: 16 B of variables + 32 B of intermediates');
});

test('the liveness chart is laid out for the width of its panel, and again when that changes', async () => {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  const observers = [];
  dom.window.ResizeObserver = class {
    constructor(callback) { this.callback = callback; observers.push(this); }
    observe(node) { this.node = node; }
  };
  const root = renderIr(dom.window.document.body, sampleDocument(), { view: 'memory' });
  const panel = root.querySelector('.ipu-wb-chart');
  const resize = width => {
    Object.defineProperty(panel, 'clientWidth', { value: width, configurable: true });
    observers.filter(o => o.node === panel).forEach(o => o.callback());
  };
  const widths = () => {
    const chart = panel.querySelector('.ipu-wb-chart-svg');
    const axis = chart.querySelector('.ipu-wb-axis');
    return [Number(chart.getAttribute('width')), chart.viewBox.baseVal.width, Number(axis.getAttribute('x2'))];
  };
  assert.deepEqual(widths(), [720, 720, 712], 'off the page: its width until its panel is measured');
  resize(500);
  assert.deepEqual(widths(), [500, 500, 492]);
  resize(1100);
  assert.deepEqual(widths(), [1100, 1100, 1092]);
  resize(1104);  // a few pixels: not laid out again
  assert.deepEqual(widths(), [1100, 1100, 1092]);
  resize(200);  // narrower than its narrowest: drawn at 320 px, shown smaller
  assert.deepEqual(widths(), [320, 320, 312]);
});

test('a document without liveness, or whose liveness failed, says so', async () => {
  const document = sampleDocument();
  document.liveness = { version: 1, error: 'graph cycle', steps: [], ipus: [] };
  assert.equal((await render(document)).root.querySelector('.ipu-wb-liveness').textContent, 'No liveness: graph cycle');
  delete document.liveness;
  assert.equal((await render(document)).root.querySelector('.ipu-wb-liveness').textContent, 'This document has no liveness section.');
});

test('graphs calling each other in a cycle are drawn to a bounded depth', async () => {
  const document = sampleDocument();
  const [main, body] = document.graphs;
  body.ops.push({ ...main.ops[0], id: 'body/call.9', name: 'call.9', inputs: ['body/a'], outputs: [] });
  document.call_sites.push({ graph: 'body', op: 'body/call.9', callee: 'body', kind: 'call', repeat_count: null, inputs: [], outputs: [] });
  const { root } = await render(document);
  await click(root.querySelector('.ipu-wb-expand-all'));
  assert.equal(root.querySelectorAll('.ipu-wb-frame-label').length, 8 + 1, 'eight nested bodies and the loop');
  const tree = root.querySelector('.ipu-wb-call-tree');
  assert.equal(tree.querySelectorAll('.ipu-wb-tree-graph').length, 4, 'main, body, body again (a leaf), the loop');
});

test('JSON text is read like an object, and another schema is refused with a message', async () => {
  assert.ok((await render(JSON.stringify(sampleDocument()))).root.classList.contains('ipu-wb-root'));
  const { root } = await render({ schema: 'something-else', version: 1 });
  assert.ok(root.classList.contains('ipu-wb-error'));
  assert.equal(root.textContent, 'Cannot show this IR: expected schema "ipu-workbench/ir", got "something-else"');
  const newer = (await render({ ...sampleDocument(), version: 2 })).root;
  assert.equal(newer.textContent, 'Cannot show this IR: this viewer reads version 1 of "ipu-workbench/ir", got version 2');
});

test('the stylesheet takes every meaningful colour from the visual language the view sets on its root', async () => {
  const css = readFileSync(new URL('../style/base.css', import.meta.url), 'utf8');
  assert.deepEqual(css.match(/#[0-9a-f]{3,8}\b/gi), null, 'no colour written into the stylesheet');
  const { root } = await render(sampleDocument());
  const set = new Set(Array.from({ length: root.style.length }, (_, i) => root.style.item(i)));
  set.add('--ipu-wb-ipu-fill');
  const used = new Set([...css.matchAll(/var\((--ipu-wb-[\w-]+)\)/g)].map(match => match[1]));
  assert.deepEqual([...used].filter(name => !set.has(name)), []);
  assert.equal(root.style.getPropertyValue('--ipu-wb-variable'), '#4C78A8', 'variables are blue, as in the plotly views');
  assert.equal(root.style.getPropertyValue('--ipu-wb-code'), '#54A24B', 'code is green');
  const op = root.querySelector('.ipu-wb-op');
  assert.equal(op.style.getPropertyValue('--ipu-wb-ipu-fill'), '#DCE6F2', 'ops are filled by their IPU');
});

/** The sample with `count` more ops on the main graph's first layer, so the drawing is wide. */
function wideDocument(count) {
  const document = sampleDocument();
  const main = document.graphs[0];
  const template = main.ops[2];
  for (let i = 0; i < count; i++) {
    main.ops.unshift({ ...template, id: `wide_op_with_a_long_name.${i}`, name: `wide_op_with_a_long_name.${i}`,
      type: 'host_store', inputs: [EVIL], attrs: {} });
  }
  return document;
}

test('expand all scrolls to the top left of the body the first call opened; a call clicked open stays in sight', async () => {
  const { window, root } = await render(wideDocument(12));
  const { buildLayout } = await import('../lib/layout.js');
  const { placeWithElk } = await import('../lib/elklayout.js');
  const { positionOf } = await import('../lib/graphview.js');
  const { IrIndex } = await import('../lib/model.js');
  const layoutGraph = async (index, graph, expanded) => {
    const layout = buildLayout(index, graph, expanded);
    await placeWithElk(layout);
    return layout;
  };
  const canvas = root.querySelector('.ipu-wb-canvas');
  await click(root.querySelector('.ipu-wb-expand-all'));
  const index = new IrIndex(JSON.parse(JSON.stringify(wideDocument(12))));
  const expanded = new Set(['|call.3', '|repeat.5']);
  const layout = await layoutGraph(index, 'main_graph', expanded);
  const call = positionOf(layout, '|call.3');
  const body = layout.nodes.find(node => node.key === '|call.3').inner[0];
  const at = { x: call.x + body.x, y: call.y + body.y };
  assert.ok(at.x > 200, `the call is drawn right of the wide first layer, at ${at.x}`);
  assert.deepEqual([canvas.scrollLeft, canvas.scrollTop], [at.x - 24, Math.max(0, at.y - 24)]);
  await click(root.querySelector('.ipu-wb-collapse-all'));
  assert.deepEqual([canvas.scrollLeft, canvas.scrollTop], [0, 0]);
  const repeat = root.querySelector('[data-key="|repeat.5"]');
  await click(repeat);
  const opened = positionOf(await layoutGraph(index, 'main_graph', new Set(['|repeat.5'])), '|repeat.5');
  assert.deepEqual([canvas.scrollLeft, canvas.scrollTop], [Math.max(0, opened.x - 24), Math.max(0, opened.y - 24)]);
});

test('"fit width" shrinks a wide drawing to the canvas; without it a narrow drawing is centred', async () => {
  const { window, root } = await render(sampleDocument());
  const canvas = root.querySelector('.ipu-wb-canvas');
  const fit = root.querySelector('.ipu-wb-fit-toggle');
  assert.ok(!canvas.classList.contains('ipu-wb-fit'));
  fit.checked = true;
  fit.dispatchEvent(new window.Event('change'));
  assert.ok(canvas.classList.contains('ipu-wb-fit'));
  const css = readFileSync(new URL('../style/base.css', import.meta.url), 'utf8');
  assert.match(css, /\.ipu-wb-graph-svg \{\s*display: block;\s*margin: 0 auto;/);
  assert.match(css, /\.ipu-wb-fit \.ipu-wb-graph-svg \{\s*max-width: 100%;\s*height: auto;/);
});

test('the details never break words at any letter, and the memory chart scales to its panel', async () => {
  const css = readFileSync(new URL('../style/base.css', import.meta.url), 'utf8');
  assert.doesNotMatch(css, /word-break/);
  assert.match(css, /\.ipu-wb-details \{[^}]*overflow-wrap: anywhere;/);
  assert.match(css, /\.ipu-wb-chart-svg \{[^}]*width: 100%;[^}]*height: auto;/);
});
