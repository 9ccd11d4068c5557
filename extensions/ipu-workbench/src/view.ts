/**
 * The whole view of one IR document: a summary line, then tabs for the graph view, the call tree
 * and the liveness chart, with a shared details panel.
 */
import { renderCallTree } from './calltree.js';
import { Details } from './details.js';
import { button, el } from './dom.js';
import { GraphView } from './graphview.js';
import { GroupView } from './groupview.js';
import { renderLiveness } from './liveness.js';
import { applyColours, countOf } from './visual.js';
import { DocumentError, IrIndex, readDocument, readOptions, ViewName } from './model.js';

export const ROOT_CLASS = 'ipu-wb-root';

const TABS: { view: ViewName; label: string }[] = [
  { view: 'model', label: 'Model' },
  { view: 'graph', label: 'Graph' },
  { view: 'calls', label: 'Call tree' },
  { view: 'memory', label: 'Memory' }
];

/**
 * Draws `value` (an "ipu-workbench/ir" document or its JSON text) into `host` and returns the root.
 * Never throws: a document that is not valid, or anything else that stops the drawing, is shown as an
 * error message in place of the view. `options` is the MIME metadata (ill-formed fields are ignored).
 */
export function renderIr(host: HTMLElement, value: unknown, options: unknown = {}): HTMLElement {
  let root: HTMLElement;
  try {
    root = buildView(host.ownerDocument, value, options);
  } catch (error) {
    root = el(host.ownerDocument, 'div', `${ROOT_CLASS} ipu-wb-error`, [`Cannot show this IR: ${messageOf(error)}`]);
  }
  host.appendChild(root);
  return root;
}

/** A malformed document says what is wrong with it; anything else is the viewer's own failure. */
function messageOf(error: unknown): string {
  if (error instanceof DocumentError) {
    return error.message;
  }
  return `the viewer failed (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)})`;
}

function buildView(doc: Document, value: unknown, given: unknown): HTMLElement {
  const options = readOptions(given);
  const index = new IrIndex(readDocument(value));
  const details = new Details(doc, 'Point at an op, tensor, call or step for its details.');
  const groupedPictures = new Map<string, GroupView>();  // the Graph tab's, of graphs too big to draw op by op
  const graphView = new GraphView(doc, index, details, options.graph ?? index.main.id, graphId => {
    if (!groupView.has(graphId)) {
      return undefined;
    }
    const picture = groupedPictures.get(graphId) ?? new GroupView(doc, index, details, graphId, false);
    groupedPictures.set(graphId, picture);
    return picture.node;
  });
  const groupView = new GroupView(doc, index, details, options.graph ?? index.main.id);
  const panels = {
    model: groupView.node,
    graph: graphView.node,
    calls: renderCallTree(doc, index, details, graph => {
      graphView.show(graph);
      groupView.showGraph(graph);
      select(groupView.available ? 'model' : 'graph');
    }),
    memory: renderLiveness(doc, index, details, options)
  };
  const buttons = new Map<string, HTMLButtonElement>();
  const select = (view: ViewName) => {
    if (view === 'graph') {
      graphView.activate();
    }
    for (const tab of TABS) {
      panels[tab.view].classList.toggle('ipu-wb-hidden', tab.view !== view);
      buttons.get(tab.view)?.classList.toggle('ipu-wb-active', tab.view === view);
    }
  };
  // The first document of a big program holds the grouped picture's top level alone.
  const arriving = options.arriving !== undefined && groupView.available;
  const tabs = TABS.filter(tab => (tab.view !== 'model' || groupView.available) && (!arriving || tab.view === 'model'));
  for (const tab of tabs) {
    buttons.set(tab.view, button(doc, tab.label, `ipu-wb-tab ipu-wb-tab-${tab.view}`, () => select(tab.view)));
  }
  const ops = index.doc.graphs.reduce((sum, g) => sum + g.ops.length, 0);
  const summary = arriving ? `IR ${index.doc.ir.id}: ${options.arriving}` :
    `IR ${index.doc.ir.id}: ${countOf(index.doc.graphs.length, 'graph')}, ${countOf(ops, 'op')}, ` +
    `replication factor ${index.doc.ir.replication_factor}`;
  const root = el(doc, 'div', ROOT_CLASS, [
    el(doc, 'div', 'ipu-wb-header', [el(doc, 'span', 'ipu-wb-summary', [summary]), ...buttons.values()]),
    el(doc, 'div', 'ipu-wb-body', [el(doc, 'div', 'ipu-wb-panels', Object.values(panels)), details.node])
  ]);
  applyColours(root);
  const first = arriving ? 'model' : options.view ?? (groupView.available ? 'model' : 'graph');
  select(first === 'model' && !groupView.available ? 'graph' : first);
  return root;
}
