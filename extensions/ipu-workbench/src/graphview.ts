/**
 * The graph view: one graph drawn as SVG, call ops expandable in place into the graphs they call,
 * hover details, and a search that highlights matching ops and tensors.
 */
import { Details } from './details.js';
import { button, clear, el, svg } from './dom.js';
import { GraphLayout, LayoutEdge, LayoutNode, layoutGraph, MAX_DEPTH, nodeKey } from './layout.js';
import { GraphRecord, IrIndex, OpRecord, TensorRecord } from './model.js';
import { ipuColour } from './visual.js';

const MAX_LABEL_CHARS = 40;
/** Above this many nodes a drawing waits to be asked for: the browser takes seconds for tens of thousands. */
export const MAX_DRAWN_NODES = 5000;

export class GraphView {
  readonly node: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly searchBox: HTMLInputElement;
  private readonly status: HTMLElement;
  private readonly expandMatches: HTMLButtonElement;
  private readonly canvas: HTMLElement;
  private readonly expanded = new Set<string>();
  private drawn: { element: SVGElement; op?: OpRecord; tensor?: TensorRecord }[] = [];
  private graphId: string;
  private query = '';
  private drawLarge = false;

  constructor(private readonly doc: Document, private readonly index: IrIndex, private readonly details: Details, graphId: string) {
    this.graphId = index.graphs.has(graphId) ? graphId : index.main.id;
    this.select = el(doc, 'select', 'ipu-wb-graph-select');
    for (const graph of index.doc.graphs) {
      const option = el(doc, 'option', '', [graph.label]);
      option.value = graph.id;
      this.select.appendChild(option);
    }
    this.select.value = this.graphId;
    this.select.addEventListener('change', () => this.show(this.select.value));
    this.searchBox = el(doc, 'input', 'ipu-wb-search');
    this.searchBox.type = 'search';
    this.searchBox.placeholder = 'search ops and tensors';
    this.searchBox.addEventListener('input', () => this.search(this.searchBox.value));
    this.status = el(doc, 'span', 'ipu-wb-search-status');
    this.expandMatches = button(doc, 'expand to matches', 'ipu-wb-expand-matches', () => this.expandToMatches());
    this.canvas = el(doc, 'div', 'ipu-wb-canvas');
    const toolbar = el(doc, 'div', 'ipu-wb-toolbar', [
      el(doc, 'label', '', ['graph ', this.select]),
      button(doc, 'expand all', 'ipu-wb-expand-all', () => this.expandAll()),
      button(doc, 'collapse all', 'ipu-wb-collapse-all', () => this.collapseAll()),
      this.searchBox, this.expandMatches, this.status
    ]);
    this.node = el(doc, 'div', 'ipu-wb-graph-view', [toolbar, this.canvas]);
    this.redraw();
  }

  /** Shows `graphId` as the outermost graph. */
  show(graphId: string): void {
    this.graphId = graphId;
    this.drawLarge = false;
    this.select.value = graphId;
    this.redraw();
  }

  /** Expands or collapses the call op whose node key is `key`. */
  toggle(key: string): void {
    if (!this.expanded.delete(key)) {
      this.expanded.add(key);
    }
    this.redraw();
  }

  expandAll(): void {
    this.walkCalls(this.graphId, '', 0, () => true);
    this.redraw();
  }

  collapseAll(): void {
    this.expanded.clear();
    this.redraw();
  }

  /** Highlights ops and tensors whose name, id or type contains `query` (case-insensitive). */
  search(query: string): void {
    this.query = query.trim().toLowerCase();
    if (this.searchBox.value !== query) {
      this.searchBox.value = query;
    }
    this.highlight();
  }

  /** Expands every call op on the way to a match hidden in a collapsed call. */
  expandToMatches(): void {
    this.walkCalls(this.graphId, '', 0, callee => this.matchesBelow(callee, 0) > 0);
    this.redraw();
  }

  private walkCalls(graphId: string, path: string, depth: number, open: (callee: string) => boolean): void {
    if (depth >= MAX_DEPTH) {
      return;
    }
    for (const op of this.index.graphs.get(graphId)?.ops ?? []) {
      const key = nodeKey(path, op.id);
      const wanted = op.called_graphs.filter(open);
      if (wanted.length) {
        this.expanded.add(key);
        for (const callee of wanted) {
          this.walkCalls(callee, `${key}>${callee}`, depth + 1, open);
        }
      }
    }
  }

