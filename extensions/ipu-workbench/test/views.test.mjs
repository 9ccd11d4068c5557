// The views in a DOM without a browser (jsdom): IR strings stay text, and the controls work.
// Extra documents to check for markup injection can be passed as file paths in IPU_WB_DOCUMENTS
// (separated by the platform's path delimiter); the Python tests pass real exports this way.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { renderIr } from '../lib/view.js';
import { EVIL, EVIL_SCRIPT, sampleDocument } from './documents.mjs';

function render(value, options = {}) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>', { runScripts: 'outside-only' });
  const root = renderIr(dom.window.document.body, value, options);
  return { window: dom.window, root };
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

test('names that look like HTML are shown as text in every view', () => {
  const { window, root } = render(sampleDocument());
  root.querySelector('.ipu-wb-expand-all').click();
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

test('hover details show attributes holding markup as text', () => {
  const { window, root } = render(sampleDocument());
  root.querySelector('.ipu-wb-expand-all').click();
  const evilOp = [...root.querySelectorAll('.ipu-wb-op')].find(n => n.getAttribute('data-key').endsWith(`${EVIL_SCRIPT}.2`));
  evilOp.dispatchEvent(new window.MouseEvent('mouseenter'));
  const details = root.querySelector('.ipu-wb-details').textContent;
  assert.ok(details.includes(`add ${EVIL_SCRIPT}.2`));
  assert.ok(details.includes(JSON.stringify(EVIL)));
  assertInert(window, root);
});

test('a search for markup only highlights', () => {
  const { window, root } = render(sampleDocument());
  const box = root.querySelector('.ipu-wb-search');
  box.value = EVIL;
  box.dispatchEvent(new window.Event('input'));
  assertInert(window, root);
  assert.equal(root.querySelectorAll('.ipu-wb-match').length, 1, 'the variable node matches');
});

for (const path of (process.env.IPU_WB_DOCUMENTS ?? '').split(delimiter).filter(Boolean)) {
  test(`exported document ${path} renders as inert text`, () => {
    const value = JSON.parse(readFileSync(path, 'utf8'));
    const expected = JSON.parse(process.env.IPU_WB_EXPECT_TEXT ?? '[]');
    const { window, root } = render(value);
    root.querySelector('.ipu-wb-expand-all').click();
    openAllViews(root);
    hoverEverything(window, root);
    assertInert(window, root);
    assert.ok(!root.classList.contains('ipu-wb-error'), root.textContent);
    for (const text of expected) {
      assert.ok(root.textContent.includes(text), `${JSON.stringify(text)} is shown`);
    }
  });
}

test('a call op expands into the graph it calls and collapses again', () => {
  const { root } = render(sampleDocument());
  const call = () => [...root.querySelectorAll('.ipu-wb-callable')].find(n => n.textContent.includes('call.3'));
  assert.ok(call().classList.contains('ipu-wb-closed'));
  assert.equal(root.querySelectorAll('.ipu-wb-frame').length, 0);
  call().dispatchEvent(new root.ownerDocument.defaultView.MouseEvent('click', { bubbles: true }));
  assert.ok(call().classList.contains('ipu-wb-open'));
  const frame = call().querySelector('.ipu-wb-frame-label');
  assert.equal(frame.textContent, 'call: body');
  assert.ok(call().textContent.includes('mul.1'));
  call().querySelector('.ipu-wb-label').dispatchEvent(new root.ownerDocument.defaultView.MouseEvent('click', { bubbles: true }));
  assert.ok(call().classList.contains('ipu-wb-closed'));
  assert.ok(!call().textContent.includes('mul.1'));
});

test('search counts matches inside collapsed calls and expands to them', () => {
  const { window, root } = render(sampleDocument());
  const box = root.querySelector('.ipu-wb-search');
  box.value = 'MUL';
  box.dispatchEvent(new window.Event('input'));
  assert.equal(root.querySelectorAll('.ipu-wb-match').length, 0);
  assert.equal(root.querySelector('.ipu-wb-search-status').textContent, '0 shown, 1 inside collapsed calls');
  const expand = root.querySelector('.ipu-wb-expand-matches');
  assert.equal(expand.hidden, false);
  expand.click();
  const matches = [...root.querySelectorAll('.ipu-wb-match')].map(n => n.getAttribute('data-key'));
  assert.deepEqual(matches, ['|call.3>body|body/mul.1']);
  assert.equal(root.querySelector('.ipu-wb-search-status').textContent, '1 shown');
  assert.equal(expand.hidden, true);
  assert.ok(root.querySelector('[data-key="|repeat.5"]').classList.contains('ipu-wb-closed'), 'calls without matches stay closed');
});

test('the graph view lays out data flow top to bottom', () => {
  const { root } = render(sampleDocument());
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

test('the graph picker and the call tree choose the graph drawn', () => {
  const { window, root } = render(sampleDocument(), { graph: 'body' });
  const drawn = () => [...root.querySelectorAll('.ipu-wb-graph-svg .ipu-wb-op')].map(n => n.getAttribute('data-key'));
  assert.deepEqual(drawn(), ['|body/mul.1', `|body/${EVIL_SCRIPT}.2`]);
  assert.ok(drawn().length === 2 && root.querySelectorAll('.ipu-wb-output').length === 1, 'a subgraph shows its output');
  const select = root.querySelector('.ipu-wb-graph-select');
  select.value = 'main_graph';
  select.dispatchEvent(new window.Event('change'));
  assert.deepEqual(drawn(), ['|call.3', '|repeat.5', '|host_store.6']);
  root.querySelector('.ipu-wb-tab-calls').click();
  const loop = [...root.querySelectorAll('.ipu-wb-tree-graph')].find(n => n.textContent === EVIL);
  loop.click();
  assert.deepEqual(drawn(), [`|${EVIL}/neg.4`]);
  assert.ok(!root.querySelector('.ipu-wb-graph-view').classList.contains('ipu-wb-hidden'));
});

test('the call tree shows call kinds and repeat counts', () => {
  const { root } = render(sampleDocument(), { view: 'calls' });
  const tree = root.querySelector('.ipu-wb-call-tree');
  assert.ok(!tree.classList.contains('ipu-wb-hidden'));
  const items = [...tree.querySelectorAll('.ipu-wb-tree-children > li')].map(li => li.textContent.trim());
  assert.deepEqual(items, ['call body 2 ops', `repeat ×3 ${EVIL} 1 op`]);
});

test('the liveness chart stacks four series and marks the peak', () => {
  const { window, root } = render(sampleDocument(), { view: 'memory', device: { kind: 'ipu_model', tile_bytes_per_ipu: 1480 } });
  const chart = root.querySelector('.ipu-wb-liveness');
  assert.equal(chart.querySelectorAll('.ipu-wb-area').length, 4);
  assert.equal(chart.querySelectorAll('.ipu-wb-step').length, 6);
  assert.equal(chart.querySelector('.ipu-wb-liveness-summary').textContent,
    'IPU 0: peak 148 B at step 2 of 1.45 KiB (10.00%) on ipu_model');
  chart.querySelectorAll('.ipu-wb-step')[2].dispatchEvent(new window.MouseEvent('mouseenter'));
  const details = root.querySelector('.ipu-wb-details').textContent;
  assert.ok(details.startsWith(`step 2: add ${EVIL_SCRIPT}.2`), details);
  assert.ok(details.includes('intermediates 32 B'));
});

test('unticking a series in the legend removes its area and rescales the chart', () => {
  const { window, root } = render(sampleDocument(), { view: 'memory' });
  const chart = root.querySelector('.ipu-wb-liveness');
  const ticks = () => [...chart.querySelectorAll('.ipu-wb-axis-label')].map(n => n.textContent).filter(t => t.endsWith(' B'));
  assert.deepEqual(ticks(), ['0 B', '32 B', '64 B', '96 B', '128 B'], 'a power of two apart, up to the top of 148 B');
  const code = [...chart.querySelectorAll('.ipu-wb-series-toggle')].find(box => box.value === 'code');
  code.checked = false;
  code.dispatchEvent(new window.Event('change'));
  const areas = [...chart.querySelectorAll('.ipu-wb-area')].map(n => n.getAttribute('class'));
  assert.deepEqual(areas, ['ipu-wb-area ipu-wb-series-variable', 'ipu-wb-area ipu-wb-series-constant',
    'ipu-wb-area ipu-wb-series-intermediate']);
  assert.deepEqual(ticks(), ['0 B', '8 B', '16 B', '24 B', '32 B', '40 B', '48 B'],
    'the largest stack without code: 16 B of variables + 32 B of intermediates');
});

test('a document without liveness, or whose liveness failed, says so', () => {
  const document = sampleDocument();
  document.liveness = { version: 1, error: 'graph cycle', steps: [], ipus: [] };
  assert.equal(render(document).root.querySelector('.ipu-wb-liveness').textContent, 'No liveness: graph cycle');
  delete document.liveness;
  assert.equal(render(document).root.querySelector('.ipu-wb-liveness').textContent, 'This document has no liveness section.');
});

test('graphs calling each other in a cycle are drawn to a bounded depth', () => {
  const document = sampleDocument();
  const [main, body] = document.graphs;
  body.ops.push({ ...main.ops[0], id: 'body/call.9', name: 'call.9', inputs: ['body/a'], outputs: [] });
  document.call_sites.push({ graph: 'body', op: 'body/call.9', callee: 'body', kind: 'call', repeat_count: null, inputs: [], outputs: [] });
  const { root } = render(document);
  root.querySelector('.ipu-wb-expand-all').click();
  assert.equal(root.querySelectorAll('.ipu-wb-frame-label').length, 8 + 1, 'eight nested bodies and the loop');
  const tree = root.querySelector('.ipu-wb-call-tree');
  assert.equal(tree.querySelectorAll('.ipu-wb-tree-graph').length, 4, 'main, body, body again (a leaf), the loop');
});

test('JSON text is read like an object, and another schema is refused with a message', () => {
  assert.ok(render(JSON.stringify(sampleDocument())).root.classList.contains('ipu-wb-root'));
  const { root } = render({ schema: 'something-else', version: 1 });
  assert.ok(root.classList.contains('ipu-wb-error'));
  assert.equal(root.textContent, 'Cannot show this IR: expected schema "ipu-workbench/ir", got "something-else"');
  const newer = render({ ...sampleDocument(), version: 2 }).root;
  assert.equal(newer.textContent, 'Cannot show this IR: this viewer reads version 1 of "ipu-workbench/ir", got version 2');
});

test('the stylesheet takes every meaningful colour from the visual language the view sets on its root', () => {
  const css = readFileSync(new URL('../style/base.css', import.meta.url), 'utf8');
  assert.deepEqual(css.match(/#[0-9a-f]{3,8}\b/gi), null, 'no colour written into the stylesheet');
  const { root } = render(sampleDocument());
  const set = new Set(Array.from({ length: root.style.length }, (_, i) => root.style.item(i)));
  set.add('--ipu-wb-ipu-fill');
  const used = new Set([...css.matchAll(/var\((--ipu-wb-[\w-]+)\)/g)].map(match => match[1]));
  assert.deepEqual([...used].filter(name => !set.has(name)), []);
  assert.equal(root.style.getPropertyValue('--ipu-wb-variable'), '#4C78A8', 'variables are blue, as in the plotly views');
  assert.equal(root.style.getPropertyValue('--ipu-wb-code'), '#54A24B', 'code is green');
  const op = root.querySelector('.ipu-wb-op');
  assert.equal(op.style.getPropertyValue('--ipu-wb-ipu-fill'), '#DCE6F2', 'ops are filled by their IPU');
});
