// Every malformed document is shown as one error message in place of the view: the renderer never
// throws, and whatever else is on the page stays as it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { renderIr } from '../lib/view.js';
import { MALFORMED, malformedDocument, sampleDocument } from './documents.mjs';

function page() {
  const dom = new JSDOM('<!DOCTYPE html><body><p id="neighbour">another output</p><div id="host"></div></body>');
  return dom.window.document;
}

test('the set of malformed documents is large and every case is distinct', () => {
  assert.ok(MALFORMED.length >= 31, `${MALFORMED.length} cases`);
  assert.equal(new Set(MALFORMED.map(item => item.name)).size, MALFORMED.length);
  const texts = MALFORMED.map(item => JSON.stringify(malformedDocument(item)));
  assert.equal(new Set(texts).size, MALFORMED.length, 'no two cases make the same document');
  assert.ok(!texts.includes(JSON.stringify(sampleDocument())), 'every case changes the sample');
});

for (const item of MALFORMED) {
  test(`malformed: ${item.name}`, () => {
    const doc = page();
    const host = doc.getElementById('host');
    const root = renderIr(host, malformedDocument(item), { view: 'memory' });
    assert.deepEqual([...host.children], [root], 'one element, in the host');
    assert.ok(root.classList.contains('ipu-wb-error'));
    const message = `Cannot show this IR: ${item.expect}`;
    if (item.caught_by === 'json') {
      assert.ok(root.textContent.startsWith(message), root.textContent);
    } else {
      assert.equal(root.textContent, message);
    }
    assert.equal(root.children.length, 0, 'nothing of the view is drawn');
    assert.equal(doc.getElementById('neighbour').textContent, 'another output');
  });
}

/** A small deterministic generator, so a failure can be replayed. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every (parent, key) pair of the document's tree. */
function slots(node, found = []) {
  if (typeof node === 'object' && node !== null) {
    for (const key of Object.keys(node)) {
      found.push([node, Array.isArray(node) ? Number(key) : key]);
      slots(node[key], found);
    }
  }
  return found;
}

const REPLACEMENTS = [null, -1, 0, 2.5, '', 'main_graph', 'call.3', [], {}, [0], ['y'], true, 1e9];

test('random damage to the sample never makes the renderer throw, and a view drawn still works', () => {
  const next = random(9);
  const doc = page();
  const host = doc.getElementById('host');
  let errors = 0;
  for (let round = 0; round < 600; round++) {
    const document = sampleDocument();
    for (let edits = 1 + Math.floor(next() * 3); edits > 0; edits--) {
      const all = slots(document);
      const [parent, key] = all[Math.floor(next() * all.length)];
      if (next() < 0.25) {
        Array.isArray(parent) ? parent.splice(key, 1) : delete parent[key];
      } else {
        parent[key] = REPLACEMENTS[Math.floor(next() * REPLACEMENTS.length)];
      }
    }
    host.replaceChildren();
    const root = renderIr(host, document);
    if (root.classList.contains('ipu-wb-error')) {
      errors += 1;
      assert.match(root.textContent, /^Cannot show this IR: \S/);
      assert.ok(!root.textContent.includes('the viewer failed'), root.textContent);
      continue;
    }
    root.querySelector('.ipu-wb-expand-all').click();
    for (const tab of root.querySelectorAll('.ipu-wb-tab')) {
      tab.click();
    }
    for (const node of root.querySelectorAll('*')) {
      node.dispatchEvent(new doc.defaultView.MouseEvent('mouseenter'));
    }
  }
  assert.ok(errors > 300, `${errors} of 600 damaged documents were refused`);
});
