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
      lines.push(`${key} = ${preview(value)}`);
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

/**
 * `value` as JSON text of at most MAX_VALUE_CHARS characters, written without recursion and stopping once
 * long enough: an attribute nested thousands of levels deep (or just huge) costs no more than a short one.
 */
export function preview(value: unknown): string {
  type Piece = { text: string } | { value: unknown };
  let text = '';
  const stack: Piece[] = [{ value }];
  while (stack.length && text.length < MAX_VALUE_CHARS) {
    const piece = stack.pop()!;
    if ('text' in piece) {
      text += piece.text;
      continue;
    }
    const item = piece.value;
    if (typeof item !== 'object' || item === null) {
      text += JSON.stringify(item) ?? String(item);
      continue;
    }
    const isList = Array.isArray(item);
    const entries = isList ? (item as unknown[]).map(v => ['', v] as const) : Object.entries(item);
    text += isList ? '[' : '{';
    stack.push({ text: isList ? ']' : '}' });
    for (let i = entries.length - 1; i >= 0; i--) {
      stack.push({ value: entries[i][1] });
      if (!isList) {
        stack.push({ text: `${JSON.stringify(entries[i][0])}:` });
      }
      if (i > 0) {
        stack.push({ text: ',' });
      }
    }
  }
  return shorten(stack.length ? `${text}…` : text);
}

function shorten(text: string): string {
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}
