// For the Python tests: prints, as JSON, the names the extension gives to the document in the file
// argv[2] and to the byte counts in argv[3] (a JSON list), to compare with the plotly views' names.
import { readFileSync } from 'node:fs';

import { layoutGraph } from '../lib/layout.js';
import { IrIndex, readDocument } from '../lib/model.js';
import { formatBytes, siteLabel } from '../lib/visual.js';

const index = new IrIndex(readDocument(readFileSync(process.argv[2], 'utf8')));
const ops = {};
const frames = {};
for (const graph of index.doc.graphs) {
  const calls = graph.ops.filter(op => op.called_graphs.length).map(op => `|${op.id}`);
  for (const node of layoutGraph(index, graph.id, new Set()).nodes) {
    if (node.op) {
      ops[node.op.id] = node.label;
    }
  }
  for (const node of layoutGraph(index, graph.id, new Set(calls)).nodes) {
    if (node.op && node.inner.length) {
      frames[node.op.id] = { label: node.label, bodies: node.inner.map(inner => inner.title) };
    }
  }
}
const sites = index.doc.call_sites.map(site => [site.op, site.callee, siteLabel(site)]);
const bytes = JSON.parse(process.argv[3] ?? '[]').map(formatBytes);
console.log(JSON.stringify({ ops, frames, sites, bytes }));
