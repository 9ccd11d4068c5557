// Long schedules and big graphs: a million flattened steps are checked and drawn (the memory series
// grouped into columns that keep every peak), and nothing recurses or spreads per step or per op.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { columns } from '../lib/columns.js';
import { IrIndex } from '../lib/model.js';
import { layoutGraph } from '../lib/layout.js';
import { renderIr } from '../lib/view.js';
import { settled } from './settle.mjs';

const tensor = (graph, name, producer, kind = 'intermediate') => ({
  id: graph === 'main_graph' ? name : `${graph}/${name}`, name, kind, shape: [4], meta_shape: [], dtype: 'float32',
  ipu: 0, tile_set: 'compute', nbytes: 16, producer
});

const op = (graph, name, type, inputs, outputs, called_graphs = []) => ({
  id: graph === 'main_graph' ? name : `${graph}/${name}`, name, type, ipu: 0, tile_set: 'compute', inputs, outputs,
  attrs: {}, called_graphs, modified: [], aliases: [], after: []
});

/** main calls `body` `calls` times; body is a chain of `length` negations. Steps: calls × (1 + length). */
function longSchedule(calls, length, peakStep) {
  const bodyOps = [];
  const bodyTensors = [tensor('body', 't0', null, 'input')];
  for (let i = 1; i <= length; i++) {
    bodyOps.push(op('body', `neg.${i}`, 'neg', [`body/t${i - 1}`], [`body/t${i}`]));
    bodyTensors.push(tensor('body', `t${i}`, `body/neg.${i}`));
  }
  const mainOps = [];
  const mainTensors = [tensor('main_graph', 'x0', null, 'variable')];
  const sites = [];
  const steps = [];
  for (let c = 1; c <= calls; c++) {
    mainOps.push(op('main_graph', `call.${c}`, 'call', [`x${c - 1}`], [`x${c}`], ['body']));
    mainTensors.push(tensor('main_graph', `x${c}`, `call.${c}`));
    sites.push({ graph: 'main_graph', op: `call.${c}`, callee: 'body', kind: 'call', repeat_count: null,
      inputs: [[`x${c - 1}`, 'body/t0']], outputs: [[`body/t${length}`, `x${c}`]] });
    steps.push({ op: `call.${c}`, graph: 'main_graph', depth: 0 });
    for (let i = 1; i <= length; i++) {
      steps.push({ op: `body/neg.${i}`, graph: 'body', depth: 1 });
    }
  }
  const intermediates = new Array(steps.length);
  for (let s = 0; s < steps.length; s++) {
    intermediates[s] = 16 + (s % 97);
  }
  intermediates[peakStep] = 1 << 20;
  return {
    schema: 'ipu-workbench/ir', version: 1, ir: { id: 1, replication_factor: 1, num_host_transfers: 1 },
    graphs: [
      { id: 'main_graph', name: '', label: 'main', is_main: true, inputs: [], outputs: [], ops: mainOps, tensors: mainTensors },
      { id: 'body', name: 'body', label: 'body', is_main: false, inputs: ['body/t0'], outputs: [`body/t${length}`],
        ops: bodyOps, tensors: bodyTensors }
    ],
    call_sites: sites, streams: [], variables: [], remote_buffers: [],
    liveness: { version: 1, error: null, steps, ipus: [{ ipu: 0, variables: 16, constants: 0, intermediates,
      code: new Array(steps.length).fill(4096), peak_step: peakStep, peak_bytes: 16 + (1 << 20) + 4096 }] }
  };
}

function render(document, options) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  return { window: dom.window, root: renderIr(dom.window.document.body, document, options) };
}

test('columns keep the largest step of each run, and every step belongs to one column', () => {
  const totals = [1, 5, 2, 2, 9, 0, 3];
  assert.deepEqual(columns(7, s => totals[s], 3), [{ first: 0, last: 1, step: 1 }, { first: 2, last: 3, step: 2 },
    { first: 4, last: 6, step: 4 }]);
  assert.deepEqual(columns(3, s => totals[s], 10).map(c => c.step), [0, 1, 2]);
});

test('a million-step export is drawn with its peak, in a bounded number of columns', () => {
  const peak = 777_777;
  const document = longSchedule(1000, 999, peak);
  assert.equal(document.liveness.steps.length, 1_000_000);
  const { window, root } = render(document, { view: 'memory' });
  assert.ok(!root.classList.contains('ipu-wb-error'), root.textContent);
  const chart = root.querySelector('.ipu-wb-liveness');
  const hovers = chart.querySelectorAll('.ipu-wb-step');
  assert.equal(hovers.length, 640, 'one column per pixel of the plot');
  for (const area of chart.querySelectorAll('.ipu-wb-area')) {
    assert.equal(area.getAttribute('points').split(' ').length, 4 * hovers.length);
  }
  assert.equal(chart.querySelector('.ipu-wb-liveness-summary').textContent, `IPU 0: peak 1 MiB at step ${peak}`);
  const peakX = Number(chart.querySelector('.ipu-wb-peak').getAttribute('x1'));
  const holding = [...hovers].filter(rect => Number(rect.getAttribute('x')) <= peakX).at(-1);
  holding.dispatchEvent(new window.MouseEvent('mouseenter'));
  const details = root.querySelector('.ipu-wb-details').textContent;
  assert.ok(details.startsWith(`step ${peak}: neg neg.`), details);
  assert.ok(details.includes(`drawn as their largest, step ${peak}`), details);
});

