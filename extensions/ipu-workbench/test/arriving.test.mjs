// A big program's display comes in two steps: a small first document with the top level of its grouped
// picture (the Model tab alone, and a summary that says the rest is coming), then the whole document, as
// JSON text, rendered by the same renderer in its place. The documents come from the Python tests
// (IPU_WB_ARRIVING: a path to {first: {data, metadata}, whole: {data, metadata}} of a 3,000-op program).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!DOCTYPE html><body></body>');
for (const name of ['window', 'document', 'navigator', 'Element', 'HTMLElement', 'Node', 'MouseEvent']) {
  globalThis[name] ??= name === 'window' ? dom.window : dom.window[name];
}
globalThis.DragEvent ??= class DragEvent extends dom.window.MouseEvent {};
const { IrRenderer } = await import('../lib/widget.js');
const { MIME_TYPE } = await import('../lib/index.js');

const path = process.env.IPU_WB_ARRIVING;
if (path) {
  const { first, whole } = JSON.parse(readFileSync(path, 'utf8'));
  const tabs = node => [...node.querySelectorAll('.ipu-wb-tab')].map(tab => tab.textContent);

  test('the first document shows the top level alone and says that the rest is on its way', async () => {
    const renderer = new IrRenderer(MIME_TYPE);
    await renderer.renderModel(first);
    const node = renderer.node;
    assert.deepEqual(tabs(node), ['Model']);
    assert.match(node.querySelector('.ipu-wb-summary').textContent, /^IR \d+: 3,\d{3} ops: the top level first/);
    const top = first.data[MIME_TYPE].grouped.graphs[0].groups[0];
    const svg = node.querySelector('.ipu-wb-group-svg');
    assert.equal(svg.getAttribute('data-group'), top.id);
    assert.deepEqual([...svg.querySelectorAll('.ipu-wb-pbox')].map(b => b.getAttribute('data-key')), top.nodes.map(n => n.key));
    for (const panel of node.querySelectorAll('.ipu-wb-panels > *')) {
      assert.equal(panel.classList.contains('ipu-wb-hidden'), !panel.classList.contains('ipu-wb-group-view'));
    }
  });

  test('the whole document, as JSON text, replaces the first in the same renderer', async () => {
    assert.equal(typeof whole.data[MIME_TYPE], 'string');
    const renderer = new IrRenderer(MIME_TYPE);
    await renderer.renderModel(first);
    await renderer.renderModel(whole);
    const node = renderer.node;
    assert.equal(node.children.length, 1);
    assert.deepEqual(tabs(node), ['Model', 'Graph', 'Call tree', 'Memory']);
    assert.match(node.querySelector('.ipu-wb-summary').textContent, /^IR \d+: 1 graph, 3\d{3} ops, replication factor 1$/);
    const top = first.data[MIME_TYPE].grouped.graphs[0].groups[0];
    const svg = node.querySelector('.ipu-wb-group-svg');
    assert.equal(svg.getAttribute('data-group'), top.id, 'the same top-level picture');
    const group = top.nodes.find(n => n.kind === 'group');
    svg.querySelector(`.ipu-wb-pbox[data-key="${group.key}"]`).dispatchEvent(new dom.window.MouseEvent('click', { bubbles: true }));
    assert.ok(node.querySelector(`.ipu-wb-pbox-frame[data-key="${group.key}"]`), 'a group now opens in place');
  });
}
