// The geometry of drawn graphs: no two node boxes or labels overlap, no edge runs through a box that is
// not one of its ends, and everything lies inside the drawing. The sample is checked here; the Python
// tests pass real exports as JSON in IPU_WB_GEOMETRY: [{ path, graph, expandAll }], and a big export to
// time in IPU_WB_TIMED: { path, graph }.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { renderIr } from '../lib/view.js';
import { sampleDocument } from './documents.mjs';
import { crosses, geometryProblems, readDrawing } from './geometry.mjs';
import { settled } from './settle.mjs';

/** The graph view's drawing; with `room`, drawn in a canvas that many pixels wide (jsdom measures none). */
async function drawn(document, graph, expandAll, room) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  const root = renderIr(dom.window.document.body, document, { graph, view: room ? 'calls' : 'graph' });
  if (room) {
    const canvas = root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
    Object.defineProperty(canvas, 'clientWidth', { value: room });
    Object.defineProperty(canvas, 'offsetWidth', { value: room });
    root.querySelector('.ipu-wb-tab-graph').click();
  }
  await settled(root);
  root.querySelector('.ipu-wb-draw-large')?.click();
  await settled(root);
  if (expandAll) {
    root.querySelector('.ipu-wb-expand-all').click();
    await settled(root);
  }
  assert.ok(!root.classList.contains('ipu-wb-error'), root.textContent);
  return root.querySelector('.ipu-wb-graph-svg');
}

function assertGoodGeometry(svg, engines = ['elk', 'shipped']) {
  assert.ok(engines.includes(svg.getAttribute('data-engine')), svg.getAttribute('data-engine'));
  const drawing = readDrawing(svg);
  assert.deepEqual(geometryProblems(drawing), []);
  return drawing;
}

test('the checks catch an edge through a box, boxes that overlap and a label outside the drawing', () => {
  const box = { left: 0, top: 0, right: 10, bottom: 10 };
  assert.ok(crosses({ x: 5, y: -5 }, { x: 5, y: 15 }, box));
  assert.ok(crosses({ x: -5, y: -5 }, { x: 15, y: 15 }, box));
  assert.ok(!crosses({ x: 10, y: -5 }, { x: 10, y: 15 }, box), 'along a side is not through');
  assert.ok(!crosses({ x: 5, y: -5 }, { x: 5, y: 0 }, box), 'ending on a side is not through');
  const element = { contains: () => false };
  const two = { left: 5, top: 5, right: 15, bottom: 15, name: 'b', element };
  const problems = geometryProblems({ width: 12, height: 20, boxes: [], labels: [{ ...box, name: 'a' }, two], edges: [] });
  assert.deepEqual(problems, ['labels "a" and "b" overlap', 'b is outside the drawing']);
  const label = { getAttribute: () => null, textContent: 'x' };
  const owner = name => ({ contains: () => false, querySelector: () => ({ ...label, parentElement: null }), name });
  const boxes = [{ ...box, name: 'c', element: owner('c'), frame: true }, { ...two, name: 'd', element: owner('d'), frame: true }];
  assert.deepEqual(geometryProblems({ width: 20, height: 20, boxes, labels: [], edges: [] }), ['boxes c and d overlap']);
});

test('the sample, every call expanded, is drawn by ELK without overlaps or edges through nodes', async () => {
  const svg = await drawn(sampleDocument(), undefined, true);
  const drawing = assertGoodGeometry(svg);
  assert.equal(drawing.boxes.filter(b => b.frame).length, 2, 'the body and the loop are drawn in frames');
});

test('edges bend around nodes: the routes have bends, drawn rounded', async () => {
  const document = sampleDocument();
  const main = document.graphs[0];
  // A variable read by the first and the last op: its edge must pass the ops between them.
  main.ops[main.ops.length - 1].inputs.push(main.ops[0].inputs[0]);
  const drawing = assertGoodGeometry(await drawn(document, 'main_graph', false));
  assert.ok(drawing.edges.some(edge => edge.points.length > 2), 'some edge bends');
  assert.ok(drawing.edges.some(edge => edge.element.getAttribute('d').includes('Q')));
});

