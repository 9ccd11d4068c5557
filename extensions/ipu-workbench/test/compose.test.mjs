// The page composes expanded pictures exactly as the Python side does: for each case written by the Python
// tests (IPU_WB_COMPOSE: a path to a list of {pictures, cases}, one per Ir; a case's room null: the default),
// compose.js gives the same boxes and edges.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { compose } from '../lib/compose.js';
import { bandRows, wrapRows } from '../lib/wrapping.js';

const path = process.env.IPU_WB_COMPOSE;
if (path) {
  const sets = JSON.parse(readFileSync(path, 'utf8'));
  test('the page composes every case as the Python side does', () => {
    for (const { pictures, cases } of sets) for (const { group, expanded, room, scene } of cases) {
      const got = compose(id => pictures[id], group, new Set(expanded), room ?? undefined);
      assert.equal(got.width, scene.width, group);
      assert.equal(got.height, scene.height, group);
      assert.deepEqual(got.boxes.map(b => [b.key, b.x, b.y, b.w, b.h, b.expanded, b.lines]),
        scene.boxes.map(b => [b.key, b.x, b.y, b.w, b.h, b.expanded, b.lines]), group);
      assert.deepEqual(got.edges.map(e => [e.points, e.arrow, e.tail, e.head, e.label]),
        scene.edges.map(e => [e.points, e.arrow, e.tail, e.head, e.label]), group);
    }
  });
}

// The rule by which a layer wraps into rows (IPU_WB_WRAP_ROWS: a list of {widths, room, gap, rows} that the
// Python side's compose.wrap_rows gave).
const wrapCases = process.env.IPU_WB_WRAP_ROWS;
if (wrapCases) {
  test('the page wraps every layer into the rows the Python side gives', () => {
    for (const { widths, room, gap, rows } of JSON.parse(wrapCases)) {
      assert.deepEqual(wrapRows(widths, room, gap), rows, JSON.stringify({ widths, room, gap }));
    }
  });
}

// A layered picture's wrapped rows (IPU_WB_BAND_ROWS: a list of {layers, widths, predecessors, room, gap, rows, lefts}
// that the Python side's wrapping.band_rows gave).
const bandCases = process.env.IPU_WB_BAND_ROWS;
if (bandCases) {
  test('the page wraps every layered picture into the rows the Python side gives', () => {
    for (const { layers, widths, predecessors, room, gap, rows, lefts } of JSON.parse(bandCases)) {
      const got = bandRows(layers, new Map(Object.entries(widths)), new Map(Object.entries(predecessors)), room, gap);
      assert.deepEqual(Object.fromEntries(got.rows), rows, JSON.stringify({ layers, room }));
      assert.deepEqual(Object.fromEntries(got.lefts), lefts, JSON.stringify({ layers, room }));
    }
  });
}
