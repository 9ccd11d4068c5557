// ELK in a Web Worker: a layout that takes too long is given up, its worker stopped, and the drawing falls
// back to plain layers; the next layout starts a fresh worker. Node has no workers, so a stand-in that
// never answers plays one (the browser tests run the real worker).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { sampleDocument } from './documents.mjs';

const started = [];
globalThis.Worker = class {
  constructor(url) {
    this.url = url;
    this.terminated = false;
    started.push(this);
  }

  postMessage() {}

  terminate() {
    this.terminated = true;
  }
};

const { elkLayout, LayoutTimeout } = await import('../lib/elk.js');
const { arrange } = await import('../lib/elklayout.js');
const { buildLayout } = await import('../lib/layout.js');
const { IrIndex } = await import('../lib/model.js');

test('a layout that takes too long is given up and its worker stopped; the next starts a new one', async () => {
  await assert.rejects(elkLayout({ id: 'root' }, 0.05), error => error instanceof LayoutTimeout &&
    error.message === 'the layout took longer than 0.05 s');
  assert.equal(started.length, 1);
  assert.ok(started[0].url.startsWith('blob:'), 'the worker runs the bundled source');
  assert.ok(started[0].terminated);
  await assert.rejects(elkLayout({ id: 'root' }, 0.05), LayoutTimeout);
  assert.equal(started.length, 2);
  assert.equal(started[1].url, started[0].url, 'from the same source');
});

test('a graph ELK does not lay out in time is placed in plain layers', async () => {
  const layout = buildLayout(new IrIndex(sampleDocument()), 'main_graph', new Set(['|call.3']));
  const warn = console.warn;
  console.warn = () => {};
  try {
    assert.equal(await arrange(layout, 0.05), false);
  } finally {
    console.warn = warn;
  }
  assert.equal(layout.engine, 'layers');
  assert.ok(layout.width > 0 && layout.nodes.every(node => node.y > 0));
  assert.ok(layout.edges.every(edge => edge.points.length === 2));
});