// A case with `places` (a file path) also writes each box's data-key and edges there, for the Python tests.
for (const { path, graph, expandAll, room, places } of JSON.parse(process.env.IPU_WB_GEOMETRY ?? '[]')) {
  test(`geometry of ${graph}${expandAll ? ' expanded' : ''}${room ? ` at ${room} px` : ''} in ${path}`, async () => {
    const svg = await drawn(JSON.parse(readFileSync(path, 'utf8')), graph, expandAll, room);
    const drawing = assertGoodGeometry(svg);
    console.log(`${graph}${room ? ` at ${room} px` : ''}: ${drawing.boxes.length} boxes, ${drawing.edges.length} edges, ` +
      `${drawing.width} × ${drawing.height} px`);
    if (room) {
      assert.ok(drawing.width <= room - 16, `${drawing.width} px wide in a ${room}-px canvas`);
    }
    if (places) {
      writeFileSync(places, JSON.stringify(drawing.boxes.map(({ name, left, top, right, bottom }) => ({ key: name, left, top, right, bottom }))));
    }
  });
}

if (process.env.IPU_WB_TIMED) {
  const { path, graph, room } = JSON.parse(process.env.IPU_WB_TIMED);
  test(`time to lay out ${graph} in ${path}`, async () => {
    const document = JSON.parse(readFileSync(path, 'utf8'));
    const ops = document.graphs.find(g => g.id === graph).ops.length;
    for (const run of ['first', 'second']) {
      const start = performance.now();
      const svg = await drawn(document, graph, false, room);
      const seconds = (performance.now() - start) / 1000;
      console.log(`${run} layout of ${ops} ops, ${svg.querySelectorAll('.ipu-wb-node').length} nodes: ${seconds.toFixed(2)} s ` +
        `by ${svg.getAttribute('data-engine')}, ${svg.getAttribute('width')} px wide`);
      assert.ok(['elk', 'shipped'].includes(svg.getAttribute('data-engine')));
    }
  });
}

if (process.env.IPU_WB_FIRST_PICTURE) {
  const { path, graph, room } = JSON.parse(process.env.IPU_WB_FIRST_PICTURE);
  test(`${graph} in ${path} is drawn before its wide layers are wrapped to ${room} px`, async () => {
    const dom = new JSDOM('<!DOCTYPE html><body></body>');
    const root = renderIr(dom.window.document.body, JSON.parse(readFileSync(path, 'utf8')), { graph, view: 'calls' });
    const canvas = root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
    Object.defineProperty(canvas, 'clientWidth', { value: room });
    Object.defineProperty(canvas, 'offsetWidth', { value: room });
    root.querySelector('.ipu-wb-tab-graph').click();
    let first;
    while (first === undefined && canvas.getAttribute('aria-busy') === 'true') {
      const svg = canvas.querySelector('.ipu-wb-graph-svg');
      if (svg !== null) {
        first = { width: Number(svg.getAttribute('width')), ops: svg.querySelectorAll('.ipu-wb-op').length,
          note: root.querySelector('.ipu-wb-layout-note').textContent };
      }
      await new Promise(resolve => setTimeout(resolve, 2));
    }
    await settled(root);
    const last = canvas.querySelector('.ipu-wb-graph-svg');
    assert.ok(first !== undefined, 'no drawing was shown while the wrapped layout was made');
    assert.ok(first.width > room, `the first drawing, ${first.width} px, is already wrapped`);
    assert.equal(first.note, 'wrapping wide layers to the output\'s width…');
    assert.equal(first.ops, last.querySelectorAll('.ipu-wb-op').length);
    assert.ok(Number(last.getAttribute('width')) <= room - 16, `the wrapped drawing is ${last.getAttribute('width')} px wide`);
    assert.equal(root.querySelector('.ipu-wb-layout-note').textContent, '');
  });
}
