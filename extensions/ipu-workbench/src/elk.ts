/**
 * ELK (elkjs, the JavaScript build of Eclipse's layout kernel) for the graph view. In a browser it runs in
 * a Web Worker started from the bundled worker source, so a big graph never freezes the page and a layout
 * that takes too long can be stopped; where there are no workers (Node, jsdom) it runs in the page.
 * One engine serves every view on the page; its code is loaded the first time a graph is laid out.
 */
import ELK, { ElkNode } from 'elkjs/lib/elk-api.js';

/** Raised when ELK took longer than it was given; the engine is stopped and the next layout starts a fresh one. */
export class LayoutTimeout extends Error {
  constructor(readonly seconds: number) {
    super(`the layout took longer than ${seconds} s`);
    this.name = 'LayoutTimeout';
  }
}

interface Engine {
  elk: InstanceType<typeof ELK>;
  /** Whether it runs in a worker, which can be stopped; an in-page layout runs to its end. */
  inWorker: boolean;
}

let engine: Promise<Engine> | undefined;
/** The worker's source as a blob URL, made once: a stopped worker's successor starts from it too. */
let workerUrl: string | undefined;

function startEngine(): Promise<Engine> {
  return import('./generated/elkworker.js').then(({ ELK_WORKER_SOURCE }) => {
    const scope = globalThis as { Worker?: typeof Worker; Blob?: typeof Blob; URL?: typeof URL };
    if (typeof scope.Worker === 'function' && typeof scope.Blob === 'function' && typeof scope.URL?.createObjectURL === 'function') {
      const url = (workerUrl ??= scope.URL.createObjectURL(new scope.Blob([ELK_WORKER_SOURCE], { type: 'text/javascript' })));
      return { elk: new ELK({ algorithms: ['layered'], workerFactory: () => new scope.Worker!(url) }), inWorker: true };
    }
    // The worker source defines ELK's in-page worker when it sees a CommonJS `module`.
    const module = { exports: {} as { Worker?: new (url?: string) => Worker } };
    new Function('module', 'exports', ELK_WORKER_SOURCE)(module, module.exports);
    const InPage = module.exports.Worker!;
    return { elk: new ELK({ algorithms: ['layered'], workerFactory: url => new InPage(url) }), inWorker: false };
  });
}

/**
 * Lays out `graph` with ELK. In a worker, gives up after `seconds` with LayoutTimeout and stops that
 * worker (layouts still queued in it give up too, at their own time limits).
 */
export async function elkLayout(graph: ElkNode, seconds: number): Promise<ElkNode> {
  const started = (engine ??= startEngine());
  const { elk, inWorker } = await started.catch(error => {
    if (engine === started) {
      engine = undefined;
    }
    throw error;
  });
  if (!inWorker) {
    return elk.layout(graph);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (engine === started) {
        engine = undefined;
      }
      elk.terminateWorker();
      reject(new LayoutTimeout(seconds));
    }, seconds * 1000);
  });
  try {
    return await Promise.race([elk.layout(graph), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
