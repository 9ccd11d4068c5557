/**
 * The "ipu-workbench/ir" JSON document (workbench/export/SCHEMA.md), as the views read it.
 * Only the fields the views use are typed; unknown fields are ignored.
 */

export const SCHEMA_NAME = 'ipu-workbench/ir';
export const SCHEMA_VERSION = 1;

export interface OpRecord {
  id: string;
  name: string;
  type: string;
  ipu: number;
  tile_set: string;
  inputs: string[];
  outputs: string[];
  attrs: Record<string, unknown>;
  called_graphs: string[];
  after: string[];
}

export interface TensorRecord {
  id: string;
  name: string;
  kind: string;
  shape: number[];
  dtype: string;
  ipu: number;
  nbytes: number;
  producer: string | null;
}

export interface GraphRecord {
  id: string;
  label: string;
  is_main: boolean;
  inputs: string[];
  outputs: string[];
  ops: OpRecord[];
  tensors: TensorRecord[];
}

export interface CallSiteRecord {
  graph: string;
  op: string;
  callee: string;
  kind: string;
  repeat_count: number | null;
}

export interface IpuLiveness {
  ipu: number;
  variables: number;
  constants: number;
  intermediates: number[];
  code: number[];
  peak_step: number | null;
  peak_bytes: number;
}

export interface StepRecord {
  op: string;
  graph: string;
  depth: number;
}

export interface LivenessSection {
  version: number;
  error: string | null;
  steps: StepRecord[];
  ipus: IpuLiveness[];
}

export interface IrDocument {
  schema: string;
  version: number;
  ir: { id: number; replication_factor: number; num_host_transfers: number };
  graphs: GraphRecord[];
  call_sites: CallSiteRecord[];
  liveness?: LivenessSection | null;
}

/** What the Python object asked to show first (the MIME bundle's metadata). */
export interface ViewOptions {
  view?: 'graph' | 'calls' | 'memory';
  graph?: string;
  device?: { kind: string; tile_bytes_per_ipu: number };
}

/** The document in `value` (an object, or its JSON text), checked against the schema it claims. */
export function readDocument(value: unknown): IrDocument {
  const data = typeof value === 'string' ? JSON.parse(value) : value;
  if (typeof data !== 'object' || data === null) {
    throw new Error('expected an "ipu-workbench/ir" JSON object');
  }
  const doc = data as Partial<IrDocument>;
  if (doc.schema !== SCHEMA_NAME) {
    throw new Error(`expected schema "${SCHEMA_NAME}", got ${JSON.stringify(doc.schema)}`);
  }
  if (doc.version !== SCHEMA_VERSION) {
    throw new Error(`this viewer reads version ${SCHEMA_VERSION} of "${SCHEMA_NAME}", got version ${JSON.stringify(doc.version)}`);
  }
  if (!Array.isArray(doc.graphs) || !Array.isArray(doc.call_sites)) {
    throw new Error('the document has no "graphs" or "call_sites" list');
  }
  return doc as IrDocument;
}

/** Lookup tables over one document. */
export class IrIndex {
  readonly graphs = new Map<string, GraphRecord>();
  readonly ops = new Map<string, OpRecord>();
  readonly tensors = new Map<string, Map<string, TensorRecord>>();

  constructor(readonly doc: IrDocument) {
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
    return this.doc.call_sites.filter(site => site.graph === graph);
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function describeTensor(tensor: TensorRecord): string {
  return `${tensor.id}: ${tensor.dtype}[${tensor.shape.join(', ')}] (${tensor.kind}, ${formatBytes(tensor.nbytes)})`;
}