  private redraw(): void {
    clear(this.canvas);
    this.drawn = [];
    const nodes = this.nodeCount(this.graphId, '', 0);
    if (nodes > MAX_DRAWN_NODES && !this.drawLarge) {
      const label = this.index.graphs.get(this.graphId)?.label ?? this.graphId;
      this.canvas.appendChild(el(this.doc, 'div', 'ipu-wb-large', [
        `Graph ${label} has ${nodes.toLocaleString('en')} ops and tensors to draw, which can take the browser a while. `,
        button(this.doc, 'draw it', 'ipu-wb-draw-large', () => {
          this.drawLarge = true;
          this.redraw();
        })
      ]));
      this.highlight();
      return;
    }
    const layout = layoutGraph(this.index, this.graphId, this.expanded);
    const root = svg(this.doc, 'svg', { class: 'ipu-wb-graph-svg', width: layout.width, height: layout.height,
      viewBox: `0 0 ${layout.width} ${layout.height}` });
    root.appendChild(this.drawLayout(layout));
    this.canvas.appendChild(root);
    this.highlight();
  }

  private drawLayout(layout: GraphLayout): SVGElement {
    const group = svg(this.doc, 'g', { class: 'ipu-wb-graph', transform: `translate(${layout.x},${layout.y})` });
    const byKey = new Map(layout.nodes.map(n => [n.key, n]));
    for (const edge of layout.edges) {
      const from = byKey.get(edge.from);
      const to = byKey.get(edge.to);
      if (from && to) {
        group.appendChild(this.drawEdge(edge, from, to));
      }
    }
    for (const node of layout.nodes) {
      group.appendChild(this.drawNode(layout.graph, node));
    }
    return group;
  }

  private drawEdge(edge: LayoutEdge, from: LayoutNode, to: LayoutNode): SVGElement {
    const x1 = from.x + from.width / 2;
    const y1 = from.y + from.height;
    const x2 = to.x + to.width / 2;
    const y2 = to.y;
    const bend = Math.max(12, (y2 - y1) / 2);
    const path = svg(this.doc, 'path', {
      class: edge.tensor ? 'ipu-wb-edge' : 'ipu-wb-edge ipu-wb-edge-order',
      d: `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`
    }, [svg(this.doc, 'title', {}, [edge.tensor ? edge.tensor.id : `${from.label} before ${to.label}`])]);
    const tensor = edge.tensor;
    path.addEventListener('mouseenter', () =>
      tensor ? this.details.showTensor(tensor) : this.details.show('in_sequence', [`${from.label} runs before ${to.label}`]));
    return path;
  }

  private drawNode(graph: GraphRecord, node: LayoutNode): SVGElement {
    const op = node.op;
    const callable = op !== undefined && op.called_graphs.length > 0;
    const open = node.inner.length > 0;
    const classes = ['ipu-wb-node', `ipu-wb-${node.kind}`];
    if (callable) {
      classes.push('ipu-wb-callable', open ? 'ipu-wb-open' : 'ipu-wb-closed');
    }
    const group = svg(this.doc, 'g', { class: classes.join(' '), transform: `translate(${node.x},${node.y})`, 'data-key': node.key });
    if (op) {
      group.style.setProperty('--ipu-wb-ipu-fill', ipuColour(op.ipu));
    }
    const title = op ? `${op.type} ${op.name}` : node.tensor ? node.tensor.id : node.label;
    group.appendChild(svg(this.doc, 'title', {}, [title]));
    group.appendChild(svg(this.doc, 'rect', { class: 'ipu-wb-box', width: node.width, height: node.height, rx: node.kind === 'op' ? 4 : 12 }));
    const text = svg(this.doc, 'text', { class: 'ipu-wb-label', x: open ? 8 : node.width / 2, y: open ? 16 : node.height / 2 + 4,
      'text-anchor': open ? 'start' : 'middle' }, [shorten(node.label)]);
    group.appendChild(text);
    if (op) {
      const header = open ? text : group;
      header.addEventListener('mouseenter', () => this.details.showOp(this.index, graph.id, op));
      if (callable) {
        header.addEventListener('click', event => {
          event.stopPropagation();
          this.toggle(node.key);
        });
      }
      this.drawn.push({ element: group, op });
    } else if (node.tensor && node.kind !== 'output') {
      const tensor = node.tensor;
      group.addEventListener('mouseenter', () => this.details.showTensor(tensor));
      this.drawn.push({ element: group, tensor });
    }
    for (const inner of node.inner) {
      const frame = this.drawLayout(inner);
      frame.insertBefore(svg(this.doc, 'rect', { class: 'ipu-wb-frame', width: inner.width, height: inner.height, rx: 6 }), frame.firstChild);
      frame.appendChild(svg(this.doc, 'text', { class: 'ipu-wb-frame-label', x: 4, y: -4 }, [inner.title]));
      group.appendChild(frame);
    }
    return group;
  }

