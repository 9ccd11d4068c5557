/**
 * The "ipu-workbench/ir" document as the views read it. Its types are generated from the JSON schema
 * (workbench/export/ir.schema.json) at build time; `readDocument` checks a document against it.
 */
import { GraphRecord, IrDocument, CallSiteRecord, OpRecord, TensorRecord } from './generated/document.js';

export type {
  CallSiteRecord, GraphRecord, IpuLiveness, IrDocument, LivenessSection, OpRecord, StepRecord, TensorRecord
} from './generated/document.js';
export { DocumentError, readDocument, SCHEMA_NAME, SCHEMA_VERSION } from './document.js';

const VIEWS = ['graph', 'calls', 'memory'] as const;
export type ViewName = (typeof VIEWS)[number];

/** What the Python object asked to show first (the MIME bundle's metadata). */
export interface ViewOptions {
  view?: ViewName;
  graph?: string;
  device?: { kind: string; tile_bytes_per_ipu: number };
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
  return options;
}

/** Lookup tables over one document. */
export class IrIndex {
  readonly graphs = new Map<string, GraphRecord>();
  readonly ops = new Map<string, OpRecord>();
  readonly tensors = new Map<string, Map<string, TensorRecord>>();
  private readonly sites = new Map<string, CallSiteRecord[]>();

  constructor(readonly doc: IrDocument) {
    for (const site of doc.call_sites) {
      const list = this.sites.get(site.graph);
      list ? list.push(site) : this.sites.set(site.graph, [site]);
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
    return this.sites.get(graph) ?? [];
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
