/**
 * The grouped model view: one group of one graph at a time, its child groups drawn as labelled boxes
 * with their op counts, its ops as Netron-like boxes (type, distinguishing attribute, folded weights).
 * Clicking a group opens it, clicking a call opens the graph it calls, the breadcrumb goes back up.
 * Every picture was laid out once by the Python side (the document's `grouped` section), the same one
 * the notebook draws: the page only draws it, so a graph of any size opens at once.
 */
import { Details } from './details.js';
import { button, clear, el, svg } from './dom.js';
import type { GroupedGraph, GroupPicture, PictureBox } from './generated/document.js';
import { IrIndex } from './model.js';
import { countOf, ipuColour } from './visual.js';

const LINE_HEIGHT = 15;
const PAD_Y = 6;
const PAD_X = 8;
const ARROW_ID = 'ipu-wb-arrow';

export class GroupView {
  readonly node: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly crumbs: HTMLElement;
  private readonly canvas: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly graphs = new Map<string, GroupedGraph>();
  private readonly pictures = new Map<string, GroupPicture>();
  private current: GroupPicture | undefined;

  constructor(private readonly doc: Document, private readonly index: IrIndex, private readonly details: Details,
    graphId: string) {
    for (const graph of index.doc.grouped?.graphs ?? []) {
      this.graphs.set(graph.graph, graph);
      for (const picture of graph.groups) {
        this.pictures.set(picture.id, picture);
      }
    }
    this.select = el(doc, 'select', 'ipu-wb-group-select');
    for (const graph of index.doc.graphs) {
      const option = el(doc, 'option', '', [graph.label]);
      option.value = graph.id;
      this.select.appendChild(option);
    }
    this.select.addEventListener('change', () => this.showGraph(this.select.value));
    this.crumbs = el(doc, 'span', 'ipu-wb-crumbs');
    this.canvas = el(doc, 'div', 'ipu-wb-group-canvas');
    this.legend = el(doc, 'div', 'ipu-wb-legend');
    this.node = el(doc, 'div', 'ipu-wb-group-view', [
      el(doc, 'div', 'ipu-wb-toolbar', [el(doc, 'label', '', ['graph ', this.select]), this.crumbs]),
      this.canvas, this.legend
    ]);
    this.showGraph(index.graphs.has(graphId) ? graphId : index.main.id);
  }

  /** Whether the document has grouped pictures to show. */
  get available(): boolean {
    return this.graphs.size > 0;
  }

  /** Opens graph `graphId` at its top level. */
  showGraph(graphId: string): void {
    const graph = this.graphs.get(graphId);
    this.select.value = graphId;
    if (graph === undefined) {
      this.current = undefined;
      clear(this.canvas);
      this.canvas.appendChild(el(this.doc, 'div', 'ipu-wb-error', ['This document has no grouped picture of this graph.']));
      return;
    }
    this.open(graph.root);
  }

  /** Opens the group `groupId` (of any graph). */
  open(groupId: string): void {
    const picture = this.pictures.get(groupId);
    if (picture === undefined) {
      return;
    }
    this.current = picture;
    this.drawCrumbs(picture);
    clear(this.canvas);
    this.canvas.appendChild(this.draw(picture));
    this.canvas.scrollTop = 0;
    this.canvas.scrollLeft = 0;
    this.drawLegend(picture);
  }

  /** The group on screen. */
  get shown(): GroupPicture | undefined {
    return this.current;
  }

  private drawCrumbs(picture: GroupPicture): void {
    const chain: GroupPicture[] = [];
    for (let at: GroupPicture | undefined = picture; at !== undefined; at = at.parent === null ? undefined : this.pictures.get(at.parent)) {
      chain.unshift(at);
    }
    clear(this.crumbs);
    chain.forEach((group, i) => {
      if (i > 0) {
        this.crumbs.appendChild(el(this.doc, 'span', 'ipu-wb-crumb-sep', [' › ']));
      }
      const label = `${group.label} (${countOf(group.ops, 'op')})`;
      this.crumbs.appendChild(i === chain.length - 1 ? el(this.doc, 'span', 'ipu-wb-crumb ipu-wb-crumb-here', [label])
        : button(this.doc, label, 'ipu-wb-crumb', () => this.open(group.id)));
    });
  }

