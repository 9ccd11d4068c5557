/**
 * The "ipu-workbench/ir" document as the views read it. Its types are generated from the JSON schema
 * (workbench/export/ir.schema.json) at build time; `readDocument` checks a document against it.
 */
import { CallSiteRecord, GraphRecord, IrDocument, OpRecord, TensorRecord } from './generated/document.js';
import { formatBytes } from './visual.js';

export type {
  CallSiteRecord, GraphRecord, IpuLiveness, IrDocument, LivenessSection, OpRecord, StepRecord, TensorRecord
} from './generated/document.js';
export { DocumentError, readDocument, SCHEMA_NAME, SCHEMA_VERSION } from './document.js';

const VIEWS = ['model', 'graph', 'calls', 'memory'] as const;
export type ViewName = (typeof VIEWS)[number];

/** What the Python object asked to show first (the MIME bundle's metadata). */
export interface ViewOptions {
  view?: ViewName;
  graph?: string;
  device?: { kind: string; tile_bytes_per_ipu: number };
  /** why the document has no liveness section (a program too large for it in a display) */
  livenessLeftOut?: string;
  /** set on the first, small document of a big program: what it holds until the whole one replaces it */
  arriving?: string;
}

/** The well-formed fields of `value` (MIME metadata, which may come from anywhere) as view options. */
export function readOptions(value: unknown): ViewOptions {
  const options: ViewOptions = {};
  if (typeof value !== 'object' || value === null) {
    return options;
  }
  const given = value as Record<string, unknown>;
  if (VIEWS.includes(given.view as ViewName)) {
    options.view = given.view as ViewName;
  }
  if (typeof given.graph === 'string') {
    options.graph = given.graph;
  }
  const device = given.device as Record<string, unknown> | null | undefined;
  if (typeof device === 'object' && device !== null && typeof device.kind === 'string' &&
    typeof device.tile_bytes_per_ipu === 'number' && device.tile_bytes_per_ipu > 0) {
    options.device = { kind: device.kind, tile_bytes_per_ipu: device.tile_bytes_per_ipu };
  }
  if (typeof given.liveness_left_out === 'string') {
    options.livenessLeftOut = given.liveness_left_out;
  }
  if (typeof given.arriving === 'string') {
    options.arriving = given.arriving;
  }
  return options;
}

/** Lookup tables over one document. */
export class IrIndex {
  readonly graphs = new Map<string, GraphRecord>();
  readonly ops = new Map<string, OpRecord>();
  readonly tensors = new Map<string, Map<string, TensorRecord>>();
  private readonly sitesInGraph = new Map<string, CallSiteRecord[]>();
  private readonly sitesOfOp = new Map<string, CallSiteRecord[]>();

  constructor(readonly doc: IrDocument) {
    for (const site of doc.call_sites) {
      push(this.sitesInGraph, site.graph, site);
      push(this.sitesOfOp, site.op, site);
    }
    for (const graph of doc.graphs) {
      this.graphs.set(graph.id, graph);
      this.tensors.set(graph.id, new Map(graph.tensors.map(t => [t.id, t])));
      for (const op of graph.ops) {
        this.ops.set(op.id, op);
      }
    }
  }

  get main(): GraphRecord {
    return this.doc.graphs.find(g => g.is_main) ?? this.doc.graphs[0];
  }

  tensor(graph: string, id: string): TensorRecord | undefined {
    return this.tensors.get(graph)?.get(id);
  }

  callSitesOf(graph: string): CallSiteRecord[] {
    return this.sitesInGraph.get(graph) ?? [];
  }

  /** The call sites of one op: one per graph it calls (a conditional's then branch first). */
  callSitesOfOp(op: string): CallSiteRecord[] {
    return this.sitesOfOp.get(op) ?? [];
  }

  /** A graph's display name, or its id if the document has no such graph. */
  label(graph: string): string {
    return this.graphs.get(graph)?.label ?? graph;
  }
}

function push<T>(lists: Map<string, T[]>, key: string, item: T): void {
  const list = lists.get(key);
  if (list) {
    list.push(item);
  } else {
    lists.set(key, [item]);
  }
}

export function describeTensor(tensor: TensorRecord): string {
  return `${tensor.id}: ${tensor.dtype}[${tensor.shape.join(', ')}] (${tensor.kind}, ${formatBytes(tensor.nbytes)})`;
}
