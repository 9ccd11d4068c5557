// The JupyterLab side: the MIME renderer never rejects, whatever its model holds, and the extension
// declares the .ir.json file type. Lumino needs a few browser globals, taken from jsdom.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JSDOM } from 'jsdom';

import { MALFORMED, malformedDocument, sampleDocument } from './documents.mjs';

const dom = new JSDOM('<!DOCTYPE html><body></body>');
for (const name of ['window', 'document', 'navigator', 'Element', 'HTMLElement', 'Node', 'MouseEvent']) {
  globalThis[name] ??= name === 'window' ? dom.window : dom.window[name];
}
globalThis.DragEvent ??= class DragEvent extends dom.window.MouseEvent {};
const { IrRenderer } = await import('../lib/widget.js');
const { default: extension, MIME_TYPE } = await import('../lib/index.js');

async function rendered(data, metadata = {}) {
  const renderer = new IrRenderer(MIME_TYPE);
  await renderer.renderModel({ data: { [MIME_TYPE]: data }, metadata });
  return renderer.node;
}

test('the renderer resolves with an error message for every malformed document', async () => {
  for (const item of MALFORMED) {
    const node = await rendered(malformedDocument(item), { [MIME_TYPE]: { view: 'memory' } });
    assert.equal(node.children.length, 1);
    assert.ok(node.textContent.startsWith(`Cannot show this IR: ${item.expect}`), item.name);
  }
});

test('ill-formed metadata is ignored and metadata that cannot be read is an error, not a throw', async () => {
  const node = await rendered(sampleDocument(), { [MIME_TYPE]: { view: 'nonsense', graph: 3, device: { kind: 1 } } });
  assert.ok(!node.firstElementChild.classList.contains('ipu-wb-error'), node.textContent);
  assert.ok(node.querySelector('.ipu-wb-tab-graph').classList.contains('ipu-wb-active'));
  const hostile = { get view() { throw new TypeError('no view here'); } };
  const failed = await rendered(sampleDocument(), { [MIME_TYPE]: hostile });
  assert.equal(failed.textContent, 'Cannot show this IR: the viewer failed (TypeError: no view here)');
});

test('rendering again replaces the previous view', async () => {
  const renderer = new IrRenderer(MIME_TYPE);
  await renderer.renderModel({ data: { [MIME_TYPE]: { graphs: [] } }, metadata: {} });
  await renderer.renderModel({ data: { [MIME_TYPE]: sampleDocument() }, metadata: {} });
  assert.equal(renderer.node.children.length, 1);
  assert.ok(!renderer.node.textContent.includes('Cannot show'));
});

test('.ir.json files open as text, so a file that is not JSON is an error message too', async () => {
  assert.equal(extension.dataType, 'string');
  assert.deepEqual(extension.fileTypes.map(type => type.extensions), [['.ir.json']]);
  const node = await rendered('{"schema": "ipu-workbench/ir", ');
  assert.match(node.textContent, /^Cannot show this IR: the text is not JSON/);
  assert.ok(!(await rendered(JSON.stringify(sampleDocument()))).textContent.includes('Cannot show'));
});
