/**
 * Checks a schema-valid document for what JSON Schema cannot say: ids are unique, every id the views
 * follow names something in the document, indices are in range, and the liveness series have one
 * entry per step. Returns the first problem as a sentence, or null.
 */
import { GraphRecord, IrDocument, LivenessSection } from './generated/document.js';

class Problem extends Error {}

function fail(message: string): never {
  throw new Problem(message);
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

export function checkReferences(document: IrDocument): string | null {
  try {
    const ops = checkGraphs(document.graphs);
    document.call_sites.forEach((site, i) => {
      const where = `call_sites[${i}]`;
      if (ops.get(site.op)?.graph !== site.graph) {
        fail(`${where}.op ${JSON.stringify(site.op)} is not an op of graph ${JSON.stringify(site.graph)}`);
      }
      if (!ops.get(site.op)!.calls.includes(site.callee)) {
        fail(`${where}.callee ${JSON.stringify(site.callee)} is not a graph that op ${JSON.stringify(site.op)} calls`);
      }
    });
    if (document.liveness) {
      checkLiveness(document.liveness, ops);
    }
    return null;
  } catch (error) {
    if (error instanceof Problem) {
      return error.message;
    }
    throw error;
  }
}

interface OpPlace {
  graph: string;
  calls: string[];
}

/** Every op of the document by id, with its graph and callees. */
function checkGraphs(graphs: GraphRecord[]): Map<string, OpPlace> {
  const graphIds = new Set<string>();
  const ops = new Map<string, OpPlace>();
  graphs.forEach((graph, g) => {
    if (graphIds.has(graph.id)) {
      fail(`graphs[${g}].id ${JSON.stringify(graph.id)} is the id of an earlier graph`);
    }
    graphIds.add(graph.id);
    graph.ops.forEach((op, o) => {
      if (ops.has(op.id)) {
        fail(`graphs[${g}].ops[${o}].id ${JSON.stringify(op.id)} is the id of an earlier op`);
      }
      ops.set(op.id, { graph: graph.id, calls: op.called_graphs });
    });
  });
  graphs.forEach((graph, g) => {
    const tensors = new Set<string>();
    const tensor = (where: string, id: string) => {
      if (!tensors.has(id)) {
        fail(`${where} ${JSON.stringify(id)} is not a tensor of graph ${JSON.stringify(graph.id)}`);
      }
    };
    graph.tensors.forEach((t, i) => {
      if (tensors.has(t.id)) {
        fail(`graphs[${g}].tensors[${i}].id ${JSON.stringify(t.id)} is the id of an earlier tensor`);
      }
      tensors.add(t.id);
      if (t.producer !== null && !ops.has(t.producer)) {
        fail(`graphs[${g}].tensors[${i}].producer ${JSON.stringify(t.producer)} is not an op`);
      }
    });
    graph.inputs.forEach((id, i) => tensor(`graphs[${g}].inputs[${i}]`, id));
    graph.outputs.forEach((id, i) => tensor(`graphs[${g}].outputs[${i}]`, id));
    graph.ops.forEach((op, o) => {
      const where = `graphs[${g}].ops[${o}]`;
      op.inputs.forEach((id, i) => tensor(`${where}.inputs[${i}]`, id));
      op.outputs.forEach((id, i) => tensor(`${where}.outputs[${i}]`, id));
      op.called_graphs.forEach((id, i) => {
        if (!graphIds.has(id)) {
          fail(`${where}.called_graphs[${i}] ${JSON.stringify(id)} is not a graph`);
        }
      });
      op.after.forEach((id, i) => {
        if (!ops.has(id)) {
          fail(`${where}.after[${i}] ${JSON.stringify(id)} is not an op`);
        }
      });
      op.modified.forEach((index, i) => {
        if (index >= op.inputs.length) {
          fail(`${where}.modified[${i}] is ${index}, but the op has ${count(op.inputs.length, 'input')}`);
        }
      });
      op.aliases.forEach(([output, input], i) => {
        if (output >= op.outputs.length || input >= op.inputs.length) {
          fail(`${where}.aliases[${i}] is [${output}, ${input}], but the op has ` +
            `${count(op.outputs.length, 'output')} and ${count(op.inputs.length, 'input')}`);
        }
      });
    });
  });
  return ops;
}

function checkLiveness(liveness: LivenessSection, ops: Map<string, OpPlace>): void {
  const steps = liveness.steps.length;
  // A plain loop: a million steps must not cost a closure each.
  for (let i = 0; i < steps; i++) {
    const step = liveness.steps[i];
    const place = ops.get(step.op);
    if (place === undefined) {
      fail(`liveness.steps[${i}].op ${JSON.stringify(step.op)} is not an op`);
    }
    if (place.graph !== step.graph) {
      fail(`liveness.steps[${i}].graph is ${JSON.stringify(step.graph)}, but op ${JSON.stringify(step.op)} is in ` +
        `${JSON.stringify(place.graph)}`);
    }
  }
  const seen = new Set<number>();
  liveness.ipus.forEach((ipu, i) => {
    const where = `liveness.ipus[${i}]`;
    if (seen.has(ipu.ipu)) {
      fail(`${where}.ipu ${ipu.ipu} is listed twice`);
    }
    seen.add(ipu.ipu);
    for (const series of ['intermediates', 'code'] as const) {
      if (ipu[series].length !== steps) {
        fail(`${where}.${series} has ${ipu[series].length} entries for ${steps} steps`);
      }
    }
    if (steps > 0 ? ipu.peak_step === null || ipu.peak_step >= steps : ipu.peak_step !== null) {
      fail(`${where}.peak_step is ${ipu.peak_step}, for ${steps} steps`);
    }
  });
}