  private highlight(): void {
    const root = this.canvas.firstElementChild;
    root?.classList.toggle('ipu-wb-searching', this.query !== '');
    let shown = 0;
    for (const item of this.drawn) {
      const hit = this.query !== '' && (item.op ? this.opMatches(item.op) : item.tensor ? tensorMatches(item.tensor, this.query) : false);
      item.element.classList.toggle('ipu-wb-match', hit);
      shown += hit ? 1 : 0;
    }
    const hidden = this.query === '' ? 0 : this.hiddenMatches(this.graphId, '', 0);
    this.status.textContent = this.query === '' ? '' :
      `${shown} shown` + (hidden ? `, ${hidden} inside collapsed calls` : '');
    this.expandMatches.hidden = hidden === 0;
  }

  private opMatches(op: OpRecord): boolean {
    const q = this.query;
    return op.name.toLowerCase().includes(q) || op.type.toLowerCase().includes(q) || op.id.toLowerCase().includes(q);
  }

  /** About how many nodes the drawing of `graphId` has, with the calls expanded as they are now. */
  private nodeCount(graphId: string, path: string, depth: number): number {
    const graph = this.index.graphs.get(graphId);
    if (!graph || depth >= MAX_DEPTH) {
      return 0;
    }
    let count = graph.ops.length + graph.tensors.length;
    for (const op of graph.ops) {
      const key = nodeKey(path, op.id);
      if (op.called_graphs.length && this.expanded.has(key)) {
        for (const callee of op.called_graphs) {
          count += this.nodeCount(callee, `${key}>${callee}`, depth + 1);
        }
      }
    }
    return count;
  }

  /** Matches in graphs that collapsed call ops of the drawn view would show. */
  private hiddenMatches(graphId: string, path: string, depth: number): number {
    let count = 0;
    for (const op of this.index.graphs.get(graphId)?.ops ?? []) {
      const key = nodeKey(path, op.id);
      for (const callee of op.called_graphs) {
        if (depth + 1 >= MAX_DEPTH) {
          continue;
        }
        count += this.expanded.has(key) ? this.hiddenMatches(callee, `${key}>${callee}`, depth + 1) : this.matchesBelow(callee, depth + 1);
      }
    }
    return count;
  }

  /** Matching ops and source tensors in `graphId` and, expanded, in everything it calls. */
  private matchesBelow(graphId: string, depth: number): number {
    const graph = this.index.graphs.get(graphId);
    if (!graph || depth >= MAX_DEPTH) {
      return 0;
    }
    let count = graph.tensors.filter(t => t.producer === null && tensorMatches(t, this.query)).length;
    for (const op of graph.ops) {
      count += this.opMatches(op) ? 1 : 0;
      for (const callee of op.called_graphs) {
        count += this.matchesBelow(callee, depth + 1);
      }
    }
    return count;
  }
}

function tensorMatches(tensor: TensorRecord, query: string): boolean {
  return tensor.name.toLowerCase().includes(query) || tensor.id.toLowerCase().includes(query);
}

function shorten(label: string): string {
  return label.length > MAX_LABEL_CHARS ? `${label.slice(0, MAX_LABEL_CHARS - 1)}…` : label;
}
