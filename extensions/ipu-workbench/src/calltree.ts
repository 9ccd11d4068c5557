/**
 * The call tree: the main graph at the root, each call site a child (call, repeat ×N, branch (then),
 * branch (else)); subtrees fold with <details>. Graphs that nothing calls are listed after the tree. A
 * program of one graph gets a card saying so instead of a tree of one entry.
 */
import { Details } from './details.js';
import { el } from './dom.js';
import { CallSiteRecord, GraphRecord, IrIndex } from './model.js';
import { countOf, siteLabel } from './visual.js';

const MAX_DEPTH = 16;

/** Where a graph's ops run: 'on IPU 1', 'on IPUs 0, 1', or nothing for a graph without ops. */
function ipusText(graph: GraphRecord): string {
  const ipus = [...new Set(graph.ops.map(op => op.ipu))].sort((a, b) => a - b);
  return ipus.length === 0 ? '' : ` on IPU${ipus.length > 1 ? 's' : ''} ${ipus.join(', ')}`;
}

/** The one graph of a program that calls no other: its name (click to open it), ops and IPUs, and a note. */
function oneGraphCard(doc: Document, graph: GraphRecord, details: Details, onSelect: (graph: string) => void): HTMLElement {
  const name = el(doc, 'span', 'ipu-wb-tree-graph', [graph.label]);
  name.addEventListener('click', () => onSelect(graph.id));
  const card = el(doc, 'div', 'ipu-wb-call-tree ipu-wb-tree-card', [
    el(doc, 'div', '', [name, el(doc, 'span', 'ipu-wb-tree-count', [` ${countOf(graph.ops.length, 'op')}${ipusText(graph)}`])]),
    el(doc, 'div', 'ipu-wb-tree-note', ['the whole program: one graph, calling no other'])
  ]);
  card.addEventListener('mouseenter', () => details.show(`graph ${graph.label}`, [`id: ${graph.id}`, countOf(graph.ops.length, 'op')]));
  return card;
}

export function renderCallTree(doc: Document, index: IrIndex, details: Details, onSelect: (graph: string) => void): HTMLElement {
  if (index.doc.graphs.length === 1 && index.doc.call_sites.length === 0) {
    return oneGraphCard(doc, index.main, details, onSelect);
  }
  const entry = (graph: GraphRecord, site: CallSiteRecord | null, ancestors: Set<string>): HTMLElement => {
    const name = el(doc, 'span', 'ipu-wb-tree-graph', [graph.label]);
    name.addEventListener('click', () => onSelect(graph.id));
    const summaryParts: (Node | string)[] = [];
    if (site) {
      summaryParts.push(el(doc, 'span', 'ipu-wb-tree-kind', [`${siteLabel(site)} `]));
    }
    summaryParts.push(name, el(doc, 'span', 'ipu-wb-tree-count', [` ${countOf(graph.ops.length, 'op')}`]));
    const item = el(doc, 'li', 'ipu-wb-tree-item');
    item.addEventListener('mouseenter', event => {
      event.stopPropagation();
      if (site) {
        const op = index.ops.get(site.op);
        if (op) {
          details.showOp(index, site.graph, op);
          return;
        }
      }
      details.show(`graph ${graph.label}`, [`id: ${graph.id}`, countOf(graph.ops.length, 'op')]);
    });
    const sites = index.callSitesOf(graph.id);
    if (sites.length === 0 || ancestors.has(graph.id) || ancestors.size >= MAX_DEPTH) {
      item.appendChild(el(doc, 'div', 'ipu-wb-tree-leaf', summaryParts));
      return item;
    }
    const inner = new Set(ancestors).add(graph.id);
    const children = el(doc, 'ul', 'ipu-wb-tree-children');
    for (const child of sites) {
      const callee = index.graphs.get(child.callee);
      if (callee) {
        children.appendChild(entry(callee, child, inner));
      }
    }
    const fold = el(doc, 'details', 'ipu-wb-tree-fold', [el(doc, 'summary', '', summaryParts), children]);
    fold.open = true;
    item.appendChild(fold);
    return item;
  };
  const called = new Set(index.doc.call_sites.map(site => site.callee));
  const root = el(doc, 'ul', 'ipu-wb-tree', [entry(index.main, null, new Set())]);
  const orphans = index.doc.graphs.filter(g => !g.is_main && !called.has(g.id));
  const parts: HTMLElement[] = [root];
  if (orphans.length) {
    parts.push(el(doc, 'div', 'ipu-wb-tree-note', ['not called from the main graph:']),
      el(doc, 'ul', 'ipu-wb-tree', orphans.map(g => entry(g, null, new Set()))));
  }
  return el(doc, 'div', 'ipu-wb-call-tree', parts);
}