test('a million-step export with one series entry missing at the end is refused with a message', () => {
  const document = longSchedule(1000, 999, 5);
  document.liveness.ipus[0].code.pop();
  const { root } = render(document, { view: 'memory' });
  assert.equal(root.textContent, 'Cannot show this IR: liveness.ipus[0].code has 999999 entries for 1000000 steps');
});

test('a chain of 120,000 ops is laid out one layer per op', () => {
  const document = longSchedule(1, 120_000, 0);
  const layout = layoutGraph(new IrIndex(document), 'body', new Set());
  const layers = new Map(layout.nodes.map(node => [node.key, node.layer]));
  assert.equal(layers.get('|body/t0'), 0);
  assert.equal(layers.get('|body/neg.1'), 1);
  assert.equal(layers.get('|body/neg.120000'), 120_000);
});

test('a graph too big to draw at once says so and is drawn when asked', async () => {
  const { root } = render(longSchedule(2, 3000, 0), { graph: 'body' });
  const notice = root.querySelector('.ipu-wb-large');
  assert.equal(notice.firstChild.textContent,
    'Graph body has 6,001 ops and tensors to draw, which can take the browser a while. ');
  assert.equal(root.querySelectorAll('.ipu-wb-node').length, 0);
  root.querySelector('.ipu-wb-draw-large').click();
  assert.equal(root.querySelector('.ipu-wb-laying-out').textContent, 'Laying out 3,002 nodes…', 'said at once, while ELK works');
  await settled(root);
  assert.equal(root.querySelectorAll('.ipu-wb-graph-svg .ipu-wb-op').length, 3000);
  assert.equal(root.querySelector('.ipu-wb-graph-svg').getAttribute('data-engine'), 'elk');
  root.querySelector('.ipu-wb-graph-select').value = 'main_graph';
  root.querySelector('.ipu-wb-graph-select').dispatchEvent(new root.ownerDocument.defaultView.Event('change'));
  await settled(root);
  assert.equal(root.querySelectorAll('.ipu-wb-graph-svg .ipu-wb-op').length, 2, 'the small main graph is drawn at once');
  root.querySelector('.ipu-wb-expand-all').click();
  assert.ok(root.querySelector('.ipu-wb-large').textContent.startsWith('Graph main has 12,007 ops and tensors'));
});

test('a graph too big for ELK is drawn at once in plain layers, and says so', async () => {
  const { root } = render(longSchedule(1, 4500, 0), { graph: 'body' });
  root.querySelector('.ipu-wb-draw-large').click();
  assert.equal(root.querySelector('.ipu-wb-canvas').getAttribute('aria-busy'), null, 'no wait for a layout');
  const svg = root.querySelector('.ipu-wb-graph-svg');
  assert.equal(svg.getAttribute('data-engine'), 'layers');
  assert.equal(svg.querySelectorAll('.ipu-wb-op').length, 4500);
  assert.equal(root.querySelector('.ipu-wb-layout-note').textContent, '4,502 nodes: drawn in plain layers, edges may cross nodes');
});

// A document written by the Python side (`tests/extension/test_large_graph_tab.py`): a graph too big to draw op by op.
const groupedLarge = process.env.IPU_WB_GROUPED_LARGE;
if (groupedLarge) {
  test('a graph too big to draw op by op opens grouped in the Graph tab, and is drawn op by op when asked', async () => {
    const { graph, ops, path } = JSON.parse(groupedLarge);
    const { root } = render(JSON.parse(readFileSync(path, 'utf8')), { graph, view: 'graph' });
    await settled(root);
    const view = root.querySelector('.ipu-wb-graph-view');
    assert.match(view.querySelector('.ipu-wb-large').firstChild.textContent,
      new RegExp(`^Graph \\S+ has [\\d,]+ ops and tensors: shown grouped, as the Model tab shows it`));
    assert.equal(view.querySelector('.ipu-wb-draw-large').textContent, 'draw every op');
    assert.equal(view.querySelectorAll('.ipu-wb-graph-svg').length, 0, 'no op is drawn until asked');
    const boxes = view.querySelectorAll('.ipu-wb-group-svg .ipu-wb-pbox');
    assert.ok(boxes.length > 0 && boxes.length < 100, `${boxes.length} boxes in the grouped picture`);
    view.querySelector('.ipu-wb-draw-large').click();
    await settled(root);
    const svg = view.querySelector('.ipu-wb-graph-svg');
    assert.equal(svg.getAttribute('data-engine'), 'shipped');
    assert.equal(svg.querySelectorAll('.ipu-wb-op').length, ops);
  });
}