  private draw(picture: GroupPicture): SVGElement {
    const root = svg(this.doc, 'svg', { class: 'ipu-wb-group-svg', width: picture.width, height: picture.height,
      viewBox: `0 0 ${picture.width} ${picture.height}`, 'data-group': picture.id });
    root.appendChild(svg(this.doc, 'defs', {}, [svg(this.doc, 'marker', { id: ARROW_ID, viewBox: '0 0 10 10', refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, [svg(this.doc, 'path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'ipu-wb-arrowhead' })])]));
    const edges = svg(this.doc, 'g', { class: 'ipu-wb-edges' });
    for (const edge of picture.edges) {
      const d = edge.points.map(([x, y], i) => `${i ? 'L' : 'M'} ${x} ${y}`).join(' ');
      const from = picture.nodes[edge.from]?.lines[0] ?? '';
      const to = picture.nodes[edge.to]?.lines[0] ?? '';
      const title = `${edge.label}\n${from} → ${to}`;
      edges.appendChild(svg(this.doc, 'g', { class: 'ipu-wb-group-edge' }, [
        svg(this.doc, 'path', { class: 'ipu-wb-edge-hit', d }, [svg(this.doc, 'title', {}, [title])]),
        svg(this.doc, 'path', { class: 'ipu-wb-edge', d, 'marker-end': `url(#${ARROW_ID})` }, [svg(this.doc, 'title', {}, [title])])
      ]));
    }
    root.appendChild(edges);
    for (const box of picture.nodes) {
      root.appendChild(this.drawBox(box));
    }
    return root;
  }

  private drawBox(box: PictureBox): SVGElement {
    const classes = ['ipu-wb-pbox', `ipu-wb-pbox-${box.kind}`];
    const group = svg(this.doc, 'g', { class: classes.join(' '), transform: `translate(${box.x - box.w / 2},${box.y})`,
      'data-key': box.key });
    group.appendChild(svg(this.doc, 'title', {}, [this.title(box)]));
    group.appendChild(svg(this.doc, 'rect', { class: 'ipu-wb-box', width: box.w, height: box.h, rx: box.kind === 'group' ? 8 : 3,
      style: box.kind === 'group' ? '' : `fill: ${ipuColour(box.ipu)}` }));
    box.lines.forEach((line, i) => {
      group.appendChild(svg(this.doc, 'text', { class: i === 0 ? 'ipu-wb-label ipu-wb-pbox-title' : 'ipu-wb-label ipu-wb-pbox-line',
        x: PAD_X, y: PAD_Y + LINE_HEIGHT * (i + 1) - 4 }, [line]));
    });
    group.addEventListener('mouseenter', () => this.describe(box));
    group.addEventListener('click', () => this.activate(box));
    return group;
  }

  private title(box: PictureBox): string {
    if (box.kind === 'group') {
      return `${box.lines.join('\n')}\nclick to open`;
    }
    const op = this.index.ops.get(box.key);
    const name = op ? op.name : box.key;
    return box.kind === 'call' ? `${name}\nclick to open the called graph` : name;
  }

  private describe(box: PictureBox): void {
    const op = this.index.ops.get(box.key);
    if (op !== undefined) {
      const graph = [...this.index.graphs.values()].find(g => g.ops.includes(op));
      this.details.showOp(this.index, graph?.id ?? '', op);
    } else {
      this.details.show(box.lines[0].replace(/^▸ /, ''), [...box.lines.slice(1), 'click to open']);
    }
  }

  private activate(box: PictureBox): void {
    if (box.kind === 'group') {
      this.open(box.key);
    } else if (box.kind === 'call' && box.calls?.length) {
      this.showGraph(box.calls[0]);
    }
  }

  private drawLegend(picture: GroupPicture): void {
    clear(this.legend);
    const ipus = [...new Set(picture.nodes.filter(n => n.kind !== 'group').map(n => n.ipu))].sort((a, b) => a - b);
    const swatch = (className: string) => el(this.doc, 'span', `ipu-wb-swatch ${className}`);
    const items: HTMLElement[] = [];
    for (const ipu of ipus) {
      const mark = swatch('ipu-wb-swatch-op');
      mark.style.background = ipuColour(ipu);
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [mark, `op on IPU ${ipu}: type, attribute, weights ⟨shape⟩`]));
    }
    if (picture.nodes.some(n => n.kind === 'group')) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [swatch('ipu-wb-swatch-group'), '▸ group of ops: click to open']));
    }
    if (picture.nodes.some(n => n.kind === 'call')) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [swatch('ipu-wb-swatch-call'), 'call: click to open the graph it calls']));
    }
    if (picture.edges.length) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', ['→ tensor (point at it for its name and shape)']));
    }
    this.legend.append(...items);
  }
}
