// The grouped model view draws the pictures the Python side laid out, composed: boxes with their lines, edges with
// arrowheads, groups that open on click and a breadcrumb back. The document comes from the Python tests
// (IPU_WB_GROUPED: a path to an export of ResNet-50 with its grouped section).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { compose } from '../lib/compose.js';
import { preview } from '../lib/details.js';
import { renderIr } from '../lib/view.js';
import { settled } from './settle.mjs';

function render(value, options = {}) {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  return { window: dom.window, root: renderIr(dom.window.document.body, value, options) };
}

function click(window, node) {
  node.dispatchEvent(new window.MouseEvent('click', { bubbles: true }));
}

const path = process.env.IPU_WB_GROUPED;
if (path) {
  const document = JSON.parse(readFileSync(path, 'utf8'));
  const picture = id => document.grouped.graphs.flatMap(g => g.groups).find(g => g.id === id);

  test('a document with grouped pictures opens on them, drawn as laid out', () => {
    const { root } = render(document);
    assert.ok(root.querySelector('.ipu-wb-tab-model').classList.contains('ipu-wb-active'));
    assert.equal(root.querySelector('.ipu-wb-graph-svg'), null, 'the hidden graph tab lays nothing out');
    const top = document.grouped.graphs[0].groups[0];
    const svg = root.querySelector('.ipu-wb-group-svg');
    assert.equal(svg.getAttribute('data-group'), top.id);
    const scene = compose(picture, top.id, new Set());
    assert.equal(Number(svg.getAttribute('width')), scene.width);
    const boxes = [...svg.querySelectorAll('.ipu-wb-pbox')];
    assert.deepEqual(boxes.map(b => b.getAttribute('transform')), scene.boxes.map(b => `translate(${b.x - b.w / 2},${b.y})`));
    assert.deepEqual(boxes.map(b => b.getAttribute('data-key')), top.nodes.map(n => n.key));
    assert.deepEqual(boxes.map(b => [...b.querySelectorAll('text')].map(t => t.textContent)), top.nodes.map(n => n.lines));
    const edges = [...svg.querySelectorAll('.ipu-wb-edge')];
    assert.equal(edges.length, top.edges.length);
    assert.ok(edges.every(e => e.getAttribute('marker-end') === 'url(#ipu-wb-arrow)'), 'every edge has an arrowhead');
    assert.ok(edges.every(e => e.querySelector('title').textContent.includes('float32[')), 'an edge names its tensor and shape');
    const legend = root.querySelector('.ipu-wb-legend').textContent;
    for (const text of ['op on IPU 0', 'group of ops', 'tensor']) {
      assert.ok(legend.includes(text), `the legend explains ${text}`);
    }
  });

  test('clicking a group expands it in place, the breadcrumb reaches every level', () => {
    const { window, root } = render(document);
    const top = document.grouped.graphs[0].groups[0];
    const first = top.nodes.find(n => n.kind === 'group' && n.lines[0] === '▸ res2');
    click(window, root.querySelector(`.ipu-wb-pbox[data-key="${first.key}"]`));
    const svg = root.querySelector('.ipu-wb-group-svg');
    assert.equal(svg.getAttribute('data-group'), top.id, 'the picture stays the whole graph');
    const frame = svg.querySelector(`.ipu-wb-pbox-frame[data-key="${first.key}"]`);
    assert.ok(frame, 'the group is drawn as a frame');
    assert.equal(svg.querySelector(`.ipu-wb-frame-title[data-key="${first.key}"] text`).textContent, '▾ res2 · 32 ops');
    const keys = [...svg.querySelectorAll('.ipu-wb-pbox')].map(b => b.getAttribute('data-key'));
    for (const node of picture(first.key).nodes.concat(top.nodes)) {
      assert.ok(keys.includes(node.key), `${node.key} is drawn`);
    }
    const inner = picture(first.key).nodes[0];
    click(window, root.querySelector(`.ipu-wb-pbox[data-key="${inner.key}"]`));
    const crumbs = [...root.querySelectorAll('.ipu-wb-crumb')].map(c => c.textContent);
    assert.deepEqual(crumbs, ['main (181 ops)', 'res2 (32 ops)', `${inner.lines[0].slice(2)} (${inner.count} ops)`]);
    click(window, root.querySelectorAll('button.ipu-wb-crumb')[1]);  // res2 alone
    assert.equal(root.querySelector('.ipu-wb-group-svg').getAttribute('data-group'), first.key);
    click(window, root.querySelector('button.ipu-wb-crumb'));
    assert.equal(root.querySelector('.ipu-wb-group-svg').getAttribute('data-group'), top.id);
    click(window, root.querySelector(`.ipu-wb-frame-title[data-key="${first.key}"]`));
    assert.equal(root.querySelector('.ipu-wb-pbox-frame'), null, 'the title closes the frame, and those inside it');
  });

  test('pointing at an op shows its details', () => {
    const { window, root } = render(document);
    const conv = root.querySelector('.ipu-wb-pbox-op:has(text)');
    conv.dispatchEvent(new window.MouseEvent('mouseenter'));
    assert.match(root.querySelector('.ipu-wb-details-title').textContent, /^(init|host_load|conv) /);
  });

  test('the picture is laid out for the width of its canvas, drawn smaller where a little wider, and again on resize', () => {
    const dom = new JSDOM('<!DOCTYPE html><body></body>');
    const observers = [];
    dom.window.ResizeObserver = class {
      constructor(callback) { this.callback = callback; observers.push(this); }
      observe(node) { this.node = node; }
    };
    const root = renderIr(dom.window.document.body, document);
    const canvas = root.querySelector('.ipu-wb-group-canvas');
    const resize = width => {
      Object.defineProperty(canvas, 'clientWidth', { value: width, configurable: true });
      observers.filter(o => o.node === canvas).forEach(o => o.callback());
    };
    const top = document.grouped.graphs[0].groups[0];
    const res2 = top.nodes.find(n => n.kind === 'group' && n.lines[0] === '▸ res2');
    const svg = () => root.querySelector('.ipu-wb-group-svg');
    const note = () => root.querySelector('.ipu-wb-group-note').textContent;
    resize(600);
    click(dom.window, root.querySelector(`.ipu-wb-pbox[data-key="${res2.key}"]`));
    const narrow = compose(picture, top.id, new Set([res2.key]), 600);
    const wide = compose(picture, top.id, new Set([res2.key]), 1000);
    assert.ok(narrow.width <= 600 && wide.width > 600, 'the expanded picture folds to the room');
    assert.equal(svg().viewBox.baseVal.width, narrow.width);
    assert.equal(Number(svg().getAttribute('width')), narrow.width);
    resize(1000);  // the output resized: laid out again, with no click
    assert.equal(svg().viewBox.baseVal.width, wide.width);
    assert.equal(note(), '');
    resize(Math.round(wide.width * 0.9));  // a little narrower than the picture: drawn smaller
    const shrunk = compose(picture, top.id, new Set([res2.key]), Math.round(wide.width * 0.9));
    const room = Math.round(wide.width * 0.9);
    if (shrunk.width > room) {
      assert.equal(Number(svg().getAttribute('width')), room);
      assert.match(note(), /^drawn at \d+% to fit$/);
    }
    resize(100);  // far narrower: the picture keeps its size and scrolls
    const least = compose(picture, top.id, new Set([res2.key]), 100);
    assert.equal(Number(svg().getAttribute('width')), least.width);
    assert.equal(note(), `${Math.round(least.width)} px wide: scroll sideways`);
  });

  test('the graph tab folds weights and constants into the boxes of the ops that read them', async () => {
    const dom = new JSDOM('<!DOCTYPE html><body></body>', { runScripts: 'outside-only' });
    const root = renderIr(dom.window.document.body, document);
    click(dom.window, root.querySelector('.ipu-wb-tab-graph'));
    await settled(root);
    assert.equal(root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas').getAttribute('data-opens'), 'large', 'its 181 ops open grouped');
    root.querySelector('.ipu-wb-draw-large').click();
    await settled(root);
    const svg = root.querySelector('.ipu-wb-graph-svg');
    assert.equal(svg.querySelectorAll('.ipu-wb-variable, .ipu-wb-constant').length, 0, 'no weight is a node of its own');
    const ops = [...svg.querySelectorAll('.ipu-wb-op')];
    assert.equal(ops.length, document.graphs[0].ops.length);
    const conv = ops.find(n => n.querySelector('title').textContent.startsWith('conv '));
    assert.deepEqual([...conv.querySelectorAll('.ipu-wb-subline')].map(t => t.textContent), ['gpu_0/conv1_w_0 ⟨64×3×7×7⟩']);
    assert.equal(Number(conv.querySelector('rect').getAttribute('height')), 26 + 14, 'a line more for the weight');
    const search = root.querySelector('.ipu-wb-search');
    search.value = 'conv1_w';
    search.dispatchEvent(new dom.window.Event('input'));
    assert.deepEqual([...svg.querySelectorAll('.ipu-wb-match')], [conv], 'a search for the weight finds the op that reads it');
  });
}

test('an attribute nested 5,000 deep shows as a short preview, with no stack overflow', () => {
  let deep = [1];
  for (let i = 0; i < 5000; i++) {
    deep = [deep];
  }
  const text = preview(deep);
  assert.ok(text.length <= 160 && text.startsWith('[[[[') && text.endsWith('…'), text);
  assert.equal(preview({ a: [1, 'x'], b: null }), '{"a":[1,"x"],"b":null}');
});
