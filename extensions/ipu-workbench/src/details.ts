/** The panel that shows details of whatever the pointer is over, as plain text lines. */
import { clear, el } from './dom.js';
import { describeTensor, IrIndex, OpRecord, TensorRecord } from './model.js';

const MAX_VALUE_CHARS = 160;

export class Details {
  readonly node: HTMLElement;

  constructor(private readonly doc: Document, private readonly hint: string) {
    this.node = el(doc, 'div', 'ipu-wb-details');
    this.show(hint, []);
  }

  show(title: string, lines: string[]): void {
    clear(this.node);
    this.node.appendChild(el(this.doc, 'div', 'ipu-wb-details-title', [title]));
    for (const line of lines) {
      this.node.appendChild(el(this.doc, 'div', 'ipu-wb-details-line', [line]));
    }
  }

  reset(): void {
    this.show(this.hint, []);
  }

  showOp(index: IrIndex, graph: string, op: OpRecord): void {
    const tensorLine = (id: string) => {
      const tensor = index.tensor(graph, id);
      return tensor ? describeTensor(tensor) : id;
    };
    const lines = [`id: ${op.id}`, `ipu ${op.ipu}, ${op.tile_set} tiles`];
    op.inputs.forEach((id, i) => lines.push(`in ${i}: ${tensorLine(id)}`));
    op.outputs.forEach((id, i) => lines.push(`out ${i}: ${tensorLine(id)}`));
    for (const [key, value] of Object.entries(op.attrs)) {
      lines.push(`${key} = ${shorten(JSON.stringify(value) ?? String(value))}`);
    }
    if (op.called_graphs.length) {
      lines.push(`calls ${op.called_graphs.map(id => index.graphs.get(id)?.label ?? id).join(', ')}`);
    }
    this.show(`${op.type} ${op.name}`, lines);
  }

  showTensor(tensor: TensorRecord): void {
    this.show(`tensor ${tensor.name}`, [describeTensor(tensor), `ipu ${tensor.ipu}`,
      tensor.producer === null ? 'no producer' : `produced by ${tensor.producer}`]);
  }
}

function shorten(text: string): string {
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}
