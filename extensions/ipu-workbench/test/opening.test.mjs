// How the Graph tab opens a graph: grouped where the document's `grouped.graphs[].opens` says so (the Python side
// decides once for the notebook and the extension), with a button that draws every op; op by op otherwise, and in
// a document without it by size alone. The Python tests pass real exports in IPU_WB_OPENING: [{ path, graph, out }],
// and read back what the tab drew from `out`.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { renderIr } from '../lib/view.js';
import { sampleDocument } from './documents.mjs';
import { settled } from './settle.mjs';

/** The Graph tab of `document` showing `graph`, drawn. */
async function graphTab(document, graph) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  const root = renderIr(dom.window.document.body, document, { graph, view: 'graph' });
  await settled(root);
  return root;
}

/** What the Graph tab shows: the grouped picture's group and op boxes, or the op-by-op drawing's op keys. */
function shown(root) {
  const canvas = root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
  const grouped = canvas.querySelector('.ipu-wb-group-svg');
  return {
    opens: canvas.getAttribute('data-opens'),
    message: canvas.querySelector('.ipu-wb-large')?.textContent ?? '',
    groups: grouped ? [...grouped.querySelectorAll('.ipu-wb-pbox-group')].map(box => box.getAttribute('data-key')) : [],
    groupLines: grouped ? [...grouped.querySelectorAll('.ipu-wb-pbox-group')].map(box =>
      [...box.querySelectorAll('text')].map(text => text.textContent)) : [],
    ops: grouped ? [...grouped.querySelectorAll('.ipu-wb-pbox-op, .ipu-wb-pbox-call')].map(box => box.getAttribute('data-key')) : [],
    drawnOps: [...canvas.querySelectorAll('.ipu-wb-graph-svg .ipu-wb-node[data-key]')].length
  };
}

test('a graph the document says opens grouped shows its grouped picture; "draw every op" draws it op by op and "show grouped" goes back', async () => {
  const document = sampleDocument();
  const main = document.graphs[0];
  document.grouped = { version: 2, graphs: [{ graph: main.id, root: main.id, opens: { grouped: true, why: 'tall', rows: 30, grouped_rows: 3 },
    groups: [{ id: main.id, label: 'main', kind: 'graph', parent: null, ops: main.ops.length, left: 0, depth: 1,
      nodes: main.ops.map((op, col) => ({ key: op.id, kind: 'op', lines: [op.type], ipu: 0, w: 60, h: 27, layer: 0, col })),
      ports: [], edges: [] }] }] };
  const root = await graphTab(document, main.id);
  const before = shown(root);
  assert.equal(before.opens, 'tall');
  assert.match(before.message, /take 30 rows, more than a screen holds: shown grouped/);
  assert.deepEqual(before.ops, main.ops.map(op => op.id));
  root.querySelector('.ipu-wb-draw-large').click();
  await settled(root);
  const after = shown(root);
  assert.equal(after.opens, null);
  assert.ok(after.drawnOps >= main.ops.length, 'every op drawn');
  const regroup = root.querySelector('.ipu-wb-show-grouped');
  assert.equal(regroup.hidden, false, 'a button goes back to the grouped picture');
  regroup.click();
  await settled(root);
  assert.equal(shown(root).opens, 'tall');
  assert.equal(root.querySelector('.ipu-wb-show-grouped').hidden, true);
  document.grouped.graphs[0].opens.grouped = false;
  assert.equal(shown(await graphTab(document, main.id)).opens, null, 'a graph that opens op by op is drawn op by op');
});

for (const { path, graph, out } of JSON.parse(process.env.IPU_WB_OPENING ?? '[]')) {
  test(`how the Graph tab opens ${graph} in ${path}`, async () => {
    const root = await graphTab(JSON.parse(readFileSync(path, 'utf8')), graph);
    writeFileSync(out, JSON.stringify(shown(root)));
  });
}
